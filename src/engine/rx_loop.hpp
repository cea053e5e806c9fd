// The receiving worker's loop: poll a batch, classify and track each frame,
// release the batch, publish a snapshot now and then.
//
// Per frame: (Ethernet-layer backends) parse to the UDP payload and check
// the port, then decode our header and verify the payload checksum (every
// byte is read: that is the corruption check), then one sequence-tracker
// update and one latency sample. Stream state is a flat array sized at
// setup: no lookup structure, no allocation.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <vector>

#include "engine/queue.hpp"
#include "net/frame.hpp"
#include "stats/counters.hpp"
#include "stats/latency.hpp"
#include "stats/sequence_tracker.hpp"
#include "util/clock.hpp"
#include "wire/test_payload.hpp"

namespace rateline::engine {

struct RxStreamState {
  stats::SequenceTracker seq;
  stats::LatencyHistogram latency;
  stats::JitterEstimator jitter;
  uint64_t payload_bytes = 0;
  uint64_t corrupt = 0;
  uint64_t clock_behind = 0;  // samples with rx < tx: clocks not shared
  uint64_t first_ns = 0;
  uint64_t last_ns = 0;
  uint32_t payload_len = 0;   // of the last data packet
  bool seen = false;
  bool ended = false;
  wire::EndMarkerBody end;
};

struct RxPlan {
  uint32_t batch = 64;
  uint32_t max_streams = 256;
  uint16_t udp_port = 0;  // Ethernet-layer backends: our destination port
  uint64_t publish_every_ns = 100'000'000;
  // TEST AID only (rx --test-slow-us): sleep this long after each non-empty batch, to make
  // a slow consumer on purpose (tests of the drop ledger). 0 in every real run.
  uint64_t test_slow_ns = 0;
};

struct RxResult {
  stats::RxCounters counters;
  std::vector<RxStreamState> streams;  // index = stream id
};

namespace detail {

inline void account(RxResult& st, const uint8_t* payload, uint32_t len, uint64_t rx_ns, uint32_t max_streams) {
  stats::RxCounters& c = st.counters;
  const wire::Decoded d = wire::decode(payload, len);
  switch (d.verdict) {
    case wire::Verdict::data: {
      if (d.stream >= max_streams) [[unlikely]] {
        ++c.unknown_stream;
        return;
      }
      RxStreamState& s = st.streams[d.stream];
      if (!s.seen) [[unlikely]] {
        s.seen = true;
        s.first_ns = rx_ns;
        ++c.streams_seen;
        if (!c.first_ns) c.first_ns = rx_ns;
      }
      s.seq.record(d.seq);
      s.payload_bytes += len;
      s.payload_len = len;
      s.last_ns = rx_ns;
      if (rx_ns >= d.tx_ns) [[likely]] s.latency.record(rx_ns - d.tx_ns);
      else ++s.clock_behind;
      s.jitter.record(d.tx_ns, rx_ns);
      ++c.data;
      c.payload_bytes += len;
      c.last_ns = rx_ns;
      return;
    }
    case wire::Verdict::end: {
      ++c.end_markers;
      if (d.stream >= max_streams) {
        ++c.unknown_stream;
        return;
      }
      RxStreamState& s = st.streams[d.stream];
      if (!s.seen) {
        s.seen = true;
        ++c.streams_seen;
      }
      if (!s.ended) {
        s.ended = true;
        s.end = d.end;
        ++c.streams_ended;
        if (d.end.stream_count > c.stream_count) c.stream_count = d.end.stream_count;
      }
      return;
    }
    case wire::Verdict::foreign: ++c.foreign; return;
    case wire::Verdict::malformed: ++c.malformed; return;
    case wire::Verdict::corrupt:
      ++c.corrupt;
      if (d.stream < max_streams) ++st.streams[d.stream].corrupt;
      return;
  }
}

}  // namespace detail

inline uint64_t lost_so_far(const RxResult& st) {
  uint64_t lost = 0;
  for (const auto& s : st.streams)
    if (s.seen) lost += s.ended ? s.seq.lost_given_total(s.end.total_sent) : s.seq.lost_so_far();
  return lost;
}

// `backend_drops` is read once per snapshot (SO_RXQ_OVFL and the like).
template <RxQueue Q, class DropsFn>
RxResult run_rx(Q& q, const RxPlan& plan, stats::RxSnapshotRing& snapshots, const std::atomic<bool>& stop,
                DropsFn backend_drops) {
  RxResult st;
  st.streams.resize(plan.max_streams);
  stats::RxCounters& c = st.counters;
  uint64_t next_publish_ns = now_ns() + plan.publish_every_ns;
  auto publish = [&](uint64_t now, bool final) {
    c.lost_so_far = lost_so_far(st);
    c.backend_drops = backend_drops();
    snapshots.try_push({c, now, final});
  };

  while (!stop.load(std::memory_order_relaxed)) {
    const std::span<const RxFrame> frames = q.poll(plan.batch);
    const uint64_t rx_ns = now_ns();
    for (const RxFrame& f : frames) {
      ++c.frames;
      if constexpr (Q::kLayer == Layer::ethernet) {
        const net::ParsedUdp p = net::parse_udp_frame({f.data, f.len});
        if (p.status != net::ParseStatus::ok || p.dst_port != plan.udp_port) {
          ++c.foreign;
          continue;
        }
        detail::account(st, f.data + p.payload_offset, p.payload_len, rx_ns, plan.max_streams);
      } else {
        detail::account(st, f.data, f.len, rx_ns, plan.max_streams);
      }
    }
    if (!frames.empty()) q.release();
    if (plan.test_slow_ns && !frames.empty()) [[unlikely]] {
      const timespec ts{static_cast<time_t>(plan.test_slow_ns / 1'000'000'000), static_cast<long>(plan.test_slow_ns % 1'000'000'000)};
      nanosleep(&ts, nullptr);
    }
    if (rx_ns >= next_publish_ns) {
      publish(rx_ns, false);
      next_publish_ns = rx_ns + plan.publish_every_ns;
    }
  }
  publish(now_ns(), true);
  c.lost_so_far = lost_so_far(st);
  c.backend_drops = backend_drops();
  return st;
}

}  // namespace rateline::engine
