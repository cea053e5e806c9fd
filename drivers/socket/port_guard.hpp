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

namespace rateline::drivers {

class PortGuard {
 public:
  PortGuard() = default;
  PortGuard(uint16_t port, bool ipv6);  // best effort: a port already held needs no guard
  ~PortGuard();
  PortGuard(PortGuard&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  PortGuard& operator=(PortGuard&& o) noexcept;
  PortGuard(const PortGuard&) = delete;
  PortGuard& operator=(const PortGuard&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace rateline::drivers
