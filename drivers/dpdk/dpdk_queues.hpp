// DPDK backend, fast path: one TX and one RX queue of a DPDK port per worker.
// The port, the EAL and the mempools are set up once by DpdkPort
// (dpdk_port.hpp); the queues only move mbufs.
//
// TX: each queue has a mempool of its own that nothing else takes from, and
// every mbuf in it goes back with the frame we wrote still in it (a PMD frees
// a sent mbuf without touching its data). So the frame's headers survive the
// round trip: an mbuf's `hash.usr` (a user field no TX path reads) says
// which flow's data headers it holds (0: none, write them). reserve() takes
// a batch with one rte_mempool_get_bulk, commit() hands it to
// rte_eth_tx_burst, and the PMD's free puts each mbuf back in this lcore's
// mempool cache, last in, first out: the next batch reuses the mbufs just
// freed, still in the CPU's cache (on net_null and the vdevs, which free
// inside tx_burst, the same few dozen mbufs go round). Every mbuf has
// refcount 1 and comes from the queue's pool, so MBUF_FAST_FREE is offered
// to PMDs that have it. Untaken mbufs stay reserved for the engine's retry;
// cancelled ones go back to the pool.
//
// RX: rte_eth_rx_burst into an array of mbuf pointers, frames parsed in place
// by the engine, rte_pktmbuf_free_bulk on release(). An idle queue spins for
// a while, then sleeps 20 us between empty polls, so an idle rx on a shared
// machine does not burn a core; the RX ring covers a sleep at 10G line rate.
// rx --reflect turns a picked frame around in its own mbuf (ends swapped, the
// UDP checksum written afresh, as net::reflect_udp_frame does for every
// reflector) and hands it to the worker's TX queue of the same port: no copy. What the PMD takes is
// its to free; what it refuses stays held and is freed on release().
//
// Workers are std::threads pinned by the caller; the constructor registers
// the thread as a DPDK lcore (rte_thread_register) so the mempool's per-lcore
// cache works, and the destructor gives the lcore back.
#pragma once

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <array>
#include <cstdint>
#include <ctime>
#include <span>
#include <vector>

#include "engine/queue.hpp"

namespace rateline::drivers {

class PmdSocketDrops;

struct DpdkTxConfig {
  uint16_t port = 0;
  uint16_t queue = 0;
  rte_mempool* pool = nullptr;  // this queue's own, on its worker's NUMA socket (DpdkPort::tx_config)
  uint32_t max_frame_bytes = 1514;
};

struct DpdkRxConfig {
  uint16_t port = 0;
  uint16_t queue = 0;
  uint32_t batch = 64;
  bool report_port_drops = false;  // one queue per port reports the port-wide drop counters
  PmdSocketDrops* socket_drops = nullptr;  // net_af_packet: its kernel sockets' drops (the reporting queue only)
};

// Registers the calling thread as a DPDK lcore while it lives (no-op on an EAL thread).
class DpdkLcore {
 public:
  DpdkLcore();
  ~DpdkLcore();
  DpdkLcore(const DpdkLcore&) = delete;
  DpdkLcore& operator=(const DpdkLcore&) = delete;

 private:
  bool registered_ = false;
};

class DpdkTxQueue {
 public:
  static constexpr engine::Layer kLayer = engine::Layer::ethernet;
  static constexpr uint32_t kMaxBatch = 512;  // slots one reserve() hands out

  explicit DpdkTxQueue(const DpdkTxConfig& cfg);
  ~DpdkTxQueue();
  DpdkTxQueue(const DpdkTxQueue&) = delete;
  DpdkTxQueue& operator=(const DpdkTxQueue&) = delete;

  // n mbufs from the queue's pool (fewer never: the bulk get is all or
  // nothing; empty when the PMD still holds too many, then the engine
  // reclaims and asks again).
  std::span<engine::TxSlot> reserve(uint32_t n) {
    if (n > kMaxBatch) n = kMaxBatch;
    if (rte_mempool_generic_get(pool_, reinterpret_cast<void**>(mbufs_.data()), n, cache_) != 0) return {};
    for (uint32_t i = 0; i < n; ++i) {
      rte_mbuf* m = mbufs_[i];
      const uint32_t holds = m->hash.usr;  // written by commit()/cancel() when the mbuf was last ours
      slots_[i].data = static_cast<uint8_t*>(m->buf_addr) + m->data_off;
      slots_[i].stale = (holds >> 20) != generation_ || (holds & 0xffff) == 0;
      slots_[i].flow = static_cast<uint16_t>((holds & 0xffff) - 1);
      slots_[i].size_class = static_cast<uint8_t>((holds >> 16) & 0xf);
    }
    reserved_ = n;
    handed_ = 0;
    return {slots_.data(), n};
  }

  engine::CommitResult commit(std::span<engine::TxSlot> filled) {
    const auto first = static_cast<uint32_t>(filled.data() - slots_.data());
    const auto n = static_cast<uint16_t>(filled.size());
    rte_mbuf** m = mbufs_.data() + first;
    for (uint16_t i = 0; i < n; ++i) {
      m[i]->data_len = static_cast<uint16_t>(filled[i].len);
      m[i]->pkt_len = filled[i].len;
      m[i]->hash.usr = holds_tag(filled[i]);
    }
    const uint16_t sent = rte_eth_tx_burst(port_, queue_, m, n);
    handed_ = first + sent;  // the rest stays reserved for the engine's retry (or cancel)
    return {sent, 0, 0};
  }

  // Slots never committed go back to the pool, saying what their frames hold.
  void cancel(std::span<engine::TxSlot> slots) {
    const auto first = static_cast<uint32_t>(slots.data() - slots_.data());
    for (uint32_t i = 0; i < slots.size(); ++i) mbufs_[first + i]->hash.usr = holds_tag(slots[i]);
    rte_mempool_generic_put(pool_, reinterpret_cast<void**>(mbufs_.data() + first), static_cast<unsigned>(slots.size()),
                            cache_);
    handed_ = reserved_ = 0;
  }

  // PMDs reap finished descriptors inside tx_burst, or on request.
  void reclaim() {
    if (rte_eth_tx_done_cleanup(port_, queue_, 0) < 0) rte_eth_tx_burst(port_, queue_, nullptr, 0);
  }

  void flush();

 private:
  // The tag: this queue's generation in the high 12 bits (an earlier queue
  // on the same pool had other flows and lengths), the size class of a size
  // mix in the next 4, flow + 1 in the low half; 0 in the low half (also a
  // fresh mbuf: the pool zeroes them) and end markers' frames hold no data
  // headers.
  uint32_t holds_tag(const engine::TxSlot& s) const {
    return s.stale ? 0 : uint32_t{generation_} << 20 | uint32_t{s.size_class & 0xfu} << 16 | (uint32_t{s.flow} + 1);
  }

  uint16_t port_ = 0;
  uint16_t queue_ = 0;
  rte_mempool* pool_ = nullptr;
  rte_mempool_cache* cache_ = nullptr;  // this lcore's: looked up once, not per batch (a TLS read in a shared library)
  uint16_t generation_ = 0;  // 1..4095, never 0: see holds_tag()
  uint32_t reserved_ = 0;  // mbufs the last reserve() took from the pool
  uint32_t handed_ = 0;    // of those, how many went to the PMD (the rest are still ours)
  std::array<rte_mbuf*, kMaxBatch> mbufs_{};
  std::array<engine::TxSlot, kMaxBatch> slots_{};
  DpdkLcore lcore_;
};

class DpdkRxQueue {
 public:
  static constexpr engine::Layer kLayer = engine::Layer::ethernet;

  explicit DpdkRxQueue(const DpdkRxConfig& cfg);
  ~DpdkRxQueue();
  DpdkRxQueue(const DpdkRxQueue&) = delete;
  DpdkRxQueue& operator=(const DpdkRxQueue&) = delete;

  std::span<const engine::RxFrame> poll(uint32_t n) {
    if (n > batch_) n = batch_;
    const uint16_t got = rte_eth_rx_burst(port_, queue_, mbufs_.data(), static_cast<uint16_t>(n));
    if (got == 0) {
      if (++idle_polls_ > kSpinPolls) {
        const timespec ts{0, kIdleSleepNs};
        nanosleep(&ts, nullptr);
      }
      return {};
    }
    idle_polls_ = 0;
    for (uint16_t i = 0; i < got; ++i) {
      // Single-segment mbufs (the pool's buffers hold a whole frame); a
      // scattered frame shows only its first segment and parses as truncated.
      frames_[i].data = rte_pktmbuf_mtod(mbufs_[i], const uint8_t*);
      frames_[i].len = mbufs_[i]->data_len;
      // The NIC checked the UDP checksum (and the IPv4 one): the engine need not.
      const uint64_t fl = mbufs_[i]->ol_flags;
      frames_[i].l4_checksum_trusted = (fl & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_GOOD &&
                                       (fl & RTE_MBUF_F_RX_IP_CKSUM_MASK) != RTE_MBUF_F_RX_IP_CKSUM_BAD;
    }
    held_ = got;
    return {frames_.data(), got};
  }

  void release() {
    rte_pktmbuf_free_bulk(mbufs_.data(), held_);  // reflected ones were set to null: the PMD frees those
    held_ = 0;
  }

  engine::ReflectResult reflect(std::span<const uint32_t> picks);

  // imissed (RX ring full) + rx_nombuf (mempool empty) of the port, and on
  // net_af_packet its kernel sockets' ring drops, from the queue that reports
  // them (the others say 0, so workers add up once).
  uint64_t drops();

 private:
  static constexpr uint32_t kSpinPolls = 20000;  // about 1-2 ms of empty polls before sleeping
  static constexpr long kIdleSleepNs = 20'000;

  uint16_t port_ = 0;
  uint16_t queue_ = 0;
  uint32_t batch_ = 64;
  uint32_t held_ = 0;
  uint32_t idle_polls_ = 0;
  bool report_port_drops_ = false;
  PmdSocketDrops* socket_drops_ = nullptr;
  std::vector<rte_mbuf*> mbufs_;
  std::vector<engine::RxFrame> frames_;
  std::vector<rte_mbuf*> replies_;        // rx --reflect: this batch's turned-around mbufs
  std::vector<uint32_t> reply_index_;     // where each came from in mbufs_
  DpdkLcore lcore_;
};

}  // namespace rateline::drivers
