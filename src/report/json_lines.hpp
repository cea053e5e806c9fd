// JSON-lines output (one object per line, schema in README "Output").
// The file is opened at start, so an interrupted run still has somewhere to
// write its final record; every line is flushed as it is written.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace rateline::report {

class JsonLines {
 public:
  JsonLines() = default;
  // "" = disabled, "-" = stdout. Throws SetupError if the file cannot be created.
  explicit JsonLines(const std::string& path);
  ~JsonLines();
  JsonLines(const JsonLines&) = delete;
  JsonLines& operator=(const JsonLines&) = delete;

  bool enabled() const { return f_ != nullptr; }
  void write(const nlohmann::json& record);

 private:
  std::FILE* f_ = nullptr;
  bool owned_ = false;
};

}  // namespace rateline::report
