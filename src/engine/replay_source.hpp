// What fills the burst loop's batches when pktgen replays a capture
// (--replay): its frames byte for byte, or (--replay-stamp) with a data
// payload of ours in each UDP frame that has room for one
// (engine/replay_stamps.hpp).
#pragma once

#include <cstring>
#include <span>
#include <vector>

#include "engine/queue.hpp"
#include "engine/replay_stamps.hpp"
#include "net/frame.hpp"
#include "net/pcap_file.hpp"
#include "util/stamp_clock.hpp"
#include "wire/test_payload.hpp"

namespace rateline::engine::detail {

// A capture's frames, byte for byte, in file order, from the first again
// after the last (plan.quota counts frames; 0 with no duration = the file
// once). Each slot gets a whole frame: nothing is patched, so slots are
// left stale for whatever the queue carries next.
struct ReplaySource {
  const net::PcapFrames& frames;
  size_t next = 0;  // the file's frame that goes next

  uint64_t limit() const { return ~0ull; }
  void fill(std::span<TxSlot> slots) const {
    size_t k = next;
    for (TxSlot& s : slots) {
      const std::span<const uint8_t> f = frames.frame(k);
      std::memcpy(s.data, f.data(), f.size());  // setup sized every slot for the longest frame
      s.len = static_cast<uint32_t>(f.size());
      s.flow = 0;
      s.stale = true;
      if (++k == frames.size()) k = 0;
    }
  }
  uint64_t took(uint32_t taken) {  // whole frames: a capture's frames need not be UDP
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < taken; ++i) {
      bytes += frames.frame(next).size();
      if (++next == frames.size()) next = 0;
    }
    return bytes;
  }
};

// The capture's frames as ReplaySource sends them, each stamped UDP frame
// with our data payload (its flow's stream, the flow's next sequence, the
// batch's stamp) and its UDP checksum computed afresh. Sequences of slots the
// backend did not take are given back, as DataSource does.
struct StampedReplaySource {
  const net::PcapFrames& frames;
  const ReplayStamps& stamps_plan;
  StampClock& stamps;
  std::vector<uint64_t> next_seq;  // per flow: sequences handed out so far = the next one
  size_t next = 0;                 // the file's frame that goes next
  uint32_t filled = 0;             // slots the last fill() wrote

  uint64_t limit() const { return ~0ull; }
  void fill(std::span<TxSlot> slots) {
    size_t k = next;
    const uint64_t batch_stamp = stamps.stamp();
    for (TxSlot& s : slots) {
      const std::span<const uint8_t> f = frames.frame(k);
      std::memcpy(s.data, f.data(), f.size());
      s.len = static_cast<uint32_t>(f.size());
      s.flow = 0;
      s.stale = true;
      const ReplayStamps::Frame& st = stamps_plan.frames[k];
      if (st.flow != ReplayStamps::kAsIs) {
        wire::fill_data_payload(s.data + st.parsed.payload_offset, stamps_plan.plans[st.plan], st.flow,
                                next_seq[st.flow]++, batch_stamp);
        net::udp_refresh_checksum({s.data, s.len}, st.parsed);
      }
      if (++k == frames.size()) k = 0;
    }
    filled = static_cast<uint32_t>(slots.size());
  }
  uint64_t took(uint32_t taken) {
    uint64_t bytes = 0;
    size_t k = next;
    for (uint32_t i = 0; i < filled; ++i) {
      if (i < taken) bytes += frames.frame(k).size();
      else if (const uint16_t flow = stamps_plan.frames[k].flow; flow != ReplayStamps::kAsIs) --next_seq[flow];
      if (++k == frames.size()) k = 0;
      if (i + 1 == taken) next = k;
    }
    return bytes;
  }
};

}  // namespace rateline::engine::detail
