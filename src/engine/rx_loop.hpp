// The receiving worker's loop: poll a batch, classify and track each frame,
// release the batch, publish a snapshot now and then.
//
// Per frame: (Ethernet-layer backends) parse to the UDP payload and check
// the port, then decode our header and verify the payload checksum (every
// byte is read: that is the corruption check), then find the stream by who
// sent it (stream_table.hpp: no allocation after setup), one
// sequence-tracker update and one latency sample.
//
// Nothing one datagram says is taken on its word alone: a far sequence jump
// waits for a second arrival (sequence_tracker.hpp), and an end marker is
// evidence, weighed against the other copies and against what arrived
// (EndEvidence below). A stranger's datagrams land in a stream of their own.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <ctime>
#include <limits>
#include <optional>
#include <vector>

#include "engine/queue.hpp"
#include "engine/stream_table.hpp"
#include "net/frame.hpp"
#include "ring/spsc_ring.hpp"
#include "stats/counters.hpp"
#include "engine/frame_keeper.hpp"
#include "stats/latency.hpp"
#include "stats/sequence_tracker.hpp"
#include "util/clock.hpp"
#include "wire/decode.hpp"
#include "wire/packet_tag.hpp"
#include "wire/test_payload.hpp"

namespace rateline::engine {

// The end markers a stream received. pktgen sends several identical copies;
// a total is believed when two copies agree (or one copy claims no more than
// arrived, so it cannot add loss), it is no smaller than a sequence seen,
// and no other total has as many copies. Anything else is `implausible`.
struct EndEvidence {
  wire::EndMarkerBody candidate[2];
  uint32_t votes[2] = {0, 0};
  uint64_t copies = 0;  // every marker that passed the checksum
  uint64_t implausible = 0;  // copies that could not be believed (below a sequence seen, a third total)
};

struct RxStreamState {
  StreamKey key;
  stats::SequenceTracker seq;
  stats::LatencyHistogram latency;
  stats::JitterEstimator jitter;
  uint64_t payload_bytes = 0;
  uint64_t corrupt = 0;
  uint64_t clock_behind = 0;  // samples with rx < tx: another clock, or this one read a little off (below)
  uint64_t max_behind_ns = 0; // how far the worst of them was: the kernel's wall-clock stamps, turned into
                              // CLOCK_MONOTONIC with an offset read per batch, can land a few us early
  uint64_t first_ns = 0;
  uint64_t last_ns = 0;
  uint32_t payload_len = 0;   // of the last data packet
  bool seen = false;
  bool ended = false;         // an end marker total is believed (`end`)
  wire::EndMarkerBody end;
  EndEvidence markers;
};

// The most one stream costs a worker: its state plus its index slots
// (stream_table.hpp: up to 4 per stream after rounding to a power of two).
inline constexpr uint64_t kStreamStateBytes = sizeof(RxStreamState) + 4 * sizeof(uint32_t);

// What the main thread needs to decide that every sender has finished:
// a stream appeared, or its end became believed / was withdrawn. Sent on a
// per-worker ring, once per stream and change, never per packet.
struct StreamEvent {
  StreamKey key;
  uint16_t stream_count = 0;  // announced by the believed marker
  bool ended = false;
};
using StreamEventRing = ring::SpscRing<StreamEvent>;

struct RxPlan {
  uint32_t batch = 64;
  uint32_t max_streams = 256;
  uint16_t udp_port = 0;  // Ethernet-layer backends: our destination port, the first of
  uint16_t udp_port_count = 1;  // these (rx --port A-B)
  // rx --max-size: a longer UDP payload is malformed. The socket layers cut a
  // datagram at their slot (max + 1 bytes, io_uring up to 7 more), so this
  // is what makes the limit the same on every backend.
  uint32_t max_payload_bytes = std::numeric_limits<uint32_t>::max();
  uint64_t publish_every_ns = 100'000'000;
  StreamEventRing* events = nullptr;  // optional: rx's end-of-run bookkeeping
  // TEST AID only (rx --test-slow-us): sleep this long after each non-empty batch, to make
  // a slow consumer on purpose (tests of the drop ledger). 0 in every real run.
  uint64_t test_slow_ns = 0;
  FrameKeeper* keep = nullptr;  // rx --pcap-out: copies of the first and the bad frames; null in most runs
  // rx --reflect: every Nth data packet (counted per worker) goes back to its
  // sender unchanged, for the sender's round-trip time (pktgen --rtt). 0: off.
  uint32_t reflect_every = 0;
  // rx --key-file: only payloads that start with this key's tag are decoded
  // (wire/packet_tag.hpp); the rest are `unauthenticated`. Unset: no tags.
  std::optional<wire::PacketKey> tag_key;
};

struct RxResult {
  stats::RxCounters counters;
  std::vector<RxStreamState> streams;  // in order of first arrival; each knows its key
  // Data packets (duplicates included) by UDP payload length: index = length.
  // Sized once for the longest payload the plan accepts, so a size mix is
  // counted per size with one increment per packet, no search. Empty where
  // the counting runs in the kernel (xdp).
  std::vector<uint64_t> packets_by_size;

  // The first stream with this header stream id (tests, single-sender tools).
  const RxStreamState* find(uint16_t stream) const {
    for (const RxStreamState& s : streams)
      if (s.key.stream == stream) return &s;
    return nullptr;
  }
};

namespace detail {

inline bool same_body(const wire::EndMarkerBody& a, const wire::EndMarkerBody& b) {
  return a.total_sent == b.total_sent && a.stream_count == b.stream_count && a.count == b.count &&
         a.burst == b.burst && a.delay_ns == b.delay_ns && a.data_size == b.data_size &&
         a.clock_id == b.clock_id;
}

// Which candidate, if any, is believed now (-1: none).
inline int believed(const RxStreamState& s) {
  const EndEvidence& e = s.markers;
  const uint64_t next = s.seq.counts().highest_next;
  int best = -1;
  for (int i = 0; i < 2; ++i) {
    if (!e.votes[i] || e.candidate[i].total_sent < next) continue;
    const bool quorum = e.votes[i] >= 2 || e.candidate[i].total_sent == next;
    if (quorum && e.votes[i] > e.votes[1 - i]) best = i;
  }
  return best;
}

inline void publish_end_state(RxStreamState& s, stats::RxCounters& c, StreamEventRing* events) {
  const int b = believed(s);
  const bool now_ended = b >= 0;
  if (now_ended) s.end = s.markers.candidate[b];
  if (now_ended == s.ended) return;
  s.ended = now_ended;
  if (now_ended) ++c.streams_ended;
  else --c.streams_ended;
  if (events && !events->try_push({s.key, now_ended ? s.end.stream_count : uint16_t{0}, now_ended}))
    ++c.events_lost;
}

inline void weigh_end_marker(RxStreamState& s, const wire::EndMarkerBody& body, stats::RxCounters& c,
                             StreamEventRing* events) {
  EndEvidence& e = s.markers;
  ++e.copies;
  if (body.total_sent < s.seq.counts().highest_next) {
    ++e.implausible;  // claims fewer than a sequence that arrived
  } else if (e.votes[0] && same_body(e.candidate[0], body)) {
    ++e.votes[0];
  } else if (e.votes[1] && same_body(e.candidate[1], body)) {
    ++e.votes[1];
  } else if (!e.votes[0]) {
    e.candidate[0] = body;
    e.votes[0] = 1;
  } else if (!e.votes[1]) {
    e.candidate[1] = body;
    e.votes[1] = 1;
  } else {
    ++e.implausible;  // a third story: none of them is believed over it
  }
  publish_end_state(s, c, events);
}

// A data packet at or beyond a believed total: that total was wrong.
inline void withdraw_end(RxStreamState& s, stats::RxCounters& c, StreamEventRing* events) {
  EndEvidence& e = s.markers;
  for (int i = 0; i < 2; ++i)
    if (e.votes[i] && e.candidate[i].total_sent <= s.seq.counts().highest_next - 1) {
      e.implausible += e.votes[i];
      e.votes[i] = 0;
    }
  publish_end_state(s, c, events);
}

struct StreamLookup {
  StreamTable<RxStreamState>& table;
  StreamEventRing* events;
  const wire::PacketKey* tag_key;  // RxPlan::tag_key
};

// `len` is the whole UDP payload, tag included: what the sender counted.
inline void account(RxResult& st, StreamLookup& streams, const net::SenderAddress& from, const uint8_t* payload,
                    uint32_t len, uint64_t rx_ns) {
  stats::RxCounters& c = st.counters;
  const uint8_t* test_payload = payload;
  uint32_t test_len = len;
  if (streams.tag_key) [[unlikely]] {
    // Nothing without the key's tag reaches the decoder, so nothing it says
    // touches a stream: a stranger cannot even make one.
    if (!wire::tag_ok(*streams.tag_key, payload, len)) {
      ++c.unauthenticated;
      return;
    }
    test_payload += wire::kTagBytes;
    test_len -= wire::kTagBytes;
  }
  wire::Decoded d = wire::decode(test_payload, test_len);
  if (d.short_form) [[unlikely]] d.tx_ns = wire::extend_stamp48(d.tx_ns, rx_ns);
  if (d.verdict == wire::Verdict::foreign) [[unlikely]] {
    ++c.foreign;
    return;
  }
  if (d.verdict == wire::Verdict::malformed) [[unlikely]] {
    ++c.malformed;
    return;
  }
  bool created = false;
  RxStreamState* sp = streams.table.find_or_add({from, d.sender, d.stream}, created);
  if (!sp) [[unlikely]] {
    ++c.unknown_stream;
    if (d.verdict == wire::Verdict::corrupt) ++c.corrupt;
    if (d.verdict == wire::Verdict::end) ++c.end_markers;
    return;
  }
  RxStreamState& s = *sp;
  if (created) [[unlikely]] ++c.streams_created;
  // Seen: a stream whose header passed the checksum (a corrupt one may carry
  // a flipped stream id). The main thread hears of it with its first data
  // packet or once its end is believed: a lone marker makes it wait for nothing.
  auto mark_seen = [&](bool data) {
    s.seen = true;
    ++c.streams_seen;
    if (data && streams.events && !streams.events->try_push({s.key, 0, false})) ++c.events_lost;
  };
  switch (d.verdict) {
    case wire::Verdict::data: {
      if (!s.seen) [[unlikely]] {
        mark_seen(true);
        s.first_ns = rx_ns;
        if (!c.first_ns) c.first_ns = rx_ns;
      }
      s.seq.record(d.seq);
      if (s.ended && d.seq >= s.end.total_sent) [[unlikely]] withdraw_end(s, c, streams.events);
      s.payload_bytes += len;
      s.payload_len = len;
      ++st.packets_by_size[len];  // len <= max_payload_bytes, for which run_rx sized it
      s.last_ns = rx_ns;
      if (rx_ns >= d.tx_ns) [[likely]] s.latency.record(rx_ns - d.tx_ns);
      else {
        ++s.clock_behind;
        if (d.tx_ns - rx_ns > s.max_behind_ns) s.max_behind_ns = d.tx_ns - rx_ns;
      }
      s.jitter.record(d.tx_ns, rx_ns);
      ++c.data;
      c.payload_bytes += len;
      c.last_ns = rx_ns;
      return;
    }
    case wire::Verdict::end: {
      ++c.end_markers;
      if (!s.seen) mark_seen(false);
      weigh_end_marker(s, d.end, c, streams.events);
      if (s.ended && s.end.stream_count > c.stream_count) c.stream_count = s.end.stream_count;
      return;
    }
    case wire::Verdict::corrupt:
      ++c.corrupt;
      ++s.corrupt;
      return;
    default: return;
  }
}

// The sender as the frame's own IP and UDP headers name it.
inline net::SenderAddress frame_sender(const uint8_t* frame, const net::ParsedUdp& p) {
  return p.ipv6 ? net::SenderAddress::v6(frame + p.l3_offset + 8, p.src_port)
                : net::SenderAddress::v4(frame + p.l3_offset + 12, p.src_port);
}

// One frame or datagram through the checks and into its stream's state.
template <Layer L>
inline void take_frame(RxResult& st, StreamLookup& streams, const RxPlan& plan, const RxFrame& f, uint64_t rx_ns) {
  stats::RxCounters& c = st.counters;
  ++c.frames;
  if constexpr (L == Layer::ethernet) {
    const net::ParsedUdp p = net::parse_udp_frame({f.data, f.len});
    if (p.status != net::ParseStatus::ok || uint16_t(p.dst_port - plan.udp_port) >= plan.udp_port_count) [[unlikely]] {
      // A fragment is not someone else's traffic: it may be ours, cut up on the way.
      if (p.status == net::ParseStatus::fragment) ++c.fragments;
      else ++c.foreign;
      return;
    }
    if (p.payload_len > plan.max_payload_bytes) [[unlikely]] {
      ++c.malformed;
      return;
    }
    // The kernel drops a datagram whose UDP checksum is wrong before a
    // socket sees it; a raw receiver checks it here, unless the device
    // checked it or the frame never left this host (its checksum left
    // for a device to fill in: counted, as it cannot be checked). For
    // the short form it is the only integrity check; for the long form
    // a second one, over the headers too.
    if (!f.l4_checksum_trusted) {
      const net::ChecksumCheck check = net::check_udp_checksums({f.data, f.len}, p);
      if (check != net::ChecksumCheck::ok) [[unlikely]] {
        if (check == net::ChecksumCheck::bad) {
          ++c.bad_udp_checksum;
          return;
        }
        ++c.udp_checksum_unfilled;
      }
    }
    detail::account(st, streams, detail::frame_sender(f.data, p), f.data + p.payload_offset, p.payload_len,
                    f.rx_ns ? f.rx_ns : rx_ns);
  } else {
    if (f.len > plan.max_payload_bytes) [[unlikely]] {
      ++c.malformed;
      return;
    }
    detail::account(st, streams, f.from, f.data, f.len, f.rx_ns ? f.rx_ns : rx_ns);
  }
}

// Frames counted as bad (for rx --pcap-out's "every bad one").
inline uint64_t bad_frames(const stats::RxCounters& c) { return c.corrupt + c.malformed + c.bad_udp_checksum; }

}  // namespace detail

// What a snapshot says of the streams so far (read from the stream table
// once per snapshot, never per packet): lost and distinct packets, summed.
// Both sums saturate: a forged total must not wrap them.
inline void refresh_stream_sums(const RxResult& st, stats::RxCounters& c) {
  uint64_t lost = 0, unique = 0;
  for (const auto& s : st.streams)
    if (s.seen) {
      const uint64_t l = s.ended ? s.seq.lost_given_total(s.end.total_sent) : s.seq.lost_so_far();
      const uint64_t u = s.seq.unique();
      lost = l > ~lost ? ~0ull : lost + l;
      unique = u > ~unique ? ~0ull : unique + u;
    }
  c.lost_so_far = lost;
  c.unique_so_far = unique;
}

// `backend_drops` is read once per snapshot (SO_RXQ_OVFL and the like).
template <RxQueue Q, class DropsFn>
RxResult run_rx(Q& q, const RxPlan& plan, stats::RxSnapshotRing& snapshots, const std::atomic<bool>& stop,
                DropsFn backend_drops) {
  RxResult st;
  // Every payload a backend hands over is at most 65535 bytes (UDP's length
  // field) and at most plan.max_payload_bytes (longer: malformed, before account()).
  st.packets_by_size.assign(std::min<uint64_t>(plan.max_payload_bytes, 65535) + 1, 0);
  StreamTable<RxStreamState> table(st.streams, plan.max_streams);
  detail::StreamLookup streams{table, plan.events, plan.tag_key ? &*plan.tag_key : nullptr};
  stats::RxCounters& c = st.counters;
  uint64_t next_publish_ns = now_ns() + plan.publish_every_ns;
  auto publish = [&](uint64_t now, bool final) {
    refresh_stream_sums(st, c);
    c.backend_drops = backend_drops();
    snapshots.try_push({c, now, final});
  };

  // rx --reflect: indices of this batch's frames to send back (sized once).
  std::vector<uint32_t> reflect_picks(plan.reflect_every ? plan.batch : 0);
  uint32_t data_since_reflect = 0;

  while (!stop.load(std::memory_order_relaxed)) {
    const std::span<const RxFrame> frames = q.poll(plan.batch);
    const uint64_t rx_ns = now_ns();
    c.drained_ns = frames.size() < plan.batch ? rx_ns : c.drained_ns;
    if (!plan.keep && !plan.reflect_every) [[likely]] {
      for (const RxFrame& f : frames) detail::take_frame<Q::kLayer>(st, streams, plan, f, rx_ns);
    } else {
      uint32_t picks = 0;
      for (uint32_t i = 0; i < frames.size(); ++i) {
        const RxFrame& f = frames[i];
        const uint64_t bad_before = detail::bad_frames(c);
        const uint64_t data_before = c.data;
        detail::take_frame<Q::kLayer>(st, streams, plan, f, rx_ns);
        if (plan.keep)
          plan.keep->offer(f.data, f.len, f.rx_ns ? f.rx_ns : rx_ns, detail::bad_frames(c) != bad_before,
                           Q::kLayer != Layer::ethernet, f.from);
        // Only a data packet that passed every check goes back: junk is never echoed.
        if (plan.reflect_every && c.data != data_before && ++data_since_reflect >= plan.reflect_every) {
          data_since_reflect = 0;
          reflect_picks[picks++] = i;
        }
      }
      if constexpr (ReflectingRxQueue<Q>) {
        if (picks) {
          const ReflectResult r = q.reflect({reflect_picks.data(), picks});
          c.reflected += r.sent;
          c.reflect_failed += r.failed;
        }
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
  refresh_stream_sums(st, c);
  c.backend_drops = backend_drops();
  return st;
}

}  // namespace rateline::engine
