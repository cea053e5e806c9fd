// Interface facts raw backends need to build whole frames: index, MAC,
// MTU, and the neighbour (ARP/NDP) entry for a destination.
#pragma once

#include <optional>
#include <string>

#include "net/frame.hpp"

namespace rateline::net {

struct Interface {
  std::string name;
  int index = 0;
  MacAddress mac{};
  uint32_t mtu = 0;
};

// Throws SetupError naming the interface when it does not exist.
Interface interface_info(const std::string& name);

// The neighbour table's MAC for `ip` on interface `ifindex` (rtnetlink
// dump), if the kernel has a usable (reachable/stale/permanent) entry.
std::optional<MacAddress> neighbour_mac(const IpAddress& ip, int ifindex);

// "aa:bb:cc:dd:ee:ff" -> MAC; throws std::invalid_argument.
MacAddress parse_mac(const std::string& text);
std::string mac_text(const MacAddress& mac);

}  // namespace rateline::net
