#include "report/rates.hpp"

#include <cstdio>

namespace rateline::report {

Rates rates_for(uint64_t packets, const net::FrameSizes& sizes, double seconds) {
  Rates r;
  if (seconds <= 0) return r;
  r.pps = static_cast<double>(packets) / seconds;
  r.payload_mbps = r.pps * sizes.payload * 8 / 1e6;
  r.l2_mbps = r.pps * sizes.l2 * 8 / 1e6;
  r.l1_mbps = r.pps * sizes.l1 * 8 / 1e6;
  return r;
}

Rates rates_for_bytes(uint64_t packets, uint64_t payload_bytes, const net::FrameSizes& shape, double seconds) {
  Rates r;
  if (seconds <= 0) return r;
  const double per_packet_l2 = static_cast<double>(shape.l2 - shape.payload);
  const double per_packet_l1 = static_cast<double>(shape.l1 - shape.payload);
  r.pps = static_cast<double>(packets) / seconds;
  r.payload_mbps = static_cast<double>(payload_bytes) * 8 / seconds / 1e6;
  r.l2_mbps = r.payload_mbps + r.pps * per_packet_l2 * 8 / 1e6;
  r.l1_mbps = r.payload_mbps + r.pps * per_packet_l1 * 8 / 1e6;
  return r;
}

std::optional<double> line_rate_percent(const Rates& r, std::optional<double> link_mbps) {
  if (!link_mbps || *link_mbps <= 0) return std::nullopt;
  return r.l1_mbps * 100.0 / *link_mbps;
}

double line_rate_pps(const net::FrameSizes& sizes, double link_mbps) { return link_mbps * 1e6 / (8.0 * sizes.l1); }

std::string settings_text(uint32_t burst, uint64_t delay_ns, uint64_t count, uint32_t size) {
  char delay[32];
  std::snprintf(delay, sizeof delay, "%g", static_cast<double>(delay_ns) / 1e6);
  return std::to_string(burst) + "-" + delay + "-" + (count ? std::to_string(count) : std::string("-")) + "-" +
         (size ? std::to_string(size) : std::string("mix"));
}

}  // namespace rateline::report
