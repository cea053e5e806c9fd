#include "util/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace rateline::units {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits "1.5ms" into 1.5 and "ms". Rejects empty numbers, signs and nan/inf.
std::pair<double, std::string_view> split_number(std::string_view text, const char* what) {
  text = trim(text);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) throw std::invalid_argument(std::string("'") + std::string(text) + "' is not a " + what);
  double v = 0;
  const std::string num(text.substr(0, i));
  auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (ec != std::errc() || ptr != num.data() + num.size() || !std::isfinite(v))
    throw std::invalid_argument(std::string("'") + std::string(text) + "' is not a " + what);
  return {v, trim(text.substr(i))};
}

uint64_t to_u64(double v, std::string_view text, const char* what) {
  if (v < 0 || v >= 1.8e19) throw std::invalid_argument(std::string(what) + " '" + std::string(text) + "' is out of range");
  return static_cast<uint64_t>(std::round(v));  // not llround: it overflows above 2^63
}

}  // namespace

uint64_t parse_duration_ns(std::string_view text, uint64_t default_unit_ns) {
  auto [v, unit] = split_number(text, "duration (forms: 250us, 1.5ms, 2s, 0)");
  double mult;
  if (unit.empty()) mult = static_cast<double>(default_unit_ns);
  else if (unit == "ns") mult = 1;
  else if (unit == "us") mult = 1e3;
  else if (unit == "ms") mult = 1e6;
  else if (unit == "s") mult = 1e9;
  else if (unit == "min") mult = 60e9;
  else throw std::invalid_argument("unknown time unit '" + std::string(unit) + "' in '" + std::string(text) + "' (use ns, us, ms, s, min)");
  const double ns = v * mult;
  if (ns >= 1e18) throw std::invalid_argument("duration '" + std::string(text) + "' is too long");
  return static_cast<uint64_t>(std::llround(ns));
}

uint64_t parse_count(std::string_view text) {
  auto [v, unit] = split_number(text, "count (forms: 100000, 100k, 1M)");
  double mult;
  if (unit.empty()) mult = 1;
  else if (unit == "k" || unit == "K") mult = 1e3;
  else if (unit == "M") mult = 1e6;
  else if (unit == "G") mult = 1e9;
  else throw std::invalid_argument("unknown count suffix '" + std::string(unit) + "' in '" + std::string(text) + "' (use k, M, G)");
  const double n = v * mult;
  if (n != std::floor(n)) throw std::invalid_argument("count '" + std::string(text) + "' is not a whole number");
  return to_u64(n, text, "count");
}

uint64_t parse_bytes(std::string_view text) {
  auto [v, unit] = split_number(text, "size in bytes (forms: 512, 4k, 4KiB, 1M)");
  double mult;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "k" || unit == "K" || unit == "KiB" || unit == "kiB") mult = 1024;
  else if (unit == "M" || unit == "MiB") mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB") mult = 1024.0 * 1024 * 1024;
  else throw std::invalid_argument("unknown size suffix '" + std::string(unit) + "' in '" + std::string(text) + "' (use k/KiB, M/MiB, G/GiB)");
  const double n = v * mult;
  if (n != std::floor(n)) throw std::invalid_argument("size '" + std::string(text) + "' is not a whole number of bytes");
  return to_u64(n, text, "size");
}

Rate parse_rate(std::string_view text) {
  auto [v, unit] = split_number(text, "rate (forms: 100000, 100k, 10kpps, 100Mbit, 1Gbps)");
  double mult = 1;
  if (!unit.empty() && (unit[0] == 'k' || unit[0] == 'K' || unit[0] == 'M' || unit[0] == 'G' || unit[0] == 'T')) {
    const char p = unit[0];
    mult = p == 'T' ? 1e12 : p == 'G' ? 1e9 : p == 'M' ? 1e6 : 1e3;
    unit.remove_prefix(1);
  }
  unit = trim(unit);
  Rate r;
  if (unit.empty() || unit == "pps" || unit == "p/s") r.unit = RateUnit::pps;
  else if (unit == "bps" || unit == "bit" || unit == "bit/s" || unit == "b/s" || unit == "bits")
    r.unit = RateUnit::bits_per_sec;
  else
    throw std::invalid_argument("unknown rate unit '" + std::string(unit) + "' in '" + std::string(text) +
                                "' (packets: 100k, 10kpps; bits: 100Mbit, 1Gbps)");
  r.value = v * mult;
  if (!(r.value > 0) || r.value > 1e13) throw std::invalid_argument("rate '" + std::string(text) + "' is out of range");
  return r;
}

PortRange parse_port_range(std::string_view text) {
  text = trim(text);
  auto parse_port = [&](std::string_view s) -> uint16_t {
    unsigned v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || v == 0 || v > 65535)
      throw std::invalid_argument("'" + std::string(text) + "' is not a port or port range (1-65535, e.g. 5000 or 5000-5007)");
    return static_cast<uint16_t>(v);
  };
  PortRange r;
  const auto dash = text.find('-');
  if (dash == std::string_view::npos) {
    r.first = r.last = parse_port(text);
  } else {
    r.first = parse_port(trim(text.substr(0, dash)));
    r.last = parse_port(trim(text.substr(dash + 1)));
    if (r.last < r.first) throw std::invalid_argument("port range '" + std::string(text) + "' ends before it starts");
  }
  return r;
}

std::string si(double v, int precision) {
  const char* suffix = "";
  double a = std::fabs(v);
  if (a >= 1e9) { v /= 1e9; suffix = "G"; }
  else if (a >= 1e6) { v /= 1e6; suffix = "M"; }
  else if (a >= 1e3) { v /= 1e3; suffix = "k"; }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f%s", precision, v, suffix);
  return buf;
}

std::string duration_text(uint64_t ns) {
  char buf[64];
  if (ns >= 1'000'000'000ull) std::snprintf(buf, sizeof buf, "%.3fs", static_cast<double>(ns) / 1e9);
  else if (ns >= 1'000'000) std::snprintf(buf, sizeof buf, "%.3gms", static_cast<double>(ns) / 1e6);
  else if (ns >= 1'000) std::snprintf(buf, sizeof buf, "%.3gus", static_cast<double>(ns) / 1e3);
  else std::snprintf(buf, sizeof buf, "%lluns", static_cast<unsigned long long>(ns));
  return buf;
}

}  // namespace rateline::units
