#include "dpdk/dpdk_queues.hpp"

#include <rte_errno.h>

#include <atomic>
#include <string>

#include "dpdk/pmd_socket_drops.hpp"
#include "net/frame.hpp"
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

namespace {
std::atomic<uint16_t> tx_queue_generations{0};
}

DpdkTxQueue::DpdkTxQueue(const DpdkTxConfig& cfg) : port_(cfg.port), queue_(cfg.queue), pool_(cfg.pool) {
  do generation_ = ++tx_queue_generations & 0xfff; while (generation_ == 0);
  const uint32_t capacity = rte_pktmbuf_data_room_size(pool_) - RTE_PKTMBUF_HEADROOM;
  if (capacity < cfg.max_frame_bytes)
    throw SetupError("DPDK mbufs hold " + std::to_string(capacity) + " B, frames need " +
                     std::to_string(cfg.max_frame_bytes) + " B");
  for (engine::TxSlot& s : slots_) s.capacity = capacity;
  // lcore_ (a member) has registered this thread by now: it has an lcore id.
  cache_ = rte_mempool_default_cache(pool_, rte_lcore_id());
}

DpdkTxQueue::~DpdkTxQueue() {
  // Mbufs reserved and never handed over (an exception between reserve and
  // commit); the PMD returns the others to the pool itself.
  if (reserved_ > handed_)
    rte_mempool_put_bulk(pool_, reinterpret_cast<void**>(mbufs_.data() + handed_), reserved_ - handed_);
}

void DpdkTxQueue::flush() {
  // Bounded: at most ~1 s for the PMD to give every mbuf back to the pool
  // (the count includes every lcore's cache).
  const unsigned size = pool_->size;
  for (int tries = 0; tries < 2000; ++tries) {
    if (rte_mempool_avail_count(pool_) + (reserved_ - handed_) >= size) return;
    reclaim();
    const timespec ts{0, 500'000};
    nanosleep(&ts, nullptr);
  }
}

DpdkRxQueue::DpdkRxQueue(const DpdkRxConfig& cfg)
    : port_(cfg.port), queue_(cfg.queue), batch_(cfg.batch), report_port_drops_(cfg.report_port_drops),
      socket_drops_(cfg.socket_drops),
      mbufs_(cfg.batch), frames_(cfg.batch), replies_(cfg.batch), reply_index_(cfg.batch) {}

engine::ReflectResult DpdkRxQueue::reflect(std::span<const uint32_t> picks) {
  uint16_t n = 0;
  for (uint32_t i : picks) {
    rte_mbuf* m = mbufs_[i];
    // Not a UDP frame cannot happen: only checked data packets are picked.
    if (!net::reflect_udp_frame({rte_pktmbuf_mtod(m, uint8_t*), m->data_len})) continue;
    m->ol_flags &= ~RTE_MBUF_F_TX_OFFLOAD_MASK;  // sent as it stands: no offload asked of the PMD
    replies_[n] = m;
    reply_index_[n++] = i;
  }
  const uint16_t sent = n ? rte_eth_tx_burst(port_, queue_, replies_.data(), n) : 0;
  for (uint16_t k = 0; k < sent; ++k) mbufs_[reply_index_[k]] = nullptr;  // the PMD's now
  return {sent, static_cast<uint32_t>(n - sent)};
}

DpdkRxQueue::~DpdkRxQueue() {
  if (held_) release();
}

uint64_t DpdkRxQueue::drops() {
  if (!report_port_drops_) return 0;
  rte_eth_stats st{};
  if (rte_eth_stats_get(port_, &st) != 0) return 0;
  return st.imissed + st.rx_nombuf + (socket_drops_ ? socket_drops_->total() : 0);
}

}  // namespace rateline::drivers
