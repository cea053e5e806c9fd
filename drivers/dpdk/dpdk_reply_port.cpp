#include "dpdk/dpdk_reply_port.hpp"

#include <rte_ethdev.h>

#include "util/clock.hpp"

namespace rateline::drivers {

uint32_t DpdkReplyPort::poll(const Take& take) {
  uint32_t got = 0;
  for (uint16_t q = 0; q < queues_; ++q) {
    const uint16_t n = rte_eth_rx_burst(port_, q, mbufs_.data(), kBurst);
    if (!n) continue;
    const uint64_t rx_ns = now_ns();
    for (uint16_t i = 0; i < n; ++i) {
      const rte_mbuf* m = mbufs_[i];
      // A chained mbuf holds a frame longer than any we send: its first segment parses as truncated (not ours).
      take({rte_pktmbuf_mtod(m, const uint8_t*), m->data_len}, rx_ns);
    }
    rte_pktmbuf_free_bulk(mbufs_.data(), n);
    got += n;
  }
  return got;
}

}  // namespace rateline::drivers
