// Which interface a destination leaves by, and how fast that link is.
#pragma once

#include <optional>
#include <string>

namespace rateline::report {

struct LinkInfo {
  std::string device;               // "" when unknown
  std::optional<double> speed_mbps; // from /sys/class/net/DEV/speed
  bool nominal = false;             // virtual device (veth, tap, lo...): its "speed" is a made-up number
  std::string text() const;         // "veth0 10000 Mbit/s (nominal: virtual device)"
};

// The interface that owns local address `local_ip` (numeric), via getifaddrs.
std::string device_for_local_address(const std::string& local_ip);

LinkInfo link_info(const std::string& device);

}  // namespace rateline::report
