// AF_XDP backend: whole Ethernet frames in a UMEM shared with the kernel.
//
// TX: UMEM frames are used as a ring in order (AF_XDP completes a queue's
// descriptors in order), one TxSlot per frame so a frame keeps its headers
// between uses. commit = TX descriptors + submit, reap the completion ring
// (the kernel sends nothing while it is full), kick (sendto) only when the
// kernel asks (needs_wakeup); reclaim = reap, or kick when nothing completed.
// RX: the steering XDP program (xdp_program.hpp) redirects our UDP port to
// the socket of the RX queue; every UMEM frame starts in the fill ring and
// goes back to it on release(). Drops: XDP_STATISTICS.
// Zero-copy is tried first; drivers without it (veth) get copy mode, and the
// report says which.
#pragma once

#include <xdp/xsk.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "afpacket/frame_reflector.hpp"
#include "engine/queue.hpp"
#include "net/iface.hpp"
#include "util/owned.hpp"

namespace rateline::drivers {

struct XskConfig {
  net::Interface iface;
  uint32_t queue = 0;            // NIC RX/TX queue this socket serves
  uint32_t batch = 32;
  uint32_t frames = 4096;        // UMEM frames
  uint32_t frame_bytes = 4096;   // one frame holds one packet
  int xsk_map_fd = -1;           // RX: the steering program's map
  int poll_timeout_ms = 100;
  bool reflect = false;          // RX: rx --reflect, replies go out through a packet socket
};

// The UMEM area and its rings, shared by the TX and RX queue classes.
class Umem {
 public:
  Umem(uint32_t frames, uint32_t frame_bytes, uint32_t fill_size, uint32_t comp_size);
  ~Umem();
  Umem(const Umem&) = delete;
  Umem& operator=(const Umem&) = delete;
  uint8_t* frame(uint64_t addr) const { return area_ + addr; }
  xsk_umem* get() const { return umem_; }

  xsk_ring_prod fill{};
  xsk_ring_cons comp{};
  const uint32_t frames;
  const uint32_t frame_bytes;

 private:
  OwnedMapping area_map_;    // unmapped after the destructor has deleted umem_
  uint8_t* area_ = nullptr;  // area_map_'s start
  xsk_umem* umem_ = nullptr;
};

class AfXdpTxQueue {
 public:
  static constexpr engine::Layer kLayer = engine::Layer::ethernet;

  explicit AfXdpTxQueue(const XskConfig& cfg);
  ~AfXdpTxQueue();
  AfXdpTxQueue(const AfXdpTxQueue&) = delete;
  AfXdpTxQueue& operator=(const AfXdpTxQueue&) = delete;

  std::span<engine::TxSlot> reserve(uint32_t n);
  engine::CommitResult commit(std::span<engine::TxSlot> filled);
  void cancel(std::span<engine::TxSlot>) {}  // frames reserved but not submitted stay ours
  void reclaim();
  void flush();
  const std::string& mode() const { return mode_; }

 private:
  void kick();
  uint32_t reap_completions();  // completions taken from the ring: their frames are free again

  Umem umem_;
  xsk_ring_prod tx_{};
  xsk_socket* xsk_ = nullptr;
  int fd_ = -1;
  std::vector<engine::TxSlot> slots_;  // slot i = UMEM frame i
  uint64_t head_ = 0;       // frames handed to the kernel so far (next = head_ % frames)
  uint64_t completed_ = 0;  // frames the kernel gave back
  std::string mode_;
};

class AfXdpRxQueue {
 public:
  static constexpr engine::Layer kLayer = engine::Layer::ethernet;

  explicit AfXdpRxQueue(const XskConfig& cfg);
  ~AfXdpRxQueue();
  AfXdpRxQueue(const AfXdpRxQueue&) = delete;
  AfXdpRxQueue& operator=(const AfXdpRxQueue&) = delete;

  std::span<const engine::RxFrame> poll(uint32_t n);
  void release();
  uint64_t drops();
  const std::string& mode() const { return mode_; }
  // rx --reflect: the picked frames of the last poll(), turned into their
  // replies, out of the interface (afpacket/frame_reflector.hpp).
  engine::ReflectResult reflect(std::span<const uint32_t> picks) {
    return reflector_.reflect(reply_fd_.get(), frames_, picks);
  }

 private:
  Umem umem_;
  xsk_ring_cons rx_{};
  xsk_socket* xsk_ = nullptr;
  int fd_ = -1;
  std::vector<engine::RxFrame> frames_;
  std::vector<uint64_t> addrs_;  // UMEM addresses of the frames handed out
  uint32_t handed_out_ = 0;
  int timeout_ms_ = 100;
  std::string mode_;
  OwnedFd reply_fd_;  // opened at setup (CAP_NET_RAW), when reflecting
  FrameReflector reflector_;
};

}  // namespace rateline::drivers
