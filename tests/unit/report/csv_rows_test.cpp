// CSV of the run records: columns are the JSON field names (nested joined
// with '.'), values are JSON's own text, a row leaves blank what it lacks.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "report/csv_rows.hpp"
#include "report/json_lines.hpp"

namespace rateline::report {
namespace {

TEST(CsvRows, FlattensNestedObjectsAndLeavesListsOut) {
  const nlohmann::json r = {{"type", "result"}, {"sent", 12}, {"latency", {{"p50_us", 1.5}, {"max_us", nullptr}}},
                            {"streams", nlohmann::json::array({1, 2})}, {"ok", true}};
  const auto flat = flatten_record(r);
  std::map<std::string, std::string> m(flat.begin(), flat.end());
  EXPECT_EQ(m.size(), 5u);
  EXPECT_EQ(m["sent"], "12");
  EXPECT_EQ(m["latency.p50_us"], "1.5");
  EXPECT_EQ(m["latency.max_us"], "");  // null: blank
  EXPECT_EQ(m["ok"], "true");
  EXPECT_EQ(m.count("streams"), 0u);
}

TEST(CsvRows, HeaderIsTheUnionInFirstSeenOrderAndRowsLineUp) {
  CsvRows csv("/dev/null");
  csv.add({{"type", "progress"}, {"t_s", 1.0}, {"sent", 5}});
  csv.add({{"type", "result"}, {"sent", 9}, {"note", "a,b \"c\""}});
  // nlohmann::json keeps keys sorted; "type" is put first.
  EXPECT_EQ(csv.text(), "type,sent,t_s,note\nprogress,5,1.0,\nresult,9,,\"a,b \"\"c\"\"\"\n");
}

TEST(CsvRows, EscapesOnlyWhatNeedsIt) {
  EXPECT_EQ(csv_escape("plain"), "plain");
  EXPECT_EQ(csv_escape("a\nb"), "\"a\nb\"");
  EXPECT_EQ(csv_escape("q\""), "\"q\"\"\"");
}

TEST(JsonLines, CsvGetsProgressAndResultRecordsOnly) {
  const std::string path = testing::TempDir() + "/rateline_csv_rows_test.csv";
  {
    JsonLines sink("", path);
    sink.write({{"type", "start"}, {"tool", "rx"}});
    sink.write({{"type", "progress"}, {"received", 3}});
    sink.write({{"type", "result"}, {"received", 4}});
    EXPECT_EQ(sink.finish(), "");
  }
  std::FILE* f = std::fopen(path.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char buf[256] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::remove(path.c_str());
  EXPECT_EQ(std::string(buf, n), "type,received\nprogress,3\nresult,4\n");
}

}  // namespace
}  // namespace rateline::report
