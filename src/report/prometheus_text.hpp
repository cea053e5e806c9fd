// Prometheus text exposition format 0.0.4, written by hand: one page of
// families, each with its # HELP and # TYPE line once, then its samples.
// Counters end in _total, units are base units (seconds, bytes) in the
// name. Integer counts are written as integers, exactly as the JSON has
// them (a float64 reader rounds past 2^53, the text does not).
//
// Why not prometheus-cpp: its registry keeps atomic counters that the
// program would have to update as it goes, and our counters already exist
// as per-worker snapshots the reporter copies ten times a second; all we
// need is to print them. This is ~150 lines with no dependency, and the
// page is rebuilt on the reporter thread, never in a worker.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stats/latency.hpp"

namespace rateline::report {

struct Label {
  std::string_view name;
  std::string value;
};
using Labels = std::vector<Label>;

// A label value as the format wants it: backslash, double quote and line feed escaped.
std::string escape_label_value(std::string_view v);
// HELP text: backslash and line feed escaped (quotes stay as they are).
std::string escape_help(std::string_view v);

// Cumulative buckets of a Prometheus histogram: counts[i] samples <= bounds[i]
// (in the metric's unit), then +Inf = count.
struct PromHistogram {
  std::vector<double> bounds;
  std::vector<uint64_t> cumulative;  // same length as bounds, non-decreasing
  uint64_t count = 0;
  double sum = 0;
};

// The latency histogram (ns, 512 log-linear buckets) in seconds, with
// bounds at 2^k ns for k = 10 (1.024 us) .. 30 (1.07 s): powers of two are
// edges of the fine buckets, so each cumulative count is exact: the samples
// below 2^k ns, i.e. at most 2^k - 1 ns (the stamps are whole ns).
PromHistogram latency_seconds(const stats::LatencyHistogram& h);

class PrometheusText {
 public:
  // No "info" type in 0.0.4 (OpenMetrics has one): an info metric is a gauge
  // named *_info whose value is 1 and whose labels carry the facts.
  enum class Type { counter, gauge, histogram };

  // Starts a family; its samples follow. A family is declared once per page.
  void family(std::string_view name, Type type, std::string_view help);
  // One sample of the current family (name without suffix).
  void sample(const Labels& labels, uint64_t value);
  void sample_double(const Labels& labels, double value);
  // A histogram family's series: name_bucket{le=...}, name_sum, name_count.
  void histogram(const Labels& labels, const PromHistogram& h);

  const std::string& text() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void series(std::string_view suffix, const Labels& labels, std::string_view extra_name = {},
              std::string_view extra_value = {});
  std::string out_;
  std::string name_;
};

// A double as the format writes it: shortest round-trip text, +Inf, -Inf, NaN.
std::string prom_double(double v);

}  // namespace rateline::report
