#include "report/prometheus_text.hpp"

#include <charconv>
#include <cmath>

namespace rateline::report {

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char ch : v) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '"') out += "\\\"";
    else if (ch == '\n') out += "\\n";
    else out += ch;
  }
  return out;
}

std::string escape_help(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char ch : v) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '\n') out += "\\n";
    else out += ch;
  }
  return out;
}

std::string prom_double(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back as v
  return ec == std::errc{} ? std::string(buf, end) : "NaN";
}

PromHistogram latency_seconds(const stats::LatencyHistogram& h) {
  PromHistogram p;
  p.count = h.samples();
  p.sum = static_cast<double>(h.sum_ns()) / 1e9;
  // Cumulative over the fine buckets: bucket i holds samples <= upper(i) ns,
  // and upper(index(2^k) - 1) = 2^k - 1, so the bound falls on an edge.
  int fine = 0;
  uint64_t below = 0;
  for (int k = 10; k <= 30; ++k) {
    const int edge = stats::LatencyHistogram::index(uint64_t{1} << k);
    for (; fine < edge; ++fine) below += h.bucket(fine);
    p.bounds.push_back(static_cast<double>(uint64_t{1} << k) / 1e9);
    p.cumulative.push_back(below);
  }
  return p;
}

void PrometheusText::family(std::string_view name, Type type, std::string_view help) {
  name_ = name;
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += escape_help(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += type == Type::counter ? " counter\n" : type == Type::histogram ? " histogram\n" : " gauge\n";
}

void PrometheusText::series(std::string_view suffix, const Labels& labels, std::string_view extra_name,
                            std::string_view extra_value) {
  out_ += name_;
  out_ += suffix;
  if (labels.empty() && extra_name.empty()) {
    out_ += ' ';
    return;
  }
  out_ += '{';
  bool first = true;
  for (const Label& l : labels) {
    if (!first) out_ += ',';
    first = false;
    out_ += l.name;
    out_ += "=\"";
    out_ += escape_label_value(l.value);
    out_ += '"';
  }
  if (!extra_name.empty()) {
    if (!first) out_ += ',';
    out_ += extra_name;
    out_ += "=\"";
    out_ += extra_value;
    out_ += '"';
  }
  out_ += "} ";
}

void PrometheusText::sample(const Labels& labels, uint64_t value) {
  series("", labels);
  out_ += std::to_string(value);
  out_ += '\n';
}

void PrometheusText::sample_double(const Labels& labels, double value) {
  series("", labels);
  out_ += prom_double(value);
  out_ += '\n';
}

void PrometheusText::histogram(const Labels& labels, const PromHistogram& h) {
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    series("_bucket", labels, "le", prom_double(h.bounds[i]));
    out_ += std::to_string(h.cumulative[i]);
    out_ += '\n';
  }
  series("_bucket", labels, "le", "+Inf");
  out_ += std::to_string(h.count);
  out_ += '\n';
  series("_sum", labels);
  out_ += prom_double(h.sum);
  out_ += '\n';
  series("_count", labels);
  out_ += std::to_string(h.count);
  out_ += '\n';
}

}  // namespace rateline::report
