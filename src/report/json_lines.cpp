#include "report/json_lines.hpp"

namespace rateline::report {

JsonLines::JsonLines(const std::string& path) : out_(path, "JSON file") {}

void JsonLines::write(const nlohmann::json& record) { out_.write(record.dump() + "\n", true); }

std::string JsonLines::finish() { return out_.commit(); }

}  // namespace rateline::report
