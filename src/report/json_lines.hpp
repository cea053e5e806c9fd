// JSON-lines output (one object per line, schema in README "Output").
// The output is opened at start, so an interrupted run still has somewhere to
// write its final record. Every line is flushed as it is written: to stdout
// ("-") or a pipe, a reader sees each record as it comes. A regular file is
// written beside its path and appears there, whole, only at finish()
// (output_file.hpp): a crash leaves the old file, never half a run; whoever
// wants the records live asks for "-".
//
// The same progress and result records can go to a CSV file as well
// (csv_rows.hpp): one sink, so the two never disagree.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "report/csv_rows.hpp"
#include "report/output_file.hpp"

namespace rateline::report {

class JsonLines {
 public:
  JsonLines() = default;
  // "" = disabled, "-" = stdout, for each. Throws SetupError if a file cannot be created.
  explicit JsonLines(const std::string& path, const std::string& csv_path = "");

  bool enabled() const { return out_.is_open(); }
  void write(const nlohmann::json& record);
  // A field every record written from now on carries (a port set's
  // "device": which port a record is about); none after clear_context().
  void set_context(const std::string& key, const std::string& value) { context_ = {{key, value}}; }
  void clear_context() { context_ = nullptr; }
  // Ends the output; "" or the run's first write error ("Couldn't write JSON file PATH: <errno text>"),
  // for the caller to print after its report. Without it (an exception) a regular file is left as it was.
  std::string finish();

 private:
  OutputFile out_;
  CsvRows csv_;
  nlohmann::json context_;
};

}  // namespace rateline::report
