// The receiver's streams, keyed by who sent them: (source address and port,
// the header's sender id, the header's stream id). Packets from another
// address, port or run never touch a stream's counts.
//
// Memory is bounded and known up front: at most `max_streams` states, in a
// vector reserved once (address space only; the pages are touched as streams
// appear, so a quiet run costs what it uses), and an open-addressing index of
// 2 x max_streams slots. Lookups never allocate; a stream beyond the bound is
// refused (the caller counts it as unknown_stream). The last hit is cached:
// a batch usually comes from one stream.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "net/sender_address.hpp"

namespace rateline::engine {

struct StreamKey {
  net::SenderAddress from;
  uint16_t sender = 0;  // the header's sender id (one per pktgen run)
  uint16_t stream = 0;  // the header's stream id
  bool operator==(const StreamKey&) const = default;
  uint64_t hash() const {
    uint64_t h = from.fold() ^ (uint64_t{sender} << 16 | stream) * 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
  }
};

// An index over `states` (owned by the caller, e.g. a worker's result, so
// that stays a plain value). `State` must have a `key` member (StreamKey).
template <class State>
class StreamTable {
 public:
  StreamTable(std::vector<State>& states, uint32_t max_streams)
      : max_(max_streams), mask_(std::bit_ceil(std::max<uint32_t>(2 * max_streams, 4)) - 1), index_(mask_ + 1, 0),
        states_(states) {
    states_.clear();
    states_.reserve(max_streams);
  }

  // The stream's state, created on first use; nullptr when the table is full.
  State* find_or_add(const StreamKey& k, bool& created) {
    created = false;
    if (last_ && last_->key == k) [[likely]] return last_;
    for (uint64_t i = k.hash() & mask_;; i = (i + 1) & mask_) {
      const uint32_t slot = index_[i];
      if (slot == 0) {
        if (states_.size() >= max_) return nullptr;
        states_.emplace_back();  // within the reserved capacity: never moves the others
        states_.back().key = k;
        index_[i] = static_cast<uint32_t>(states_.size());
        created = true;
        return last_ = &states_.back();
      }
      if (states_[slot - 1].key == k) return last_ = &states_[slot - 1];
    }
  }

  uint32_t max_streams() const { return max_; }

 private:
  uint32_t max_;
  uint64_t mask_;
  std::vector<uint32_t> index_;  // 0 empty, else 1 + position in states_
  std::vector<State>& states_;
  State* last_ = nullptr;
};

}  // namespace rateline::engine
