// The sending worker's loop: burst, batch, fill in place, commit, pace.
//
// Per packet it writes the payload (header, pattern, checksum) and, for
// Ethernet-layer backends, the UDP checksum; headers are copied only into
// stale slots. One send stamp per batch: every packet carries a stamp, and
// the packets of a batch share the one read just before the batch is
// written (TSC-extended CLOCK_MONOTONIC where CLOCK_MONOTONIC runs on the
// TSC, else clock_gettime). A second read when the batch is written
// measures how far a stamp can precede its packet's hand-off to the
// backend: the run's mean and maximum are reported (TxResult).
// Per batch: one reserve, one commit (more only when the backend pushes
// back), one stop-flag load, the two clock reads; per burst one more read
// for pacing, progress and the in-burst rate. A batch carries one
// flow; flows take turns of one batch, carried over from burst to burst
// (engine/flow_schedule.hpp), so a batch is shorter where a turn ends
// inside a burst: at most one more commit per turn. A replay (pktgen
// --replay) runs the same burst loop over a capture's frames, copied whole.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>

#include "engine/burst_loop.hpp"
#include "engine/flow_schedule.hpp"
#include "engine/queue.hpp"
#include "engine/replay_source.hpp"
#include "engine/size_mix.hpp"
#include "engine/tx_plan.hpp"
#include "net/frame.hpp"
#include "stats/counters.hpp"
#include "util/clock.hpp"
#include "util/stamp_clock.hpp"

namespace rateline::engine {

namespace detail {

// Where the data payload goes in a slot. Ethernet-layer slots get the flow's
// headers only when they do not hold them already: a slot that is stale, or
// last carried another flow (backends keep one TxSlot per ring frame, so
// `flow` remembers what the frame holds).
template <TxQueue Q>
inline uint8_t* data_payload(TxSlot& s, const TxFlow& f) {
  if constexpr (Q::kLayer == Layer::ethernet) {
    if (s.stale || s.flow != f.queue_flow) {
      std::memcpy(s.data, f.headers.data(), f.headers_len);
      s.stale = false;
    }
    s.flow = f.queue_flow;
    return s.data + f.headers_len;
  } else {
    s.flow = f.queue_flow;
    return s.data;
  }
}

// End markers have their own length, so their own headers; the slot is left
// stale so that the next data packet in it rewrites the data headers.
template <TxQueue Q>
inline uint8_t* end_marker_payload(TxSlot& s, const TxFlow& f) {
  s.flow = f.queue_flow;
  if constexpr (Q::kLayer == Layer::ethernet) {
    std::memcpy(s.data, f.end_headers.data(), f.headers_len);
    s.stale = true;
    return s.data + f.headers_len;
  } else {
    return s.data;
  }
}

template <TxQueue Q>
inline void finish_frame(TxSlot& s, const TxFlow& f, uint32_t payload_len, bool ipv6) {
  if constexpr (Q::kLayer == Layer::ethernet) {
    s.len = f.headers_len + payload_len;
    net::udp_finish_checksum({s.data, s.len}, ipv6);
  } else {
    s.len = payload_len;
  }
}

// A data frame's UDP checksum from its headers' sum and the payload sum its
// writer kept, so the payload is not read a second time. The sum matches
// net::ones_sum's native loads on little-endian hosts only; big-endian ones
// re-read the payload.
template <TxQueue Q>
inline void finish_data_frame(TxSlot& s, uint32_t headers_len, uint64_t headers_sum, uint32_t payload_len, bool ipv6,
                              const wire::PayloadSums& sums) {
  if constexpr (Q::kLayer == Layer::ethernet) {
    s.len = headers_len + payload_len;
    if constexpr (std::endian::native == std::endian::little) {
      net::udp_store_checksum(s.data, headers_len, headers_sum, sums.ones);
    } else {
      net::udp_finish_checksum({s.data, s.len}, ipv6);
    }
  } else {
    s.len = payload_len;
  }
}

// A size mix's data payload: as data_payload, but the headers also carry the
// packet's lengths, so a slot that last held another size class gets them.
template <TxQueue Q>
inline uint8_t* mix_data_payload(TxSlot& s, const TxFlow& f, uint8_t size_class) {
  if constexpr (Q::kLayer == Layer::ethernet) {
    if (s.stale || s.flow != f.queue_flow || s.size_class != size_class) {
      std::memcpy(s.data, f.mix_headers[size_class].bytes.data(), f.headers_len);
      s.stale = false;
      s.size_class = size_class;
    }
    s.flow = f.queue_flow;
    return s.data + f.headers_len;
  } else {
    s.flow = f.queue_flow;
    return s.data;
  }
}

// Commits `slots` until all are taken, stop is set, or the backend stalls.
// Returns how many were taken; the rest are cancelled.
template <TxQueue Q>
inline uint32_t commit_all(Q& q, std::span<TxSlot> slots, stats::TxCounters& c, uint64_t stall_timeout_ns,
                           const std::atomic<bool>& stop, bool& stalled) {
  uint32_t done = 0;
  uint64_t stuck_since = 0;
  while (done < slots.size()) {
    const CommitResult r = q.commit(slots.subspan(done));
    done += r.taken;
    c.failed += r.failed;
    if (r.failed) c.last_error = r.error;
    if (r.taken) {
      stuck_since = 0;
      continue;
    }
    ++c.retries;
    q.reclaim();
    if (stop.load(std::memory_order_relaxed)) break;
    const uint64_t now = now_ns();
    if (!stuck_since) stuck_since = now;
    else if (now - stuck_since > stall_timeout_ns) {
      stalled = true;
      if (r.error) c.last_error = r.error;
      break;
    }
  }
  if (done < slots.size()) q.cancel(slots.subspan(done));
  return done;
}

// The batch's one send stamp and how long the batch took to write after it
// (the stamp's lead on the hand-off): the largest and their sum.
struct StampLead {
  uint64_t max_ns = 0, sum_ns = 0, batches = 0;
  void add(uint64_t lead_ns) {
    max_ns = std::max(max_ns, lead_ns);
    sum_ns += lead_ns;
    ++batches;
  }
};

// What fills the batches of the burst loop below: the engine's own data
// packets (DataSource, MixDataSource), or a capture's frames (ReplaySource).
// Per batch: the most slots it wants now (limit), fill them in place, then
// learn how many the backend took (took: returns their payload bytes).
template <TxQueue Q>
struct DataSource {
  TxPlan& plan;
  FlowSchedule& schedule;
  StampClock& stamps;
  TxFlow* f = nullptr;
  StampLead lead;

  uint64_t limit() const { return schedule.run_left(); }
  void fill(std::span<TxSlot> slots) {
    f = &plan.flows[schedule.flow()];
    const uint64_t batch_stamp = stamps.stamp();
    // Keyed or not is asked once per batch; the packet loop has no branch for it.
    if (plan.tag_bytes) [[unlikely]] fill_packets<true>(slots, batch_stamp);
    else fill_packets<false>(slots, batch_stamp);
    lead.add(stamps.now() - batch_stamp);
  }
  template <bool kTagged>
  void fill_packets(std::span<TxSlot> slots, uint64_t batch_stamp) {
    uint64_t seq = f->next_seq;
    const uint32_t tag = kTagged ? plan.tag_bytes : 0;
    for (TxSlot& s : slots) {
      uint8_t* p = data_payload<Q>(s, *f);
      wire::PayloadSums sums = wire::fill_data_payload(p + tag, plan.payload, f->stream, seq++, batch_stamp);
      if constexpr (kTagged) sums.ones += wire::put_tag(plan.tag_key, p, plan.payload.len);
      finish_data_frame<Q>(s, f->headers_len, f->udp_sum, tag + plan.payload.len, plan.ipv6, sums);
    }
  }
  uint64_t took(uint32_t taken) {
    f->next_seq += taken;  // cancelled slots give their sequence numbers back: no false gap
    schedule.advance(taken);
    return uint64_t{taken} * (plan.tag_bytes + plan.payload.len);
  }
};

// Data packets of a size mix: as DataSource, each packet the size its place
// in plan.mix_cycle names. The place moves on by what the backend took, as
// the sequence does, so the sizes sent follow the cycle exactly.
template <TxQueue Q>
struct MixDataSource {
  TxPlan& plan;
  FlowSchedule& schedule;
  StampClock& stamps;
  TxFlow* f = nullptr;
  StampLead lead;
  uint32_t cycle_at = 0;                // the next packet's place in the cycle
  std::vector<uint64_t> class_packets;  // sent per size class

  uint64_t limit() const { return schedule.run_left(); }
  void fill(std::span<TxSlot> slots) {
    f = &plan.flows[schedule.flow()];
    const uint64_t batch_stamp = stamps.stamp();
    if (plan.tag_bytes) [[unlikely]] fill_packets<true>(slots, batch_stamp);
    else fill_packets<false>(slots, batch_stamp);
    lead.add(stamps.now() - batch_stamp);
  }
  template <bool kTagged>
  void fill_packets(std::span<TxSlot> slots, uint64_t batch_stamp) {
    uint64_t seq = f->next_seq;
    uint32_t at = cycle_at;
    const uint32_t cycle = static_cast<uint32_t>(plan.mix_cycle.size());
    const uint32_t tag = kTagged ? plan.tag_bytes : 0;
    for (TxSlot& s : slots) {
      const uint8_t k = plan.mix_cycle[at];
      if (++at == cycle) at = 0;
      const wire::PayloadPlan& pl = plan.mix[k];
      uint8_t* p = mix_data_payload<Q>(s, *f, k);
      wire::PayloadSums sums = wire::fill_data_payload(p + tag, pl, f->stream, seq++, batch_stamp);
      if constexpr (kTagged) sums.ones += wire::put_tag(plan.tag_key, p, pl.len);
      const uint64_t headers_sum = Q::kLayer == Layer::ethernet ? f->mix_headers[k].udp_sum : 0;
      finish_data_frame<Q>(s, f->headers_len, headers_sum, tag + pl.len, plan.ipv6, sums);
    }
  }
  uint64_t took(uint32_t taken) {
    f->next_seq += taken;
    schedule.advance(taken);
    uint64_t bytes = 0;
    const uint32_t cycle = static_cast<uint32_t>(plan.mix_cycle.size());
    for (uint32_t i = 0; i < taken; ++i) {
      const uint8_t k = plan.mix_cycle[cycle_at];
      if (++cycle_at == cycle) cycle_at = 0;
      ++class_packets[k];
      bytes += plan.tag_bytes + plan.mix[k].len;
    }
    return bytes;
  }
};

// Bursts of batches (engine/burst_loop.hpp): per batch one reserve, one
// fill, one commit (more when the backend pushes back).
template <TxQueue Q, class Source>
void send_bursts(Q& q, const TxPlan& plan, Source& src, StampClock& stamps, pace::Pacer& pacer,
                 stats::TxCounters& c, TxResult& result, stats::TxSnapshotRing& snapshots,
                 const std::atomic<bool>& stop) {
  uint64_t reserve_stuck_since = 0;
  auto send_batches = [&](uint64_t burst) {
    uint64_t burst_left = burst;
    while (burst_left) {
      const uint32_t want = static_cast<uint32_t>(std::min<uint64_t>({burst_left, plan.batch, src.limit()}));
      std::span<TxSlot> slots = q.reserve(want);
      if (slots.empty()) {
        // No free slot: reap completions and retry, under the same stall guard as commits.
        q.reclaim();
        ++c.retries;
        if (stop.load(std::memory_order_relaxed)) break;
        const uint64_t t = now_ns();
        if (!reserve_stuck_since) reserve_stuck_since = t;
        else if (t - reserve_stuck_since > plan.stall_timeout_ns) { result.stalled = true; break; }
        continue;
      }
      reserve_stuck_since = 0;
      src.fill(slots);
      const uint32_t taken = commit_all(q, slots, c, plan.stall_timeout_ns, stop, result.stalled);
      c.payload_bytes += src.took(taken);
      c.packets += taken;
      burst_left -= taken;
      if (taken < slots.size()) break;  // stop or stall
    }
    return burst - burst_left;
  };
  // The burst's time: a TSC read where stamps are TSC-extended, cheaper than clock_gettime.
  engine::send_bursts(plan, plan.pace.burst, pacer, c, result, snapshots, stop, [&] { return stamps.now(); },
                      send_batches, [](stats::TxCounters&) {});
}

inline constexpr uint64_t kEndMarkerStallNs = 100'000'000;

// One flow's end marker through the queue: a slot (reaping completions for
// one if need be), the marker with the flow's total, one commit.
template <TxQueue Q>
void send_end_markers(Q& q, TxPlan& plan, stats::TxCounters& c, TxResult& result) {
  std::atomic<bool> no_stop{false};
  c.end_markers += engine::send_end_markers(plan, result, [&](TxFlow& f) -> uint64_t {
    std::span<TxSlot> slots = q.reserve(1);
    for (int tries = 0; slots.empty() && tries < 1000; ++tries) {
      q.reclaim();
      slots = q.reserve(1);
    }
    if (slots.empty()) return 0;
    TxSlot& s = slots[0];
    wire::EndMarkerBody body = plan.end_body;
    body.total_sent = f.next_seq;
    uint8_t* p = end_marker_payload<Q>(s, f);
    wire::fill_end_marker(p + plan.tag_bytes, plan.end_payload, f.stream, body, now_ns());
    if (plan.tag_bytes) wire::put_tag(plan.tag_key, p, plan.end_payload.len);
    finish_frame<Q>(s, f, plan.tag_bytes + plan.end_payload.len, plan.ipv6);
    bool stalled = false;
    return commit_all(q, slots, c, kEndMarkerStallNs, no_stop, stalled);
  });
}

}  // namespace detail


// Replays plan.replay's frames (pktgen --replay): paced as data packets,
// no end markers of its own (a capture of pktgen's carries its own). With
// plan.replay_stamps (--replay-stamp) its UDP frames carry our payload, and
// each of their flows ends with end markers of its own.
template <TxQueue Q>
TxResult run_replay(Q& q, TxPlan& plan, stats::TxSnapshotRing& snapshots, const std::atomic<bool>& stop) {
  stats::TxCounters c;
  TxResult result;
  pace::Pacer pacer(plan.pace);
  StampClock stamps;
  if (plan.replay_stamps) {
    detail::StampedReplaySource frames{*plan.replay, *plan.replay_stamps, stamps,
                                       std::vector<uint64_t>(plan.replay_stamps->flows.size(), 0)};
    detail::send_bursts(q, plan, frames, stamps, pacer, c, result, snapshots, stop);
    for (TxFlow& f : plan.flows) f.next_seq = frames.next_seq[f.stream];
    detail::send_end_markers(q, plan, c, result);
    result.flows = plan.flows;
  } else {
    detail::ReplaySource frames{*plan.replay};
    detail::send_bursts(q, plan, frames, stamps, pacer, c, result, snapshots, stop);
  }
  q.flush();
  publish(snapshots, c, pacer, now_ns(), true);
  result.counters = c;
  result.stamp_clock_breaks = stamps.rate_breaks();
  return result;
}

template <TxQueue Q>
TxResult run_tx(Q& q, TxPlan plan, stats::TxSnapshotRing& snapshots, const std::atomic<bool>& stop) {
  if constexpr (Q::kLayer == Layer::ethernet) {
    if (plan.replay) return run_replay(q, plan, snapshots, stop);  // once per run, not per packet
  }
  stats::TxCounters c;
  TxResult result;
  pace::Pacer pacer(plan.pace);
  StampClock stamps;  // one send stamp per batch (util/stamp_clock.hpp)
  detail::StampLead lead;
  if constexpr (Q::kLayer == Layer::ethernet) {
    for (TxFlow& f : plan.flows) f.udp_sum = net::udp_headers_sum({f.headers.data(), f.headers_len}, plan.ipv6);
  }
  // Turns of one batch per flow, carried across bursts (engine/flow_schedule.hpp).
  FlowSchedule schedule(static_cast<uint32_t>(plan.flows.size()), plan.batch, plan.quota, plan.flow_shuffle_seed);
  if (plan.mix.empty()) {
    detail::DataSource<Q> data{plan, schedule, stamps, nullptr, {}};
    detail::send_bursts(q, plan, data, stamps, pacer, c, result, snapshots, stop);
    lead = data.lead;
  } else {
    if constexpr (Q::kLayer == Layer::ethernet) {
      for (TxFlow& f : plan.flows)
        for (TxFlow::SizedHeaders& h : f.mix_headers) h.udp_sum = net::udp_headers_sum({h.bytes.data(), f.headers_len}, plan.ipv6);
    }
    detail::MixDataSource<Q> data{plan, schedule, stamps, nullptr, {}, 0, std::vector<uint64_t>(plan.mix.size(), 0)};
    detail::send_bursts(q, plan, data, stamps, pacer, c, result, snapshots, stop);
    lead = data.lead;
    result.mix_packets = std::move(data.class_packets);
  }

  detail::send_end_markers(q, plan, c, result);
  q.flush();
  publish(snapshots, c, pacer, now_ns(), true);
  result.counters = c;
  result.stamp_clock_breaks = stamps.rate_breaks();
  result.stamp_lead_max_ns = lead.max_ns;
  result.stamp_lead_sum_ns = lead.sum_ns;
  result.stamped_batches = lead.batches;
  result.flows = std::move(plan.flows);
  return result;
}

}  // namespace rateline::engine
