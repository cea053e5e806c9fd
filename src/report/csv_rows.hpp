// CSV of a run's records (pktgen and rx --csv): one row per record given,
// the progress intervals and the result. The columns are the records' JSON
// field names, nested objects joined with '.' ("latency.p50_us"), in the
// order first seen; a row leaves blank what its record lacks. Lists (per
// stream, per sender) stay in the JSON only: one row per record. The
// "type" column comes first; the rest follow the JSON's (sorted) key order.
//
// The header needs every record's fields, so the rows are kept and the file
// is written whole at finish() (output_file.hpp: a regular file appears
// complete or not at all), also on Ctrl-C. A progress row per second is a
// few hundred bytes: a day's run keeps ~30 MB.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/output_file.hpp"

namespace rateline::report {

// A field as CSV text: quoted when it holds a comma, quote or line break.
std::string csv_escape(const std::string& s);

// The record's scalar fields, nested objects flattened with '.'; arrays left out.
std::vector<std::pair<std::string, std::string>> flatten_record(const nlohmann::json& record);

class CsvRows {
 public:
  CsvRows() = default;
  // "" = disabled, "-" = stdout. Throws SetupError if the file cannot be created.
  explicit CsvRows(const std::string& path);

  bool enabled() const { return out_.is_open(); }
  void add(const nlohmann::json& record);
  // Writes the header and every row; "" or the first write error.
  std::string finish();
  // The text finish() writes (for tests).
  std::string text() const;

 private:
  OutputFile out_;
  std::vector<std::string> columns_;
  std::vector<std::vector<std::pair<std::string, std::string>>> rows_;
};

}  // namespace rateline::report
