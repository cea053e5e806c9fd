// Parsers for the human units on the command line. Each throws
// std::invalid_argument with a message that names the accepted forms, and
// rejects values that would overflow instead of wrapping.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rateline::units {

// "250us", "1.5ms", "2s", "0", "10" (bare number in default_unit_ns).
uint64_t parse_duration_ns(std::string_view text, uint64_t default_unit_ns);

// Decimal count with optional k/M/G suffix: "100000", "100k", "1M".
uint64_t parse_count(std::string_view text);

// Bytes with optional binary suffix: "8", "4k", "4KiB", "1M", "1MiB".
uint64_t parse_bytes(std::string_view text);

enum class RateUnit { pps, bits_per_sec };
struct Rate {
  RateUnit unit = RateUnit::pps;
  double value = 0.0;  // packets/s or bits/s
};
// "100000", "100k", "10kpps", "1.5Mpps" (packets/s); "100Mbit", "1Gbps",
// "500kbit/s", "1G bit/s" (bits/s, decimal prefixes).
Rate parse_rate(std::string_view text);

struct PortRange {
  uint16_t first = 0;
  uint16_t last = 0;
  uint32_t count() const { return uint32_t{last} - first + 1; }
};
// "5000" or "5000-5007".
PortRange parse_port_range(std::string_view text);

// Formatting for reports: "812.3k", "1.20M".
std::string si(double v, int precision = 1);
std::string duration_text(uint64_t ns);

}  // namespace rateline::units
