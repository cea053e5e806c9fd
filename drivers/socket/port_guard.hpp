// A UDP socket that holds our test port and discards everything it gets.
//
// Backends that tap frames below the stack (AF_PACKET, DPDK's AF_PACKET PMD)
// leave the kernel its own copy of each frame. With no socket on the port,
// the stack answers every one with ICMP port unreachable (and, after a
// neighbour flush, ARPs for the sender first): traffic we did not send on
// the link we measure. The guard's socket filter drops each copy at once;
// the kernel counts those as UDP InErrors, which the ledger leaves out for
// raw receivers and says why.
#pragma once

#include <cstdint>
#include <vector>

#include "util/owned.hpp"

namespace rateline::drivers {

class PortGuard {
 public:
  PortGuard() = default;
  // Holds ports port .. port + count - 1 (rx --port A-B). Best effort: a
  // port already held needs no guard.
  PortGuard(uint16_t port, bool ipv6, uint16_t count = 1);

 private:
  std::vector<OwnedFd> fds_;
};

}  // namespace rateline::drivers
