#include "report/csv_rows.hpp"

#include <algorithm>

namespace rateline::report {

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

namespace {

std::string scalar_text(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();  // numbers as JSON writes them: the CSV and JSON values are the same text
}

void flatten_into(const nlohmann::json& obj, const std::string& prefix,
                  std::vector<std::pair<std::string, std::string>>& out) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) {
      flatten_into(*it, key, out);
    } else if (!it->is_array()) {
      out.emplace_back(key, scalar_text(*it));
    }
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> flatten_record(const nlohmann::json& record) {
  std::vector<std::pair<std::string, std::string>> out;
  if (record.is_object()) flatten_into(record, "", out);
  return out;
}

CsvRows::CsvRows(const std::string& path) : out_(path, "CSV file") {}

void CsvRows::add(const nlohmann::json& record) {
  if (!enabled()) return;
  auto row = flatten_record(record);
  for (const auto& [key, value] : row)
    if (std::find(columns_.begin(), columns_.end(), key) == columns_.end())
      columns_.insert(key == "type" ? columns_.begin() : columns_.end(), key);  // what a row is, first
  rows_.push_back(std::move(row));
}

std::string CsvRows::text() const {
  std::string s;
  for (size_t i = 0; i < columns_.size(); ++i) s += (i ? "," : "") + csv_escape(columns_[i]);
  s += "\n";
  for (const auto& row : rows_) {
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (i) s += ",";
      const auto it = std::find_if(row.begin(), row.end(), [&](const auto& kv) { return kv.first == columns_[i]; });
      if (it != row.end()) s += csv_escape(it->second);
    }
    s += "\n";
  }
  return s;
}

std::string CsvRows::finish() {
  if (!enabled()) return "";
  out_.write(text(), true);
  return out_.commit();
}

}  // namespace rateline::report
