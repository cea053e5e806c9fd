// rx --pcap-out: a worker's copies of the first frames it received and of
// every bad one after them (corrupt, malformed, a wrong UDP checksum), for a
// look in Wireshark. All memory is taken when the run is set up; the receive
// loop offers a frame only when the run keeps any (one predictable branch
// per frame otherwise), and a copy is one memcpy into the next free slot.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "net/sender_address.hpp"

namespace rateline::engine {

struct KeptFrame {
  uint64_t rx_ns = 0;           // CLOCK_MONOTONIC
  uint32_t kept_len = 0;        // bytes copied (as received, at most the slot's size)
  bool bad = false;             // counted corrupt, malformed or bad_udp_checksum
  bool payload_only = false;    // a socket backend's UDP payload: the file gets headers made for it
  net::SenderAddress from;      // payload_only: who sent it
  const uint8_t* bytes = nullptr;
};

// Room for bad frames after the first ones: at least this many, or `first`.
inline constexpr uint32_t kKeptBadFramesMin = 1000;
constexpr uint32_t kept_bad_room(uint32_t first) { return first > kKeptBadFramesMin ? first : kKeptBadFramesMin; }

// The memory one keeper takes (rx checks it against the host's at parse time).
constexpr uint64_t frame_keeper_bytes(uint32_t first, uint32_t slot_bytes) {
  return (uint64_t{first} + kept_bad_room(first)) * slot_bytes;
}

class FrameKeeper {
 public:
  // `first`: frames kept from the start; then bad ones, up to
  // max(first, kKeptBadFramesMin); `slot_bytes`: the longest frame kept whole.
  FrameKeeper(uint32_t first, uint32_t slot_bytes)
      : first_(first), bad_room_(kept_bad_room(first)), slot_bytes_(slot_bytes),
        // Not zeroed: the pages are touched only as frames are kept.
        store_(std::make_unique_for_overwrite<uint8_t[]>((size_t{first} + bad_room_) * slot_bytes)) {
    frames_.reserve(size_t{first} + bad_room_);
  }

  bool wants(bool bad) const { return first_kept_ < first_ || (bad && bad_kept_ < bad_room_); }

  void offer(const uint8_t* data, uint32_t len, uint64_t rx_ns, bool bad, bool payload_only, const net::SenderAddress& from) {
    if (!wants(bad)) {
      if (bad) ++bad_not_kept_;
      return;
    }
    if (first_kept_ < first_) ++first_kept_;
    else ++bad_kept_;
    uint8_t* slot = store_.get() + frames_.size() * slot_bytes_;
    const uint32_t n = len < slot_bytes_ ? len : slot_bytes_;
    std::memcpy(slot, data, n);
    frames_.push_back({rx_ns, n, bad, payload_only, from, slot});  // reserved: never reallocates
  }

  const std::vector<KeptFrame>& frames() const { return frames_; }
  uint64_t bad_not_kept() const { return bad_not_kept_; }

 private:
  uint32_t first_, bad_room_, slot_bytes_;
  std::unique_ptr<uint8_t[]> store_;
  std::vector<KeptFrame> frames_;
  uint32_t first_kept_ = 0, bad_kept_ = 0;
  uint64_t bad_not_kept_ = 0;
};

}  // namespace rateline::engine
