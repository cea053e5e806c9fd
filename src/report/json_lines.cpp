#include "report/json_lines.hpp"

namespace rateline::report {

JsonLines::JsonLines(const std::string& path, const std::string& csv_path) : out_(path, "JSON file"), csv_(csv_path) {}

void JsonLines::write(const nlohmann::json& given) {
  nlohmann::json with_context;
  if (context_.is_object()) {
    with_context = given;
    with_context.update(context_);
  }
  const nlohmann::json& record = context_.is_object() ? with_context : given;
  out_.write(record.dump() + "\n", true);
  if (csv_.enabled()) {
    const auto type = record.find("type");
    if (type != record.end() && (*type == "progress" || *type == "result")) csv_.add(record);
  }
}

std::string JsonLines::finish() {
  const std::string json_error = out_.commit();
  const std::string csv_error = csv_.finish();
  return json_error.empty() ? csv_error : json_error;
}

}  // namespace rateline::report
