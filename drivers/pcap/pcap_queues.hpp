// The pcap backend's queue: frames go to a classic pcap file instead of a
// wire. The engine fills `batch` slots as for any Ethernet backend; commit
// appends each frame behind a record header to an output buffer, stamped
// with the packet's own send stamp (read back from its payload, moved from
// CLOCK_MONOTONIC to the epoch by one offset taken at open, so intervals
// stay exact), and writes the buffer out when it holds 1 MiB: one write()
// per ~1 MiB, none per packet. One queue per file: FILE itself, or with
// --threads one worker's part of it (pcap_backend.cpp merges them).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/queue.hpp"

namespace rateline::drivers {

struct PcapTxConfig {
  int fd = -1;                   // open for writing, the file header already written; not owned
  uint32_t batch = 32;
  uint32_t frame_bytes = 0;      // largest frame
  uint32_t headers_len = 0;      // Ethernet + IP + UDP: where the payload (and its stamp) starts
  int64_t epoch_offset_ns = 0;   // CLOCK_REALTIME - CLOCK_MONOTONIC at open
};

class PcapTxQueue {
 public:
  static constexpr engine::Layer kLayer = engine::Layer::ethernet;
  static constexpr size_t kWriteBytes = 1 << 20;
  explicit PcapTxQueue(const PcapTxConfig& cfg);
  std::span<engine::TxSlot> reserve(uint32_t n) { return {slots_.data(), n < slots_.size() ? n : slots_.size()}; }
  engine::CommitResult commit(std::span<engine::TxSlot> s);
  void cancel(std::span<engine::TxSlot>) {}
  void reclaim() {}
  void flush();
  // Records that never reached the file (a write failed: full disk) and why.
  uint64_t lost() const { return lost_; }
  int error() const { return error_; }

 private:
  void write_out();  // the whole buffer; on failure its records are lost_ and error_ set

  PcapTxConfig cfg_;
  std::vector<uint8_t> buffer_;
  std::vector<engine::TxSlot> slots_;
  std::vector<uint8_t> out_;
  uint32_t out_records_ = 0;
  uint64_t lost_ = 0;
  int error_ = 0;
};

}  // namespace rateline::drivers
