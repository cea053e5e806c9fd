// pktgen --rtt on a DPDK port: the replies arrive on the port's own RX
// queues (one per worker, which pktgen's workers never read), not in the
// kernel, so the reply listener polls them here. Each burst is stamped by one
// clock read when it is taken off the queue: a reply's round trip includes
// the time it waited in the queue, at most the listener's poll interval
// (ReplyListener::kPortIdleSleepNs) plus the scheduler's delays.
#pragma once

#include <rte_mbuf.h>

#include <array>
#include <cstdint>

#include "socket/reply_listener.hpp"

namespace rateline::drivers {

class DpdkReplyPort : public ReplyFramePort {
 public:
  DpdkReplyPort(uint16_t port, uint16_t queues) : port_(port), queues_(queues) {}
  uint32_t poll(const Take& take) override;

 private:
  static constexpr uint16_t kBurst = 32;
  uint16_t port_;
  uint16_t queues_;
  std::array<rte_mbuf*, kBurst> mbufs_{};
};

}  // namespace rateline::drivers
