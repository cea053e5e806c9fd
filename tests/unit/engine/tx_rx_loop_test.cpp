// The engine's send and receive loops (src/engine/tx_loop.hpp, rx_loop.hpp)
// driven through fake queues that record every frame, push back (partial
// commits, full queue, no free slot) and refuse single packets for good.
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
#include "wire/test_payload.hpp"

namespace {

using namespace rateline;
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

net::UdpEndpoints endpoints(bool ipv6, uint16_t flow) {
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

uint16_t stream_id(uint16_t flow) { return static_cast<uint16_t>(10 + flow); }  // not the flow index

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

wire::Decoded decode(std::span<const uint8_t> p) { return wire::decode(p.data(), static_cast<uint32_t>(p.size())); }

TxBehaviour pushy(std::set<uint64_t> fail_at = {5, 250, 251, 777, 999}) {
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
engine::RxResult receive(std::vector<std::vector<uint8_t>> frames) {
  std::atomic<bool> stop{false};
  FakeRxQueue<L> q(std::move(frames), stop);
  engine::RxPlan plan;
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

// ---- UDP-payload queue (sockets, io_uring) ----

TEST(RunTxUdpPayload, QuotaOfDataFramesWithContiguousSequencesAndEndMarkers) {
  const Config c{2, false, 64, 1000};
  const auto plan = make_plan<Layer::udp_payload>(c);
  const auto run = transmit<Layer::udp_payload>(plan, pushy());
  check_tx(c, plan, run, 5);
  EXPECT_GT(run.q->zero_commits, 0u) << "the fake must have pushed back";
  EXPECT_GT(run.q->empty_reserves, 0u);
  EXPECT_EQ(run.q->cancelled, 0u) << "nothing is given back when the backend keeps taking";
}

// One send stamp per batch: every packet carries one, the packets of a batch
// share it, batches never go back in time, and the lead reported is a
// true mean and maximum.
TEST(RunTxUdpPayload, PacketsOfABatchShareOneStamp) {
  const Config c{1, false, 64, 1000};
  auto plan = make_plan<Layer::udp_payload>(c);  // bursts of 100 in batches of 32: 32, 32, 32, 4
  TxBehaviour calm;
  calm.partial_every = calm.refuse_every = calm.empty_reserve_every = 0;
  const auto run = transmit<Layer::udp_payload>(plan, calm);
  std::vector<uint64_t> stamps;
  for (const TxRecord& r : run.q->log) {
    const wire::Decoded d = wire::decode(r.bytes.data(), static_cast<uint32_t>(r.bytes.size()));
    if (d.verdict == wire::Verdict::data) stamps.push_back(d.tx_ns);
  }
  ASSERT_EQ(stamps.size(), c.quota);
  for (size_t i = 1; i < stamps.size(); ++i) {
    const size_t in_burst = i % plan.pace.burst;
    if (in_burst % plan.batch != 0)
      ASSERT_EQ(stamps[i], stamps[i - 1]) << "packet " << i << " is inside a batch";
    else
      ASSERT_GE(stamps[i], stamps[i - 1]) << "packet " << i << " starts a batch";
  }
  EXPECT_EQ(run.result.stamped_batches, c.quota / plan.pace.burst * 4);
  EXPECT_GT(run.result.stamp_lead_max_ns, 0u);
  EXPECT_LE(run.result.stamp_lead_sum_ns / run.result.stamped_batches, run.result.stamp_lead_max_ns);
}

// In-burst timing: only whole bursts count (the partial last one would
// read as a faster or slower burst than the plan's), and the fastest one is
// the one with the most packets per nanosecond.
TEST(TxCountersBursts, PeakIsTheFastestBurstAndMeanIsOverAllOfThem) {
  stats::TxCounters c;
  EXPECT_EQ(stats::in_burst_rate(c).peak_pps, 0.0) << "nothing timed: no rate";
  c.note_burst(100, 1000);
  c.note_burst(100, 500);
  c.note_burst(50, 400);
  EXPECT_EQ(c.burst_packets, 250u);
  EXPECT_EQ(c.burst_ns, 1900u);
  EXPECT_EQ(c.peak_burst_packets, 100u);
  EXPECT_EQ(c.peak_burst_ns, 500u);
  const stats::InBurstRate r = stats::in_burst_rate(c);
  EXPECT_DOUBLE_EQ(r.mean_pps, 250e9 / 1900);
  EXPECT_DOUBLE_EQ(r.peak_pps, 100e9 / 500);
  c.note_burst(10, 0);  // a clock too coarse to see the burst: 1 ns, not a division by zero
  EXPECT_EQ(c.peak_burst_ns, 1u);
  EXPECT_DOUBLE_EQ(stats::in_burst_rate(c).peak_pps, 10e9);
}

TEST(RunTxUdpPayload, TimesWholeBurstsOnly) {
  const Config c{1, false, 64, 999};  // bursts of 100: nine whole ones and a last one of 99
  const auto plan = make_plan<Layer::udp_payload>(c);
  const auto run = transmit<Layer::udp_payload>(plan, pushy({}));
  const stats::TxCounters& k = run.result.counters;
  EXPECT_EQ(k.packets, 999u);
  EXPECT_EQ(k.burst_packets, 900u);
  EXPECT_EQ(k.peak_burst_packets, 100u);
  EXPECT_GT(k.burst_ns, 0u);
  const stats::InBurstRate r = stats::in_burst_rate(k);
  EXPECT_GE(r.peak_pps, r.mean_pps);
  EXPECT_GT(r.mean_pps, 0.0);
}

TEST(RunTxUdpPayload, FramesRoundTripThroughRunRx) {
  const Config c{2, false, 64, 1000};
  const auto run = transmit<Layer::udp_payload>(make_plan<Layer::udp_payload>(c), pushy());
  const auto rx = receive<Layer::udp_payload>(delivered(run));
  check_rx(c, run, rx);
  EXPECT_EQ(rx.counters.corrupt, 0u);
  EXPECT_EQ(rx.counters.malformed, 0u);
  EXPECT_EQ(rx.counters.foreign, 0u);
}

TEST(RunTxUdpPayload, NoFailuresMeansNoLoss) {
  const Config c{1, false, 1400, 1000};
  const auto plan = make_plan<Layer::udp_payload>(c);
  const auto run = transmit<Layer::udp_payload>(plan, pushy({}));
  check_tx(c, plan, run, 0);
  const auto rx = receive<Layer::udp_payload>(delivered(run));
  check_rx(c, run, rx);
  EXPECT_EQ(rx.counters.lost_so_far, 0u);
}

TEST(RunTxUdpPayload, MinimumPayloadSendsLongerEndMarkers) {
  const Config c{3, false, 32, 999};
  const auto plan = make_plan<Layer::udp_payload>(c);
  ASSERT_EQ(plan.end_payload.len, 64u);
  const auto run = transmit<Layer::udp_payload>(plan, pushy({0, 998}));
  check_tx(c, plan, run, 2);
  check_rx(c, run, receive<Layer::udp_payload>(delivered(run)));
}

TEST(RunTxUdpPayload, InjectedCorruptDuplicateForeignAndMalformedAreClassified) {
  const Config c{2, false, 64, 1000};
  const auto run = transmit<Layer::udp_payload>(make_plan<Layer::udp_payload>(c), pushy());
  auto frames = delivered(run);
  const wire::Decoded victim = decode(frames[10]);
  ASSERT_EQ(victim.verdict, wire::Verdict::data);
  auto corrupt = frames[10];
  corrupt[40] ^= 0x10;
  const auto dup = frames[11];
  std::vector<uint8_t> foreign(64, 0x5a);
  std::vector<uint8_t> malformed(frames[12].begin(), frames[12].begin() + 20);  // magic, cut short
  frames.insert(frames.begin() + 300, corrupt);
  frames.insert(frames.begin() + 400, dup);
  frames.insert(frames.begin() + 500, foreign);
  frames.insert(frames.begin() + 600, malformed);
  const auto rx = receive<Layer::udp_payload>(frames);
  EXPECT_EQ(rx.counters.corrupt, 1u);
  EXPECT_EQ(rx.find(victim.stream)->corrupt, 1u);
  EXPECT_EQ(rx.counters.foreign, 1u);
  EXPECT_EQ(rx.counters.malformed, 1u);
  EXPECT_EQ(rx.counters.frames, frames.size());
  EXPECT_EQ(rx.counters.data, 1000u - 5 + 1) << "data counts the duplicate";
  uint64_t dups = 0;
  for (const auto& f : run.result.flows) dups += rx.find(f.stream)->seq.counts().duplicates;
  EXPECT_EQ(dups, 1u);
  EXPECT_EQ(rx.counters.lost_so_far, 5u) << "the corrupt copy and the duplicate change no loss";
}

TEST(RunTxUdpPayload, ReorderedDeliveryIsCountedNotLost) {
  const Config c{2, false, 64, 1000};
  const auto run = transmit<Layer::udp_payload>(make_plan<Layer::udp_payload>(c), pushy({}));
  auto frames = delivered(run);
  // Swap neighbours in the data part: within one batch they are one stream's consecutive sequences.
  uint64_t swaps = 0;
  for (size_t i = 0; i + 1 < 900; i += 50) {
    if (decode(frames[i]).stream != decode(frames[i + 1]).stream) continue;
    std::swap(frames[i], frames[i + 1]);
    ++swaps;
  }
  ASSERT_GT(swaps, 0u);
  const auto rx = receive<Layer::udp_payload>(frames);
  uint64_t reordered = 0;
  for (const auto& f : run.result.flows) reordered += rx.find(f.stream)->seq.counts().reordered;
  EXPECT_EQ(reordered, swaps);
  EXPECT_EQ(rx.counters.lost_so_far, 0u);
}

TEST(RunTxUdpPayload, MissingEndMarkersFallBackToGaps) {
  const Config c{1, false, 64, 1000};
  const auto run = transmit<Layer::udp_payload>(make_plan<Layer::udp_payload>(c), pushy({100, 999}));
  auto frames = delivered(run);
  frames.resize(frames.size() - 3);  // all end markers lost
  const auto rx = receive<Layer::udp_payload>(frames);
  EXPECT_EQ(rx.counters.end_markers, 0u);
  EXPECT_EQ(rx.counters.lost_so_far, 1u) << "999 was the last: trailing loss is invisible without the marker";
  const auto sum = report::summarize({rx}, 1000);
  EXPECT_TRUE(sum.lost_from_expect);
  EXPECT_EQ(sum.lost, 2u);
}

TEST(RunTxUdpPayload, StopBeforeStartSendsOnlyEndMarkers) {
  const Config c{2, false, 64, 1000};
  std::atomic<bool> stop{true};
  const auto run = transmit<Layer::udp_payload>(make_plan<Layer::udp_payload>(c), pushy({}), &stop);
  EXPECT_EQ(run.result.counters.packets, 0u);
  EXPECT_EQ(run.result.counters.end_markers, 6u);
  for (const auto& rec : run.q->log) {
    const wire::Decoded d = decode(rec.bytes);
    ASSERT_EQ(d.verdict, wire::Verdict::end);
    EXPECT_EQ(d.end.total_sent, 0u);
  }
}

TEST(RunTxUdpPayload, StopFlagEndsUnboundedRunWithConsistentTotals) {
  Config c{2, false, 64, 0};
  auto plan = make_plan<Layer::udp_payload>(c);
  std::atomic<bool> stop{false};
  TxBehaviour b = pushy({3});
  b.stop_after = 555;
  const auto run = transmit<Layer::udp_payload>(plan, b, &stop);
  const auto& r = run.result;
  EXPECT_GE(r.counters.packets, 555u);
  EXPECT_EQ(r.counters.end_markers, 6u);
  EXPECT_EQ(r.flows[0].next_seq + r.flows[1].next_seq, r.counters.packets);
  std::map<uint16_t, uint64_t> data, total;
  for (const auto& rec : run.q->log) {
    const wire::Decoded d = decode(rec.bytes);
    if (d.verdict == wire::Verdict::data) {
      EXPECT_EQ(d.seq, data[d.stream]++);
    } else {
      ASSERT_EQ(d.verdict, wire::Verdict::end);
      total[d.stream] = d.end.total_sent;
    }
  }
  for (const auto& f : r.flows) {
    EXPECT_EQ(data[f.stream], f.next_seq);
    EXPECT_EQ(total[f.stream], f.next_seq);
  }
}

// Flows share a quota evenly whatever the burst and batch, through a queue
// that takes part of some batches, refuses others and fails single packets
// for good (a failed packet counts as sent on its stream).
TEST(RunTxUdpPayload, FlowsShareTheQuotaToWithinOnePacket) {
  for (const uint32_t burst : {1u, 7u, 100u, 128u})
    for (const uint32_t batch : {1u, 32u, 64u})
      for (const uint16_t flows : {uint16_t{3}, uint16_t{4}, uint16_t{8}}) {
        const Config c{flows, false, 64, 2001};
        auto plan = make_plan<Layer::udp_payload>(c);
        plan.pace.burst = burst;
        plan.batch = batch;
        const auto run = transmit<Layer::udp_payload>(plan, pushy());
        const std::string what = "burst " + std::to_string(burst) + ", batch " + std::to_string(batch) + ", " +
                                 std::to_string(flows) + " flows";
        ASSERT_EQ(run.result.counters.packets, c.quota) << what;
        uint64_t lo = ~0ull, hi = 0, sum = 0;
        for (const auto& f : run.result.flows) {
          lo = std::min(lo, f.next_seq);
          hi = std::max(hi, f.next_seq);
          sum += f.next_seq;
        }
        EXPECT_EQ(sum, c.quota) << what;
        EXPECT_LE(hi - lo, 1u) << what;
        // Every packet still numbered within its own stream, and on its own flow.
        std::map<uint16_t, uint64_t> seq;
        for (const auto& rec : run.q->log) {
          const wire::Decoded d = decode(rec.bytes);
          if (d.verdict != wire::Verdict::data) continue;
          ASSERT_EQ(d.seq, seq[d.stream]++) << what;
          ASSERT_EQ(stream_id(rec.flow), d.stream) << what;
        }
      }
}

// ---- Ethernet queue (raw backends: the engine writes the headers) ----

class RunTxEthernet : public ::testing::TestWithParam<bool> {};  // param: IPv6

TEST_P(RunTxEthernet, OneFlowFramesParseAndCarryValidUdpChecksums) {
  const Config c{1, GetParam(), 64, 1000};
  const auto plan = make_plan<Layer::ethernet>(c);
  const auto run = transmit<Layer::ethernet>(plan, pushy());
  check_tx(c, plan, run, 5);
  for (const auto& rec : run.q->log) EXPECT_EQ(rec.bytes.size(), net::headers_len(c.ipv6) + 64);
}

TEST_P(RunTxEthernet, OneFlowFramesRoundTripThroughRunRx) {
  const Config c{1, GetParam(), 64, 1000};
  const auto run = transmit<Layer::ethernet>(make_plan<Layer::ethernet>(c), pushy());
  const auto rx = receive<Layer::ethernet>(delivered(run));
  check_rx(c, run, rx);
  EXPECT_EQ(rx.counters.corrupt, 0u);
  EXPECT_EQ(rx.counters.foreign, 0u);
}

TEST_P(RunTxEthernet, InjectedFramesAreClassified) {
  const bool v6 = GetParam();
  const Config c{1, v6, 64, 1000};
  const auto run = transmit<Layer::ethernet>(make_plan<Layer::ethernet>(c), pushy());
  auto frames = delivered(run);
  const size_t payload_at = net::headers_len(v6);
  // Corrupted payload behind a recomputed (valid) UDP checksum: only the payload check sees it.
  auto corrupt = frames[20];
  corrupt[payload_at + 50] ^= 0x01;
  net::udp_finish_checksum(corrupt, v6);
  const auto dup = frames[21];
  auto other_port = frames[22];  // right payload, another destination port
  other_port[payload_at - 8 + 2] ^= 0x01;
  std::vector<uint8_t> arp(60, 0);
  arp[12] = 0x08;
  arp[13] = 0x06;
  auto truncated = frames[23];
  truncated.resize(payload_at - 3);
  frames.insert(frames.begin() + 100, corrupt);
  frames.insert(frames.begin() + 200, dup);
  frames.insert(frames.begin() + 300, other_port);
  frames.insert(frames.begin() + 400, arp);
  frames.insert(frames.begin() + 500, truncated);
  const auto rx = receive<Layer::ethernet>(frames);
  EXPECT_EQ(rx.counters.frames, frames.size());
  EXPECT_EQ(rx.counters.corrupt, 1u);
  EXPECT_EQ(rx.find(stream_id(0))->corrupt, 1u);
  EXPECT_EQ(rx.counters.foreign, 3u) << "other port, ARP, truncated frame";
  EXPECT_EQ(rx.counters.data, 1000u - 5 + 1);
  EXPECT_EQ(rx.find(stream_id(0))->seq.counts().duplicates, 1u);
  EXPECT_EQ(rx.counters.lost_so_far, 5u);
}

INSTANTIATE_TEST_SUITE_P(IpVersions, RunTxEthernet, ::testing::Bool(),
                         [](const auto& info) { return std::string(info.param ? "ipv6" : "ipv4"); });

// With several flows, slots the backend reuses (stale == false) still hold
// the headers of whichever flow used them last; a frame of stream B must
// still leave with flow B's source port.
TEST(RunTxEthernetFlows, ReusedSlotCarriesTheHeadersOfItsOwnFlow) {
  const Config c{2, false, 64, 1000};
  const auto plan = make_plan<Layer::ethernet>(c);
  const auto run = transmit<Layer::ethernet>(plan, pushy({}));
  uint64_t wrong = 0, first_wrong = ~0ull;
  for (size_t i = 0; i < run.q->log.size(); ++i) {
    net::ParsedUdp p;
    const wire::Decoded d = decode(payload_of<Layer::ethernet>(run.q->log[i].bytes, &p));
    ASSERT_EQ(p.status, net::ParseStatus::ok);
    const uint16_t flow = static_cast<uint16_t>(d.stream - 10);
    if (p.src_port != kSrcPortBase + flow) {
      if (!wrong) first_wrong = i;
      ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0u) << "frames with another flow's headers; first at frame " << first_wrong << " of "
                       << run.q->log.size();
}

// End markers are longer than the data when --size < 64 (end_marker_plan):
// on an Ethernet queue their IP and UDP length fields must say so.
TEST(RunTxEthernetFlows, EndMarkersLongerThanDataPayloadHaveTheirOwnLengths) {
  const Config c{1, false, 32, 100};
  const auto plan = make_plan<Layer::ethernet>(c);
  ASSERT_EQ(plan.end_payload.len, 64u);
  const auto run = transmit<Layer::ethernet>(plan, pushy({}));
  ASSERT_EQ(run.q->log.size(), 103u);
  for (size_t i = 100; i < 103; ++i) {
    net::ParsedUdp p;
    const auto pl = payload_of<Layer::ethernet>(run.q->log[i].bytes, &p);
    ASSERT_EQ(p.status, net::ParseStatus::ok);
    EXPECT_EQ(p.payload_len, 64u) << "end marker " << i - 100 << ": UDP length of the data packets";
    EXPECT_EQ(decode(pl).verdict, wire::Verdict::end) << "end marker " << i - 100;
  }
  const auto rx = receive<Layer::ethernet>(delivered(run));
  EXPECT_EQ(rx.counters.end_markers, 3u);
  EXPECT_EQ(rx.counters.malformed, 0u);
}

// A size mix (pktgen --size 18,100,1000 --weights 1,2,3): through partial,
// refused and failed commits and on reused slots, the k-th data packet taken
// has the size the cycle names at k (a failed one too: it was sent, the OS
// refused it), its lengths and UDP checksum are right for that size, and
// the receiver takes every one that was delivered.
template <Layer L>
void check_size_mix(bool ipv6) {
  const std::vector<uint32_t> sizes{18, 100, 1000};
  const std::vector<uint8_t> cycle = engine::size_mix_cycle({1, 2, 3});
  Config c{2, ipv6, 1000, 999};
  engine::TxPlan plan = make_plan<L>(c);
  for (uint32_t s : sizes) plan.mix.push_back(wire::PayloadPlan::make(s));
  plan.mix_cycle = cycle;
  plan.end_body.data_size = 0;
  for (uint16_t f = 0; f < c.flows; ++f)
    for (uint32_t s : sizes) {
      plan.flows[f].mix_headers.emplace_back();
      if constexpr (L == Layer::ethernet) net::build_udp_headers(plan.flows[f].mix_headers.back().bytes, endpoints(ipv6, f), s);
    }
  const auto run = transmit<L>(plan, pushy({5, 250, 251, 777}));
  const auto& r = run.result;
  EXPECT_EQ(r.counters.packets, c.quota);
  EXPECT_EQ(r.counters.failed, 4u);
  std::vector<uint64_t> want(sizes.size(), 0);
  uint64_t bytes = 0, k = 0, wrong_size = 0, bad = 0;
  for (const TxRecord& rec : run.q->log) {
    net::ParsedUdp parsed;
    const auto pl = payload_of<L>(rec.bytes, &parsed);
    const wire::Decoded d = decode(pl);
    if (d.verdict == wire::Verdict::end) continue;
    if (d.verdict != wire::Verdict::data) ++bad;
    if constexpr (L == Layer::ethernet) {
      if (!net::udp_checksums_ok(rec.bytes, parsed)) ++bad;
    }
    const uint8_t cls = cycle[k++ % cycle.size()];
    ++want[cls];
    bytes += sizes[cls];
    if (pl.size() != sizes[cls]) ++wrong_size;
  }
  EXPECT_EQ(k, c.quota);
  EXPECT_EQ(bad, 0u) << "data frames that do not decode or whose UDP checksum is wrong";
  EXPECT_EQ(wrong_size, 0u) << "data packets whose size is not the one the cycle names";
  EXPECT_EQ(r.mix_packets, want);
  EXPECT_EQ(r.counters.payload_bytes, bytes);
  const auto rx = receive<L>(delivered(run));
  EXPECT_EQ(rx.counters.data, c.quota - 4);
  EXPECT_EQ(rx.counters.corrupt + rx.counters.malformed, 0u);
}

TEST(RunTxSizeMix, UdpPayloadSizesFollowTheCycle) { check_size_mix<Layer::udp_payload>(false); }
TEST(RunTxSizeMix, EthernetSizesFollowTheCycleWithTheirOwnHeaders) { check_size_mix<Layer::ethernet>(false); }
TEST(RunTxSizeMix, EthernetIpv6) { check_size_mix<Layer::ethernet>(true); }

// The cycle: each size's share exact over one cycle, spread so that no size
// waits longer than its share allows, ties to the size listed first.
TEST(SizeMixCycle, WeightsExactPerCycleAndInterleaved) {
  const std::vector<uint8_t> imix = engine::size_mix_cycle({7, 4, 1});
  EXPECT_EQ(imix, (std::vector<uint8_t>{0, 1, 0, 0, 1, 0, 2, 0, 1, 0, 1, 0}));
  const std::vector<uint32_t> weights{5, 1, 30, 2};
  const std::vector<uint8_t> cycle = engine::size_mix_cycle(weights);
  ASSERT_EQ(cycle.size(), 38u);
  for (uint8_t k = 0; k < weights.size(); ++k) {
    EXPECT_EQ(static_cast<uint32_t>(std::count(cycle.begin(), cycle.end(), k)), weights[k]) << "size " << int{k};
    // Any window of the cycle (wrapping) holds size k within two packets of its share.
    for (size_t start = 0; start < cycle.size(); ++start)
      for (size_t len = 1; len <= cycle.size(); ++len) {
        size_t n = 0;
        for (size_t i = 0; i < len; ++i) n += cycle[(start + i) % cycle.size()] == k;
        const double share = static_cast<double>(len) * weights[k] / 38.0;
        EXPECT_LT(std::abs(static_cast<double>(n) - share), 2.0) << "size " << int{k} << " window " << start << "+" << len;
      }
  }
  EXPECT_EQ(engine::size_mix_cycle({1, 1}), (std::vector<uint8_t>{0, 1}));
}

}  // namespace

// pktgen --replay: a capture's frames go out whole, byte for byte, in file
// order and from the first again after the last, through partial commits,
// refused commits and empty reserves; no end markers of the engine's own.
TEST(RunTxReplay, FramesGoOutWholeInFileOrderLoopingToTheQuota) {
  auto frames = std::make_shared<net::PcapFrames>();
  frames->offsets.push_back(0);
  for (uint32_t len : {60u, 1514u, 97u}) {
    for (uint32_t i = 0; i < len; ++i) frames->bytes.push_back(static_cast<uint8_t>(len + i * 7));
    frames->offsets.push_back(static_cast<uint32_t>(frames->bytes.size()));
    frames->t_ns.push_back(0);
    frames->max_len = std::max(frames->max_len, len);
  }
  engine::TxPlan plan = make_plan<Layer::ethernet>({1, false, 64, 10});
  plan.replay = frames;
  const auto run = transmit<Layer::ethernet>(plan, TxBehaviour{});
  ASSERT_EQ(run.q->log.size(), 10u);
  uint64_t bytes = 0;
  for (size_t i = 0; i < run.q->log.size(); ++i) {
    const std::span<const uint8_t> want = frames->frame(i % 3);
    EXPECT_EQ(run.q->log[i].bytes, std::vector<uint8_t>(want.begin(), want.end())) << "frame " << i;
    bytes += want.size();
  }
  EXPECT_EQ(run.result.counters.packets, 10u);
  EXPECT_EQ(run.result.counters.end_markers, 0u);
  EXPECT_EQ(run.result.counters.payload_bytes, bytes);
  EXPECT_EQ(run.q->contract_errors, 0u);
  EXPECT_EQ(run.q->oversize, 0u);
}
