#include "report/json_lines.hpp"

#include <cerrno>

#include "util/errors.hpp"

namespace rateline::report {

JsonLines::JsonLines(const std::string& path) {
  if (path.empty()) return;
  if (path == "-") {
    f_ = stdout;
    return;
  }
  f_ = std::fopen(path.c_str(), "w");
  if (!f_) throw SetupError("Couldn't create JSON file " + path + ": " + errno_text(errno));
  owned_ = true;
}

JsonLines::~JsonLines() {
  if (owned_ && f_) std::fclose(f_);
}

void JsonLines::write(const nlohmann::json& record) {
  if (!f_) return;
  const std::string line = record.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
}

}  // namespace rateline::report
