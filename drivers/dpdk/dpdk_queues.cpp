#include "dpdk/dpdk_queues.hpp"

#include <rte_errno.h>

#include <string>

#include "util/errors.hpp"

namespace rateline::drivers {

DpdkLcore::DpdkLcore() {
  if (rte_lcore_id() != LCORE_ID_ANY) return;  // an EAL lcore already
  if (rte_thread_register() != 0)
    throw BackendUnavailable(std::string("Couldn't register the worker thread as a DPDK lcore: ") +
                             rte_strerror(rte_errno) + " (RTE_MAX_LCORE reached? use fewer --threads)");
  registered_ = true;
}

DpdkLcore::~DpdkLcore() {
  if (registered_) rte_thread_unregister();
}

DpdkTxQueue::DpdkTxQueue(const DpdkTxConfig& cfg)
    : port_(cfg.port), queue_(cfg.queue), slots_count_(cfg.slots), mbufs_(cfg.slots), slots_(cfg.slots) {
  if (rte_pktmbuf_alloc_bulk(cfg.pool, mbufs_.data(), slots_count_) != 0)
    throw SetupError("Couldn't take " + std::to_string(slots_count_) + " mbufs for TX queue " + std::to_string(queue_) +
                     " from the DPDK mempool: it is too small (more hugepages, or fewer --threads)");
  for (uint32_t i = 0; i < slots_count_; ++i) {
    rte_mbuf* m = mbufs_[i];
    if (rte_pktmbuf_tailroom(m) < cfg.max_frame_bytes) {
      rte_pktmbuf_free_bulk(mbufs_.data(), slots_count_);
      throw SetupError("DPDK mbufs hold " + std::to_string(rte_pktmbuf_tailroom(m)) + " B, frames need " +
                       std::to_string(cfg.max_frame_bytes) + " B");
    }
    slots_[i].data = rte_pktmbuf_mtod(m, uint8_t*);
    slots_[i].capacity = rte_pktmbuf_tailroom(m);
    slots_[i].stale = true;
  }
}

DpdkTxQueue::~DpdkTxQueue() {
  // Drops our reference: an mbuf the PMD still holds goes back to the pool
  // when the PMD frees it.
  rte_pktmbuf_free_bulk(mbufs_.data(), slots_count_);
}

void DpdkTxQueue::flush() {
  // Bounded: at most ~1 s for the PMD to give every mbuf back.
  for (int tries = 0; tries < 2000; ++tries) {
    bool pending = false;
    for (uint32_t i = 0; i < slots_count_ && !pending; ++i) pending = rte_mbuf_refcnt_read(mbufs_[i]) != 1;
    if (!pending) return;
    reclaim();
    const timespec ts{0, 500'000};
    nanosleep(&ts, nullptr);
  }
}

DpdkRxQueue::DpdkRxQueue(const DpdkRxConfig& cfg)
    : port_(cfg.port), queue_(cfg.queue), batch_(cfg.batch), report_port_drops_(cfg.report_port_drops),
      mbufs_(cfg.batch), frames_(cfg.batch) {}

DpdkRxQueue::~DpdkRxQueue() {
  if (held_) release();
}

uint64_t DpdkRxQueue::drops() {
  if (!report_port_drops_) return 0;
  rte_eth_stats st{};
  if (rte_eth_stats_get(port_, &st) != 0) return 0;
  return st.imissed + st.rx_nombuf;
}

}  // namespace rateline::drivers
