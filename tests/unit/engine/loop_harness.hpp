// Shared by the engine's loop tests (tx_rx_loop_test.cpp: UDP-payload
// queues; tx_rx_ethernet_test.cpp: Ethernet queues): fake queues that record
// every frame, push back (partial commits, full queue, no free slot) and
// refuse single packets for good; plans; and the checks that what the send
// loop wrote is what the receive loop counts.
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "engine/queue.hpp"
#include "engine/rx_loop.hpp"
#include "engine/size_mix.hpp"
#include "engine/tx_loop.hpp"
#include "net/frame.hpp"
#include "report/rx_summary.hpp"
#include "wire/decode.hpp"
#include "wire/test_payload.hpp"

namespace rateline::loop_harness {

using engine::CommitResult;
using engine::Layer;
using engine::RxFrame;
using engine::TxSlot;

constexpr uint16_t kSrcPortBase = 5000;
constexpr uint16_t kDstPort = 6000;

// ---- fakes ----

struct TxBehaviour {
  uint32_t partial_every = 3;        // every n-th commit takes only half of what it is offered
  uint32_t refuse_every = 5;         // every n-th commit takes nothing (queue full)
  uint32_t empty_reserve_every = 7;  // every n-th reserve of more than one slot finds none free
  std::set<uint64_t> fail_at;        // consumed-slot indices the "OS" refuses for good
  uint64_t stop_after = 0;           // set *stop once this many slots were consumed (0 = never)
  std::atomic<bool>* stop = nullptr;
};

struct TxRecord {
  std::vector<uint8_t> bytes;
  uint16_t flow = 0;
  bool failed = false;
};

// Slots are reused like a socket backend's iovec buffers: `stale` is true on
// a slot's first use only, the engine clears it once it wrote the headers.
template <Layer L>
class FakeTxQueue {
 public:
  static constexpr Layer kLayer = L;

  FakeTxQueue(uint32_t nslots, uint32_t slot_bytes, TxBehaviour b)
      : b_(std::move(b)), buffers_(size_t{nslots} * slot_bytes), slots_(nslots) {
    for (uint32_t i = 0; i < nslots; ++i) {
      slots_[i].data = buffers_.data() + size_t{i} * slot_bytes;
      slots_[i].capacity = slot_bytes;
    }
  }

  std::span<TxSlot> reserve(uint32_t n) {
    ++reserve_calls;
    if (n > 1 && b_.empty_reserve_every && reserve_calls % b_.empty_reserve_every == 0) {
      ++empty_reserves;
      return {};
    }
    reserved_ = std::min<size_t>(n, slots_.size());
    return {slots_.data(), reserved_};
  }

  CommitResult commit(std::span<TxSlot> s) {
    ++commit_calls;
    // Contract: s is a non-empty suffix of the last reserve().
    if (s.empty() || s.data() < slots_.data() || s.data() + s.size() != slots_.data() + reserved_) ++contract_errors;
    if (b_.refuse_every && commit_calls % b_.refuse_every == 0) {
      ++zero_commits;
      return {};
    }
    if (b_.fail_at.count(consumed)) {
      record(s[0], true);
      return {1, 1, EPERM};
    }
    size_t take = s.size();
    if (b_.partial_every && commit_calls % b_.partial_every == 0 && take > 1) take /= 2;
    // Stop in front of the next slot that is to fail: it is refused by a later commit.
    for (size_t i = 1; i < take; ++i)
      if (b_.fail_at.count(consumed + i)) {
        take = i;
        break;
      }
    for (size_t i = 0; i < take; ++i) record(s[i], false);
    return {static_cast<uint32_t>(take), 0, 0};
  }

  void cancel(std::span<TxSlot> s) { cancelled += s.size(); }
  void reclaim() { ++reclaims; }
  void flush() { ++flushes; }

  std::vector<TxRecord> log;  // every consumed slot, in order
  uint64_t consumed = 0, reserve_calls = 0, commit_calls = 0, empty_reserves = 0, zero_commits = 0;
  uint64_t cancelled = 0, reclaims = 0, flushes = 0, contract_errors = 0, oversize = 0;

 private:
  void record(const TxSlot& s, bool failed) {
    if (s.len > s.capacity) ++oversize;
    log.push_back({std::vector<uint8_t>(s.data, s.data + std::min(s.len, s.capacity)), s.flow, failed});
    ++consumed;
    if (b_.stop_after && consumed >= b_.stop_after && b_.stop) b_.stop->store(true);
  }

  TxBehaviour b_;
  std::vector<uint8_t> buffers_;
  std::vector<TxSlot> slots_;
  size_t reserved_ = 0;
};

// Hands the frames back in uneven batches, with the odd empty poll
// (timeout); sets the stop flag once everything was delivered.
template <Layer L>
class FakeRxQueue {
 public:
  static constexpr Layer kLayer = L;

  FakeRxQueue(std::vector<std::vector<uint8_t>> frames, std::atomic<bool>& stop)
      : frames_(std::move(frames)), stop_(stop) {}

  std::span<const RxFrame> poll(uint32_t n) {
    ++polls;
    if (outstanding_) ++contract_errors;  // previous batch not released
    if (next_ == frames_.size()) {
      stop_.store(true);
      return {};
    }
    if (polls % 4 == 0) return {};  // timeout, nothing arrived
    size_t k = std::min<size_t>(n, frames_.size() - next_);
    if (polls % 3 == 0) k = std::min<size_t>(k, 5);
    batch_.clear();
    for (size_t i = 0; i < k; ++i, ++next_) batch_.push_back({frames_[next_].data(), static_cast<uint32_t>(frames_[next_].size()), {}});
    outstanding_ = true;
    return batch_;
  }
  void release() {
    if (!outstanding_) ++contract_errors;
    outstanding_ = false;
    ++releases;
  }

  uint64_t polls = 0, releases = 0, contract_errors = 0;

 private:
  std::vector<std::vector<uint8_t>> frames_;
  std::atomic<bool>& stop_;
  size_t next_ = 0;
  std::vector<RxFrame> batch_;
  bool outstanding_ = false;
};

static_assert(engine::TxQueue<FakeTxQueue<Layer::udp_payload>>);
static_assert(engine::TxQueue<FakeTxQueue<Layer::ethernet>>);
static_assert(engine::RxQueue<FakeRxQueue<Layer::udp_payload>>);
static_assert(engine::RxQueue<FakeRxQueue<Layer::ethernet>>);

// ---- plans ----

struct Config {
  uint16_t flows = 2;
  bool ipv6 = false;
  uint32_t payload = 64;
  uint64_t quota = 1000;
};

inline net::UdpEndpoints endpoints(bool ipv6, uint16_t flow) {
  net::UdpEndpoints ep;
  ep.src_mac = {0x02, 0, 0, 0, 0, 0x01};
  ep.dst_mac = {0x02, 0, 0, 0, 0, 0x02};
  if (ipv6) {
    in6_addr a{}, b{};
    inet_pton(AF_INET6, "fd00::1", &a);
    inet_pton(AF_INET6, "fd00::2", &b);
    ep.src_ip = net::IpAddress::v6(a);
    ep.dst_ip = net::IpAddress::v6(b);
  } else {
    in_addr a{}, b{};
    inet_pton(AF_INET, "10.0.0.1", &a);
    inet_pton(AF_INET, "10.0.0.2", &b);
    ep.src_ip = net::IpAddress::v4(a);
    ep.dst_ip = net::IpAddress::v4(b);
  }
  ep.src_port = static_cast<uint16_t>(kSrcPortBase + flow);
  ep.dst_port = kDstPort;
  return ep;
}

inline uint16_t stream_id(uint16_t flow) { return static_cast<uint16_t>(10 + flow); }  // not the flow index

template <Layer L>
engine::TxPlan make_plan(const Config& c) {
  engine::TxPlan p;
  p.quota = c.quota;
  p.pace = pace::PacePlan{};  // unpaced
  p.pace.burst = 100;
  p.batch = 32;
  p.payload = wire::PayloadPlan::make(c.payload);
  p.end_payload = wire::end_marker_plan(c.payload);
  p.end_body.delay_ns = 0;
  p.end_body.count = c.quota;
  p.end_body.burst = 100;
  p.end_body.stream_count = c.flows;
  p.end_body.data_size = static_cast<uint16_t>(c.payload);
  p.end_markers = 3;
  p.end_marker_gap_ns = 1000;
  p.ipv6 = c.ipv6;
  for (uint16_t f = 0; f < c.flows; ++f) {
    engine::TxFlow flow;
    flow.stream = stream_id(f);
    flow.queue_flow = f;
    if constexpr (L == Layer::ethernet) {
      flow.headers_len = static_cast<uint32_t>(net::build_udp_headers(flow.headers, endpoints(c.ipv6, f), c.payload));
      EXPECT_EQ(flow.headers_len, net::headers_len(c.ipv6));
      EXPECT_EQ(net::build_udp_headers(flow.end_headers, endpoints(c.ipv6, f), p.end_payload.len), flow.headers_len);
    }
    p.flows.push_back(flow);
  }
  return p;
}

template <Layer L>
struct TxRun {
  std::unique_ptr<FakeTxQueue<L>> q;
  engine::TxResult result;
  std::vector<stats::Snapshot<stats::TxCounters>> snapshots;
};

template <Layer L>
TxRun<L> transmit(const engine::TxPlan& plan, TxBehaviour b, std::atomic<bool>* stop_flag = nullptr) {
  std::atomic<bool> own_stop{false};
  std::atomic<bool>& stop = stop_flag ? *stop_flag : own_stop;
  b.stop = &stop;
  TxRun<L> run;
  run.q = std::make_unique<FakeTxQueue<L>>(48, 2048, std::move(b));
  stats::TxSnapshotRing ring(64);
  run.result = engine::run_tx(*run.q, plan, ring, stop);
  while (auto s = ring.try_pop()) run.snapshots.push_back(*s);
  return run;
}

// The UDP payload inside a recorded frame (the whole frame for udp_payload queues).
template <Layer L>
std::span<const uint8_t> payload_of(const std::vector<uint8_t>& frame, net::ParsedUdp* parsed = nullptr) {
  if constexpr (L == Layer::ethernet) {
    const net::ParsedUdp p = net::parse_udp_frame(frame);
    if (parsed) *parsed = p;
    if (p.status != net::ParseStatus::ok) return {};
    return {frame.data() + p.payload_offset, p.payload_len};
  } else {
    return {frame.data(), frame.size()};
  }
}

inline wire::Decoded decode(std::span<const uint8_t> p) { return wire::decode(p.data(), static_cast<uint32_t>(p.size())); }

inline TxBehaviour pushy(std::set<uint64_t> fail_at = {5, 250, 251, 777, 999}) {
  TxBehaviour b;
  b.fail_at = std::move(fail_at);
  return b;
}

// ---- TX checks ----

// Everything a correct run_tx must have produced, checked frame by frame.
template <Layer L>
void check_tx(const Config& c, const engine::TxPlan& plan, const TxRun<L>& run, uint64_t expect_failed) {
  const auto& r = run.result;
  const auto& q = *run.q;
  EXPECT_FALSE(r.stalled);
  EXPECT_EQ(q.contract_errors, 0u) << "commit() not given a suffix of the last reserve()";
  EXPECT_EQ(q.oversize, 0u);
  EXPECT_EQ(r.counters.packets, c.quota);
  EXPECT_EQ(r.counters.failed, expect_failed);
  EXPECT_EQ(r.counters.payload_bytes, c.quota * c.payload);
  EXPECT_EQ(r.counters.end_markers, 3u * c.flows);
  EXPECT_EQ(r.counters.retries, q.zero_commits + q.empty_reserves);
  if (expect_failed) {
    EXPECT_EQ(r.counters.last_error, EPERM);
  }
  EXPECT_EQ(q.flushes, 1u) << "flush() once, at the end";
  ASSERT_EQ(r.flows.size(), c.flows);

  uint64_t total_next = 0;
  std::map<uint16_t, const engine::TxFlow*> by_stream;
  for (const auto& f : r.flows) {
    total_next += f.next_seq;
    by_stream[f.stream] = &f;
  }
  EXPECT_EQ(total_next, c.quota);
  ASSERT_EQ(q.log.size(), c.quota + 3u * c.flows);

  std::map<uint16_t, uint64_t> next_seq, ends;
  uint64_t data_frames = 0, refused = 0;
  for (size_t i = 0; i < q.log.size(); ++i) {
    const TxRecord& rec = q.log[i];
    net::ParsedUdp parsed;
    const auto pl = payload_of<L>(rec.bytes, &parsed);
    const wire::Decoded d = decode(pl);
    ASSERT_TRUE(d.verdict == wire::Verdict::data || d.verdict == wire::Verdict::end)
        << "frame " << i << " verdict " << int(d.verdict) << " len " << rec.bytes.size();
    ASSERT_TRUE(by_stream.count(d.stream)) << "frame " << i << " unknown stream " << d.stream;
    const engine::TxFlow& flow = *by_stream[d.stream];
    EXPECT_EQ(rec.flow, flow.queue_flow) << "frame " << i << " went out on another flow";
    if constexpr (L == Layer::ethernet) {
      EXPECT_TRUE(net::udp_checksums_ok(rec.bytes, parsed)) << "frame " << i;
      EXPECT_EQ(parsed.ipv6, c.ipv6);
      EXPECT_EQ(parsed.src_port, kSrcPortBase + flow.queue_flow) << "frame " << i << " stream " << d.stream;
      EXPECT_EQ(parsed.dst_port, kDstPort);
    }
    if (d.verdict == wire::Verdict::data) {
      ASSERT_EQ(ends[d.stream], 0u) << "data after an end marker, frame " << i;
      EXPECT_EQ(pl.size(), c.payload);
      EXPECT_EQ(d.seq, next_seq[d.stream]) << "frame " << i << ": sequences must be contiguous from 0";
      next_seq[d.stream] = d.seq + 1;
      ++data_frames;
      if (rec.failed) ++refused;
    } else {
      ASSERT_FALSE(rec.failed);
      EXPECT_EQ(pl.size(), plan.end_payload.len);
      EXPECT_EQ(d.end.total_sent, flow.next_seq) << "stream " << d.stream;
      EXPECT_EQ(d.seq, flow.next_seq);
      EXPECT_EQ(d.end.count, c.quota);
      EXPECT_EQ(d.end.burst, 100u);
      EXPECT_EQ(d.end.stream_count, c.flows);
      EXPECT_EQ(d.end.data_size, c.payload);
      ++ends[d.stream];
    }
  }
  EXPECT_EQ(data_frames, c.quota);
  EXPECT_EQ(refused, expect_failed);
  for (const auto& f : r.flows) {
    EXPECT_EQ(next_seq[f.stream], f.next_seq) << "stream " << f.stream;
    EXPECT_EQ(ends[f.stream], 3u) << "stream " << f.stream;
  }
  ASSERT_FALSE(run.snapshots.empty());
  EXPECT_TRUE(run.snapshots.back().final);
  EXPECT_EQ(run.snapshots.back().counters.packets, c.quota);
}

// Frames that actually went out (refused ones never reach a receiver).
template <Layer L>
std::vector<std::vector<uint8_t>> delivered(const TxRun<L>& run) {
  std::vector<std::vector<uint8_t>> out;
  for (const auto& rec : run.q->log)
    if (!rec.failed) out.push_back(rec.bytes);
  return out;
}

// stream -> refused data packets
template <Layer L>
std::map<uint16_t, uint64_t> refused_per_stream(const TxRun<L>& run) {
  std::map<uint16_t, uint64_t> m;
  for (const auto& rec : run.q->log)
    if (rec.failed) ++m[decode(payload_of<L>(rec.bytes)).stream];
  return m;
}

template <Layer L>
engine::RxResult receive(std::vector<std::vector<uint8_t>> frames, std::optional<wire::PacketKey> tag_key = {}) {
  std::atomic<bool> stop{false};
  FakeRxQueue<L> q(std::move(frames), stop);
  engine::RxPlan plan;
  plan.tag_key = tag_key;
  plan.batch = 64;
  plan.max_streams = 16;
  plan.udp_port = kDstPort;
  stats::RxSnapshotRing ring(64);
  engine::RxResult r = engine::run_rx(q, plan, ring, stop, [] { return uint64_t{0}; });
  EXPECT_EQ(q.contract_errors, 0u) << "poll() before release() of the previous batch";
  EXPECT_GT(q.releases, 0u);
  std::optional<stats::Snapshot<stats::RxCounters>> last;
  while (auto s = ring.try_pop()) last = *s;
  EXPECT_TRUE(last.has_value() && last->final);
  if (last) {
    EXPECT_EQ(last->counters.data, r.counters.data);
  }
  return r;
}

template <Layer L>
void check_rx(const Config& c, const TxRun<L>& tx, const engine::RxResult& rx, uint64_t extra_frames = 0) {
  const uint64_t failed = tx.result.counters.failed;
  const auto refused = refused_per_stream(tx);
  const auto& k = rx.counters;
  EXPECT_EQ(k.frames, c.quota - failed + 3u * c.flows + extra_frames);
  EXPECT_EQ(k.data, c.quota - failed);
  EXPECT_EQ(k.payload_bytes, (c.quota - failed) * c.payload);
  EXPECT_EQ(k.end_markers, 3u * c.flows);
  EXPECT_EQ(k.streams_seen, c.flows);
  EXPECT_EQ(k.streams_ended, c.flows);
  EXPECT_EQ(k.stream_count, c.flows);
  EXPECT_EQ(k.lost_so_far, failed);
  EXPECT_EQ(k.unknown_stream, 0u);
  ASSERT_EQ(rx.streams.size(), c.flows);  // one state per stream that arrived, made on first use
  for (const auto& f : tx.result.flows) {
    const engine::RxStreamState& s = *rx.find(f.stream);
    const uint64_t lost = refused.count(f.stream) ? refused.at(f.stream) : 0;
    EXPECT_TRUE(s.seen) << "stream " << f.stream;
    EXPECT_TRUE(s.ended) << "stream " << f.stream;
    EXPECT_EQ(s.end.total_sent, f.next_seq) << "stream " << f.stream;
    EXPECT_EQ(s.seq.counts().unique, f.next_seq - lost) << "stream " << f.stream;
    EXPECT_EQ(s.seq.lost_given_total(s.end.total_sent), lost) << "stream " << f.stream;
    EXPECT_EQ(s.payload_len, c.payload);
    EXPECT_EQ(s.clock_behind, 0u) << "tx stamps are taken before rx stamps on one clock";
    EXPECT_EQ(s.latency.samples(), s.seq.counts().received);
  }
  const report::RxSummary sum = report::summarize({rx}, 0);
  EXPECT_TRUE(sum.all_ended);
  EXPECT_EQ(sum.lost, failed);
  EXPECT_EQ(sum.sent_by_markers, c.quota);
  EXPECT_EQ(sum.settings, "100-0-" + std::to_string(c.quota) + "-" + std::to_string(c.payload));
}

}  // namespace rateline::loop_harness
