// The null backend's queues: the engine's own cost per packet, with no I/O
// under it (DPDK's net_null, in our terms).
//
// TX: the engine writes whole frames (headers, payload, UDP checksum) into
// `batch` slots; commit takes them all and sends nothing.
// RX: `batch` frames built once as pktgen would send them (Ethernet, IP, UDP
// to rx's port; one stream per worker from 192.0.2.1, TEST-NET-1); each
// poll rewrites their payloads with the next sequences, a fresh send stamp
// and correct checksums, so the receive loop checks every byte as it would
// for a real peer. Never blocks, never drops; with a quota it stops after
// exactly that many frames, as a peer that sent --count would.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/queue.hpp"
#include "net/frame.hpp"
#include "wire/packet_tag.hpp"
#include "wire/test_payload.hpp"

namespace rateline::drivers {

class NullTxQueue {
 public:
  static constexpr engine::Layer kLayer = engine::Layer::ethernet;
  NullTxQueue(uint32_t batch, uint32_t frame_bytes);
  std::span<engine::TxSlot> reserve(uint32_t n) { return {slots_.data(), n < slots_.size() ? n : slots_.size()}; }
  engine::CommitResult commit(std::span<engine::TxSlot> s) { return {static_cast<uint32_t>(s.size()), 0, 0}; }
  void cancel(std::span<engine::TxSlot>) {}
  void reclaim() {}
  void flush() {}

 private:
  std::vector<uint8_t> buffer_;
  std::vector<engine::TxSlot> slots_;
};

struct NullRxConfig {
  net::UdpEndpoints endpoints;  // the synthetic peer towards rx
  bool ipv6 = false;
  uint32_t payload_bytes = 1400;
  uint16_t stream = 0;          // one stream per worker
  uint16_t sender_id = 1;
  uint32_t batch = 64;
  uint64_t frames = 0;          // this worker's share of rx --count; 0 = endless
  std::optional<wire::PacketKey> tag_key;  // rx --key-file: payloads start with its tag
};

class NullRxQueue {
 public:
  static constexpr engine::Layer kLayer = engine::Layer::ethernet;
  explicit NullRxQueue(const NullRxConfig& cfg);
  std::span<const engine::RxFrame> poll(uint32_t n);
  void release() {}
  uint64_t drops() const { return 0; }

 private:
  NullRxConfig cfg_;
  uint32_t tag_bytes_;         // before each payload's test payload (rx --key-file)
  wire::PayloadPlan payload_;  // the test payload after the tag
  uint32_t headers_len_ = 0;
  uint64_t headers_sum_ = 0;
  uint64_t next_seq_ = 0;
  std::vector<uint8_t> buffer_;
  std::vector<engine::RxFrame> frames_;
};

}  // namespace rateline::drivers
