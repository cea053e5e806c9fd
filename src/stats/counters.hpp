// Per-worker counters. Each struct has exactly one writer (its worker
// thread); the reporter never reads them while the worker runs. It gets
// copies (snapshots) through the worker's SPSC ring, and the final values
// after join(). So there is no shared counter and no atomic on the hot path.
#pragma once

#include <cstdint>

#include "ring/spsc_ring.hpp"

namespace rateline::stats {

struct alignas(ring::kCacheLine) TxCounters {
  uint64_t packets = 0;        // data packets taken by the backend (sequence numbers consumed)
  uint64_t payload_bytes = 0;  // UDP payload bytes of those
  uint64_t failed = 0;         // of packets, refused by the OS for good (errno in last_error)
  uint64_t retries = 0;        // commits that took nothing (device/socket full)
  uint64_t end_markers = 0;
  uint64_t pace_slips = 0;     // rate-paced schedule rebased after falling behind
  uint64_t first_ns = 0;       // first data packet handed over
  uint64_t last_ns = 0;        // last data packet handed over
  // Whole bursts, timed from the burst's start to the return of its last
  // commit: the rate the sender hands packets over *inside* a burst, which
  // is what a queue sees at its peak (the average hides it).
  uint64_t burst_packets = 0;     // packets in the timed bursts
  uint64_t burst_ns = 0;          // sum of their durations
  uint64_t peak_burst_packets = 0, peak_burst_ns = 0;  // the fastest one (most packets per ns)
  int last_error = 0;

  // Once per burst, not per packet.
  void note_burst(uint64_t packets, uint64_t ns) {
    ns = ns ? ns : 1;  // a coarse clock: count it as 1 ns rather than divide by 0 later
    burst_packets += packets;
    burst_ns += ns;
    if (peak_burst_ns == 0 || packets * peak_burst_ns > peak_burst_packets * ns) {
      peak_burst_packets = packets;
      peak_burst_ns = ns;
    }
  }
};

// In-burst rates of one worker: over all its whole bursts, and its fastest one.
struct InBurstRate {
  double mean_pps = 0, peak_pps = 0;
};
inline InBurstRate in_burst_rate(const TxCounters& c) {
  InBurstRate r;
  if (c.burst_ns == 0) return r;
  r.mean_pps = static_cast<double>(c.burst_packets) * 1e9 / static_cast<double>(c.burst_ns);
  r.peak_pps = static_cast<double>(c.peak_burst_packets) * 1e9 / static_cast<double>(c.peak_burst_ns);
  return r;
}

struct alignas(ring::kCacheLine) RxCounters {
  uint64_t frames = 0;         // everything the backend delivered
  uint64_t data = 0;           // our data packets, checksum ok (duplicates included)
  uint64_t payload_bytes = 0;  // UDP payload bytes of data
  uint64_t end_markers = 0;
  uint64_t foreign = 0;        // not our magic (someone else's UDP, or not UDP at all)
  uint64_t malformed = 0;      // our magic, inconsistent header or length
  uint64_t corrupt = 0;        // checksum mismatch
  uint64_t lost_so_far = 0;    // sum over streams, refreshed at each snapshot
  uint64_t unique_so_far = 0;  // distinct data packets, sum over streams, refreshed at each snapshot
  uint64_t streams_seen = 0;     // streams with at least one data packet or end marker
  uint64_t streams_created = 0;  // stream states made (any packet of ours, corrupt ones too)
  uint64_t streams_ended = 0;    // streams whose end-marker total is believed now
  uint64_t fragments = 0;        // IP fragments (raw backends): maybe ours, not reassembled
  uint64_t bad_udp_checksum = 0; // raw backends: UDP checksum wrong (the kernel drops these before a socket)
  uint64_t udp_checksum_unfilled = 0;  // raw backends: checksum left for offload by a sender on this host
  uint64_t events_lost = 0;      // stream events the main thread's ring had no room for
  uint64_t stream_count = 0;   // announced by end markers (largest seen)
  uint64_t unknown_stream = 0; // stream id beyond --max-streams
  uint64_t unauthenticated = 0;  // rx --key-file: UDP to our port without the key's tag (never decoded)
  uint64_t backend_drops = 0;  // drops the backend itself reports (SO_RXQ_OVFL, ring full...)
  uint64_t reflected = 0;      // rx --reflect: data packets sent back to their senders, unchanged
  uint64_t reflect_failed = 0; // rx --reflect: of those picked, the socket or TX ring had no room for (never waited on), or the driver failed to send (xdp)
  uint64_t first_ns = 0;       // first data arrival
  uint64_t last_ns = 0;        // last data arrival
  // The last time the worker found its queue empty (a poll gave fewer frames
  // than asked): nothing was left waiting then. rx judges idle and quiet
  // from here to last_ns, never from the clock alone (rx/watch.cpp).
  uint64_t drained_ns = 0;
};

template <class C>
struct Snapshot {
  C counters;
  uint64_t taken_ns = 0;
  bool final = false;
};

using TxSnapshotRing = ring::SpscRing<Snapshot<TxCounters>>;
using RxSnapshotRing = ring::SpscRing<Snapshot<RxCounters>>;

}  // namespace rateline::stats
