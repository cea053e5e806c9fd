// Merges the receiving workers' results into one report: totals, per-stream
// rows, the udp_bench table, and the JSON record. Used by rx and by any tool
// that runs trials (the same numbers, printed the same way).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/rx_loop.hpp"

namespace rateline::report {

struct StreamRow {
  uint32_t stream = 0;
  engine::StreamKey key;   // who sent it: address and port, sender id, stream id
  uint64_t implausible = 0;          // lone far sequence jumps, never confirmed
  uint64_t end_marker_copies = 0;
  uint64_t implausible_markers = 0;  // end markers not believed (wrong, disputed or unconfirmed)
  uint64_t received = 0, unique = 0, lost = 0, reordered = 0, duplicates = 0, stale = 0, corrupt = 0;
  uint64_t sent = 0;       // from the end marker; 0 when none arrived
  uint16_t announced = 0;  // streams its sender ran, by the believed end marker
  uint64_t highest_next = 0;  // one past the highest sequence seen
  bool ended = false;
  uint64_t payload_bytes = 0;
  uint64_t first_ns = 0, last_ns = 0;
  uint32_t payload_len = 0;
  stats::LatencyHistogram latency;
  double jitter_ns = 0;
  uint64_t clock_behind = 0;
  uint64_t max_behind_ns = 0;  // the furthest a packet arrived "before" it was sent (0: none, or not known: xdp)
  // Its send stamps are on this host's clock: only then is rx - tx a one-way
  // latency. Else the row keeps jitter and shows no latency. Judged by the
  // clock ids when the believed end marker gave one (clock_by_id), else from
  // the stamps (clock_is_shared).
  bool clock_shared = false;
  uint64_t clock_id = 0;     // the sender's, from the believed end marker or its run's other streams (0: not given)
  bool clock_by_id = false;  // clock_shared came from comparing clock ids
  bool clock_unrelated = false;  // known to be another clock: by its id, or by stamps that are not on ours
};

// Whether a stream's stamps are on the receiver's CLOCK_MONOTONIC. Two hosts'
// monotonic clocks count from their own boots, so across hosts rx - tx is
// off by the difference of their uptimes (as is a time namespace's clock by
// its offset): packets arrive long "before" they were sent, or even the
// quickest took implausibly long. The rule: samples, the smallest delay
// under kSharedClockMaxDelayNs, and no packet arriving that much "before"
// it was sent (a few us early happens on one clock: the kernel's wall-clock
// receive stamps are turned into CLOCK_MONOTONIC with an offset read per
// batch). It is fooled only by a sender whose clock is within 10 ms of ours
// (two hosts booted that close together); a same-host stream whose every
// packet waited 10 ms or more is shown without latency (the safe side).
inline constexpr uint64_t kSharedClockMaxDelayNs = 10'000'000;
bool clock_is_shared(const stats::LatencyHistogram& latency, uint64_t max_behind_ns);

// The rule when the sender named its clock (util/clock_id.hpp) and rx knows
// its own: the ids decide, so neither a sender whose clock reads within
// 10 ms of ours nor a same-host stream whose every packet waited 10 ms is
// misjudged. One sanity check stays: equal ids with a packet arriving
// 10 ms "before" it was sent are stamps nobody can trust (a forged or
// corrupted marker, a sender that lied): no latency then.
bool clock_is_shared_by_id(uint64_t sender_clock_id, uint64_t own_clock_id, const stats::LatencyHistogram& latency,
                           uint64_t max_behind_ns);

// One pktgen run: the streams that share a source address and a sender id.
struct SenderRow {
  std::string address;     // source IP (the ports are per stream)
  uint16_t sender_id = 0;
  uint32_t streams = 0, streams_ended = 0, streams_announced = 0;
  uint64_t received = 0, lost = 0, duplicates = 0, corrupt = 0, implausible = 0;
  uint64_t sent = 0;       // by its believed end markers
  bool all_ended = false;  // every stream it announced has a believed end marker
};

// Data packets of one UDP payload length, summed over workers.
struct SizeRow {
  uint32_t payload = 0;
  uint64_t packets = 0;  // duplicates included, as `arrivals`
};

struct RxSummary {
  std::vector<StreamRow> streams;
  std::vector<SenderRow> senders;
  uint64_t implausible = 0;           // lone far sequence jumps, summed
  uint64_t implausible_markers = 0;   // end markers not believed, summed
  stats::RxCounters totals;          // summed over workers
  uint64_t received = 0, unique = 0, lost = 0, reordered = 0, duplicates = 0, stale = 0;
  uint64_t sent_by_markers = 0;      // sum of end-marker totals (streams that ended)
  bool all_ended = false;            // every stream seen, and every stream the sender announced, has its end marker
  bool lost_from_expect = false;     // lost came from --count N, not from markers or gaps
  double seconds = 0;                // first to last data arrival
  uint32_t payload_len = 0;          // of the data packets (largest stream's)
  std::string settings;              // "b-t-n-s" from the end marker, "?" parts when unknown
  std::string receive_stamps = "one clock read per received batch";  // the backend's (RxBackend::receive_stamps)
  stats::LatencyHistogram latency;   // all streams on this host's clock (StreamRow::clock_shared)
  uint32_t streams_clock_unrelated = 0;  // streams with stamps on another clock: no latency from them
  std::vector<std::string> senders_clock_unrelated;  // their senders, "address #id"
  double jitter_ns = 0;              // of the stream with the most packets
  uint32_t reflect_every = 0;        // rx --reflect: every Nth data packet went back (0: not reflecting)
  std::vector<SizeRow> sizes;        // by payload length, ascending; the lengths no packet had are left out
};

// Totals are saturating sums of the rows: a forged total can pin a number
// at 2^64 - 1 but never wrap it round to a small one.
inline uint64_t sat_add(uint64_t a, uint64_t b) { return b > ~a ? ~0ull : a + b; }

// `expect`: rx --count N (0 = none). `own_clock_id`: rx's this_clock_id()
// (0: unknown; then every stream is judged from its stamps).
RxSummary summarize(const std::vector<engine::RxResult>& workers, uint64_t expect, uint64_t own_clock_id = 0);

// udp_bench's table "Settings Time Lost Speed" plus received, rates and the per-stream rows.
std::string format_table(const RxSummary& s, bool ipv6);
nlohmann::json to_json(const RxSummary& s, bool ipv6);

}  // namespace rateline::report
