// Everything one sending worker needs, fixed before its loop starts and
// passed by value: the loop reads nothing global.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "net/frame.hpp"
#include "engine/replay_stamps.hpp"
#include "net/pcap_file.hpp"
#include "pace/pacer.hpp"
#include "stats/counters.hpp"
#include "wire/packet_tag.hpp"
#include "wire/test_payload.hpp"

namespace rateline::engine {

struct TxFlow {
  uint16_t stream = 0;       // stream id on the wire (unique in the run)
  uint16_t queue_flow = 0;   // the backend's flow index (which socket / source port)
  uint64_t next_seq = 0;     // = data packets sent on this stream so far
  // Ethernet-layer backends only: Ethernet+IP+UDP headers, UDP checksum
  // field holding the header-only partial sum (net::build_udp_headers).
  std::array<uint8_t, net::kMaxHeadersBytes> headers{};
  std::array<uint8_t, net::kMaxHeadersBytes> end_headers{};  // same, for the end markers' length
  uint32_t headers_len = 0;
  uint64_t udp_sum = 0;  // net::udp_headers_sum of `headers`, set by run_tx
  // A size mix (TxPlan::mix), Ethernet-layer backends: the same headers for
  // each size class's lengths, and their sums (set by run_tx).
  struct SizedHeaders {
    std::array<uint8_t, net::kMaxHeadersBytes> bytes{};
    uint64_t udp_sum = 0;
  };
  std::vector<SizedHeaders> mix_headers;
};

struct TxPlan {
  uint64_t quota = 0;          // data packets for this worker; 0 = until duration/stop
  uint64_t duration_ns = 0;    // 0 = no time limit
  pace::PacePlan pace;
  wire::PayloadPlan payload;  // a size mix: its largest size (backends size their buffers by it)
  // A size mix (pktgen --size a,b,c --weights): one payload plan per size
  // class, and the cycle of classes the packets follow (engine/size_mix.hpp).
  // Empty: every data packet is `payload`.
  std::vector<wire::PayloadPlan> mix;
  std::vector<uint8_t> mix_cycle;
  wire::PayloadPlan end_payload;
  // pktgen --key-file: every payload (data and end markers) is the key's
  // tag, then the test payload the plans above describe (wire/packet_tag.hpp),
  // so a frame's UDP payload is tag_bytes longer than its plan. 0: no tags.
  uint32_t tag_bytes = 0;
  wire::PacketKey tag_key;
  wire::EndMarkerBody end_body;  // total_sent filled per stream at the end
  uint32_t end_markers = 3;      // copies per stream, spaced so one survives a full receive queue
  uint64_t end_marker_gap_ns = 2'000'000;
  uint32_t batch = 32;
  std::optional<uint64_t> flow_shuffle_seed;  // set: each round of flow turns in a random order (--flows-random)
  bool ipv6 = false;
  uint8_t vlan_tags = 0;  // 802.1Q tags in every flow's headers (--vlan)
  uint64_t publish_every_ns = 100'000'000;
  uint64_t stall_timeout_ns = 2'000'000'000;  // no slot taken this long: give up, say so
  std::vector<TxFlow> flows;
  // Set: send these frames as they are instead of data packets (pktgen --replay;
  // Ethernet-layer backends only). Shared, read-only, by every plan of the run.
  std::shared_ptr<const net::PcapFrames> replay;
  // With replay: stamp its UDP frames (pktgen --replay-stamp); `flows` then
  // holds one flow per stream of it, for the end markers.
  std::shared_ptr<const ReplayStamps> replay_stamps;
};

struct TxResult {
  stats::TxCounters counters;
  std::vector<TxFlow> flows;  // next_seq = sent per stream
  bool stalled = false;
  uint32_t stamp_clock_breaks = 0;  // the TSC left CLOCK_MONOTONIC's pace: stamps fell back to clock_gettime
  // The packets of a batch share one stamp, read before the batch is written:
  // the longest time from a stamp to its batch being handed to the backend.
  uint64_t stamp_lead_max_ns = 0;
  uint64_t stamp_lead_sum_ns = 0;  // over stamped_batches: the mean lead
  uint64_t stamped_batches = 0;
  std::vector<uint64_t> mix_packets;  // a size mix: data packets sent per size class
};

// pktgen --replay-stamp: plan.replay's UDP flows become the plan's streams
// (plan_replay_stamps), each with end markers of its own built from its first
// frame's addresses, ports and tags; end markers take the smallest payload.
// Throws std::invalid_argument as plan_replay_stamps does.
void stamp_replay(TxPlan& plan, uint16_t sender, uint32_t max_flows);

}  // namespace rateline::engine
