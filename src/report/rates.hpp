// Rates at each layer from counts and time (REFERENCE.md, "Line rate").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "net/frame.hpp"

namespace rateline::report {

struct Rates {
  double pps = 0;
  double payload_mbps = 0;  // UDP payload bits (udp_bench's "Mbit/s data")
  double l2_mbps = 0;       // Ethernet frames incl. FCS
  double l1_mbps = 0;       // + preamble, SFD, inter-frame gap: what "% of line rate" is measured in
};

// `packets` of `sizes` in `seconds`. Zero time gives zero rates, never inf.
Rates rates_for(uint64_t packets, const net::FrameSizes& sizes, double seconds);

// `packets` of different sizes carrying `payload_bytes` in all, each with
// the headers of `shape` (any FrameSizes of the same IP version): exact when
// no frame is padded to 64 B, true of every size rateline sends (18 B of
// payload fill a 64 B IPv4 frame).
Rates rates_for_bytes(uint64_t packets, uint64_t payload_bytes, const net::FrameSizes& shape, double seconds);

// Percent of a link's speed in L1 bits, or nullopt when the speed is unknown.
std::optional<double> line_rate_percent(const Rates& r, std::optional<double> link_mbps);

// Packets per second that fill `link_mbps` at L1 with frames of `sizes`.
double line_rate_pps(const net::FrameSizes& sizes, double link_mbps);

// udp_bench's settings string "b-t-n-s": burst, delay in ms, count (or '-'), size ("mix" for 0: a size mix).
std::string settings_text(uint32_t burst, uint64_t delay_ns, uint64_t count, uint32_t size);

}  // namespace rateline::report
