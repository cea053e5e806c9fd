// AF_PACKET backend: whole Ethernet frames through mmap'd rings, for boards
// and kernels without DPDK or AF_XDP. Needs CAP_NET_RAW.
//
// TX: a TPACKET_V2 TX ring with PACKET_QDISC_BYPASS. The engine fills ring
// frames in place (headers only into frames that do not hold them yet); commit
// flips them to TP_STATUS_SEND_REQUEST and kicks with one send() per batch.
// The kernel hands a frame back (TP_STATUS_AVAILABLE) when its skb is freed,
// which on a veth is once the peer consumed it: that is the backpressure.
//
// RX: a TPACKET_V3 block ring; the kernel fills whole blocks of frames and
// hands a block over when it is full or after retire_blk_tov. Workers join
// one PACKET_FANOUT_HASH group, so a flow stays on one worker. Drops come
// from PACKET_STATISTICS (tp_drops: frames the ring had no room for).
#pragma once

#include <linux/if_packet.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/queue.hpp"
#include "net/iface.hpp"
#include "socket/port_guard.hpp"
#include "afpacket/frame_reflector.hpp"
#include "socket/udp_socket.hpp"
#include "util/owned.hpp"

namespace rateline::drivers {

struct RawTxConfig {
  net::Interface iface;
  uint32_t max_frame_bytes = 1514;  // largest frame the engine will write (no FCS)
  uint32_t batch = 32;
  uint32_t ring_frames = 1024;
};

struct RawRxConfig {
  net::Interface iface;
  uint32_t batch = 64;
  uint32_t block_bytes = 1u << 20;
  uint32_t blocks = 32;
  int fanout_group = 0;       // workers of one rx share it; 0 = no fanout
  int poll_timeout_ms = 100;
  uint16_t guard_port = 0;    // UDP port to hold so the stack does not answer with ICMP
  uint16_t guard_port_count = 1;  // and the ports after it (rx --port A-B)
  bool ipv6 = false;
};

class AfPacketTxQueue {
 public:
  static constexpr engine::Layer kLayer = engine::Layer::ethernet;

  explicit AfPacketTxQueue(const RawTxConfig& cfg);
  AfPacketTxQueue(const AfPacketTxQueue&) = delete;
  AfPacketTxQueue& operator=(const AfPacketTxQueue&) = delete;

  std::span<engine::TxSlot> reserve(uint32_t n);
  engine::CommitResult commit(std::span<engine::TxSlot> filled);
  void cancel(std::span<engine::TxSlot>) {}  // reserved frames were never handed over: still AVAILABLE
  void reclaim();
  void flush();
  uint64_t wrong_format() const { return wrong_format_; }

 private:
  tpacket2_hdr* frame(uint32_t i) const {
    return reinterpret_cast<tpacket2_hdr*>(ring_ + size_t{i / frames_per_block_} * block_bytes_ +
                                           size_t{i % frames_per_block_} * frame_bytes_);
  }
  void kick();

  OwnedFd fd_;
  OwnedMapping ring_map_;
  uint8_t* ring_ = nullptr;  // ring_map_'s start, read on every frame
  uint32_t frame_bytes_ = 0, block_bytes_ = 0, frames_per_block_ = 0, ring_frames_ = 0;
  uint32_t head_ = 0;  // next frame to hand out
  std::vector<engine::TxSlot> slots_;  // one per ring frame: remembers which flow's headers it holds
  uint64_t wrong_format_ = 0;
};

class AfPacketRxQueue {
 public:
  static constexpr engine::Layer kLayer = engine::Layer::ethernet;

  explicit AfPacketRxQueue(const RawRxConfig& cfg);
  AfPacketRxQueue(const AfPacketRxQueue&) = delete;
  AfPacketRxQueue& operator=(const AfPacketRxQueue&) = delete;

  std::span<const engine::RxFrame> poll(uint32_t n);
  void release();
  uint64_t drops();  // cumulative tp_drops (PACKET_STATISTICS resets on read: we add up)
  // rx --reflect: copies of the picked frames, turned into their replies
  // (net::reflect_udp_frame), out of this interface through the same socket
  // (PACKET_IGNORE_OUTGOING keeps them out of our own ring).
  engine::ReflectResult reflect(std::span<const uint32_t> picks);

 private:
  tpacket_block_desc* block(uint32_t i) const {
    return reinterpret_cast<tpacket_block_desc*>(ring_ + size_t{i} * block_bytes_);
  }
  uint32_t take(uint32_t n);

  OwnedFd fd_;
  PortGuard guard_;
  OwnedMapping ring_map_;
  uint8_t* ring_ = nullptr;  // ring_map_'s start
  uint32_t block_bytes_ = 0, blocks_ = 0;
  uint32_t cur_block_ = 0;
  const uint8_t* cur_pkt_ = nullptr;  // next frame in the current block, null = block not opened
  uint32_t pkts_left_ = 0;
  std::vector<uint32_t> finished_;    // blocks fully handed out in the last poll, returned on release
  std::vector<engine::RxFrame> frames_;
  int timeout_ms_ = 100;
  uint64_t drops_ = 0;
  FrameReflector reflector_;
};

}  // namespace rateline::drivers
