// A run of consecutive IPv4 or IPv6 addresses, "10.0.0.1-10.0.0.8" or one
// address: pktgen's --dst and --src-ip ranges, one flow per address.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "net/frame.hpp"

namespace rateline::net {

struct IpRange {
  IpAddress first;
  uint32_t count = 1;
  IpAddress at(uint32_t i) const;  // first + i, counting in the address's last bytes
  std::string text() const;        // as given: "A" or "A-B"
};

// "A" or "A-B" with A <= B, both IPv4 or both IPv6, at most max_count
// addresses. Throws std::invalid_argument with a one-line reason.
IpRange parse_ip_range(std::string_view text, uint32_t max_count);

std::string ip_text(const IpAddress& a);

// A range of destination MACs (pktgen --dst-mac A-B): one flow per MAC, for
// a switch's or a NIC's MAC filters; counted as a 48-bit number.
struct MacRange {
  MacAddress first{};
  uint32_t count = 1;
  MacAddress at(uint32_t i) const;
};

// "A" or "A-B" with A <= B, at most max_count MACs. Throws
// std::invalid_argument with a one-line reason.
MacRange parse_mac_range(std::string_view text, uint32_t max_count);

}  // namespace rateline::net
