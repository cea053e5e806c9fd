// DPDK backend, fast path: one TX and one RX queue of a DPDK port per worker.
// The port, the EAL and the mempools are set up once by DpdkPort
// (dpdk_port.hpp); the queues only move mbufs.
//
// TX: every slot is an mbuf taken from the mempool once, at setup, and kept:
// the queue holds one reference to it for its whole life. commit() raises the
// refcount to 2 and hands the batch to rte_eth_tx_burst; the PMD's free after
// transmission brings it back to 1, so the mbuf never returns to the pool and
// its frame (the flow's headers) is still there when the slot comes round
// again: slots are stale only the first time. Untaken mbufs get their count
// back to 1 and stay reserved for the engine's retry.
//
// RX: rte_eth_rx_burst into an array of mbuf pointers, frames parsed in place
// by the engine, rte_pktmbuf_free_bulk on release(). An idle queue spins for
// a while, then sleeps 20 us between empty polls, so an idle rx on a shared
// machine does not burn a core; the RX ring covers a sleep at 10G line rate.
//
// Workers are std::threads pinned by the caller; the constructor registers
// the thread as a DPDK lcore (rte_thread_register) so the mempool's per-lcore
// cache works, and the destructor gives the lcore back.
#pragma once

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <cstdint>
#include <ctime>
#include <span>
#include <vector>

#include "engine/queue.hpp"

namespace rateline::drivers {

struct DpdkTxConfig {
  uint16_t port = 0;
  uint16_t queue = 0;
  rte_mempool* pool = nullptr;  // on the port's NUMA socket
  uint32_t slots = 2048;        // prebuilt mbufs: more than the TX ring holds in flight
  uint32_t max_frame_bytes = 1514;
};

struct DpdkRxConfig {
  uint16_t port = 0;
  uint16_t queue = 0;
  uint32_t batch = 64;
  bool report_port_drops = false;  // one queue per port reports the port-wide drop counters
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

  explicit DpdkTxQueue(const DpdkTxConfig& cfg);
  ~DpdkTxQueue();
  DpdkTxQueue(const DpdkTxQueue&) = delete;
  DpdkTxQueue& operator=(const DpdkTxQueue&) = delete;

  // Contiguous slots from head_ whose mbufs the PMD gave back (refcount 1),
  // never across the ring's end (the caller gets a shorter batch there).
  std::span<engine::TxSlot> reserve(uint32_t n) {
    const uint32_t limit = n < slots_count_ - head_ ? n : slots_count_ - head_;
    uint32_t count = 0;
    // Acquire pairs with the PMD's release-ordered decrement in rte_pktmbuf_free:
    // its last read of the frame happens before we write the frame again.
    while (count < limit && __atomic_load_n(&mbufs_[head_ + count]->refcnt, __ATOMIC_ACQUIRE) == 1) ++count;
    return {slots_.data() + head_, count};
  }

  engine::CommitResult commit(std::span<engine::TxSlot> filled) {
    const auto first = static_cast<uint32_t>(filled.data() - slots_.data());
    const auto n = static_cast<uint16_t>(filled.size());
    rte_mbuf** m = mbufs_.data() + first;
    for (uint16_t i = 0; i < n; ++i) {
      m[i]->data_len = static_cast<uint16_t>(filled[i].len);
      m[i]->pkt_len = filled[i].len;
      rte_mbuf_refcnt_set(m[i], 2);  // plain store: nobody else holds it (refcount was 1)
    }
    const uint16_t sent = rte_eth_tx_burst(port_, queue_, m, n);
    for (uint16_t i = sent; i < n; ++i) rte_mbuf_refcnt_set(m[i], 1);  // still ours, not handed over
    head_ = first + sent == slots_count_ ? 0 : first + sent;
    return {sent, 0, 0};
  }

  void cancel(std::span<engine::TxSlot>) {}  // reserved slots were never handed over: still refcount 1

  // PMDs reap finished descriptors inside tx_burst, or on request.
  void reclaim() {
    if (rte_eth_tx_done_cleanup(port_, queue_, 0) < 0) rte_eth_tx_burst(port_, queue_, nullptr, 0);
  }

  void flush();

 private:
  uint16_t port_ = 0;
  uint16_t queue_ = 0;
  uint32_t slots_count_ = 0;
  uint32_t head_ = 0;                  // next slot to hand out
  std::vector<rte_mbuf*> mbufs_;       // slot i's mbuf, ours for the queue's life
  std::vector<engine::TxSlot> slots_;  // one per mbuf: remembers which flow's headers it holds
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
    }
    held_ = got;
    return {frames_.data(), got};
  }

  void release() {
    rte_pktmbuf_free_bulk(mbufs_.data(), held_);
    held_ = 0;
  }

  // imissed (RX ring full) + rx_nombuf (mempool empty) of the port, from the
  // queue that reports them (the others say 0, so workers add up once).
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
  std::vector<rte_mbuf*> mbufs_;
  std::vector<engine::RxFrame> frames_;
  DpdkLcore lcore_;
};

}  // namespace rateline::drivers
