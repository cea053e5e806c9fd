// When the run is over by the senders' own word: every stream that arrived
// has a believed end marker, every sender (source address + sender id) has
// as many ended streams as it announced, as many senders as --expect-senders
// have been heard, and nothing has arrived for a moment (a marker never ends
// a run while its stream is still arriving). Fed by the workers' stream
// events (engine::StreamEvent), on the main thread, never per packet.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <utility>

#include "engine/rx_loop.hpp"

namespace rateline::rx {

class RunEnd {
 public:
  void add(const engine::StreamEvent& e) {
    Stream& s = streams_[key_bytes(e.key)];
    Sender& g = senders_[sender_of(e.key)];
    if (!s.counted) {
      s.counted = true;
      ++g.streams;
    }
    if (e.ended != s.ended) {
      s.ended = e.ended;
      g.ended += e.ended ? 1 : -1;
    }
    if (e.ended) g.announced = std::max<uint32_t>(g.announced, e.stream_count);
  }

  size_t senders() const { return senders_.size(); }

  bool all_ended(uint32_t expect_senders) const {
    if (senders_.empty() || senders_.size() < expect_senders) return false;
    for (const auto& [k, g] : senders_)
      if (g.ended != static_cast<int64_t>(g.streams) || g.streams < g.announced) return false;
    return true;
  }

 private:
  struct Stream {
    bool counted = false, ended = false;
  };
  struct Sender {
    uint32_t streams = 0, announced = 0;
    int64_t ended = 0;
  };
  using Key = std::pair<std::pair<uint64_t, uint64_t>, uint64_t>;
  static Key key_bytes(const engine::StreamKey& k) {
    uint64_t hi, lo;
    std::memcpy(&hi, k.from.ip.data(), 8);
    std::memcpy(&lo, k.from.ip.data() + 8, 8);
    return {{hi, lo}, uint64_t{k.from.port} << 32 | uint64_t{k.sender} << 16 | k.stream};
  }
  static Key sender_of(const engine::StreamKey& k) {
    Key b = key_bytes(k);
    b.second = k.sender;
    return b;
  }
  std::map<Key, Stream> streams_;
  std::map<Key, Sender> senders_;
};

}  // namespace rateline::rx
