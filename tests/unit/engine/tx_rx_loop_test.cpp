// The engine's send and receive loops (src/engine/tx_loop.hpp, rx_loop.hpp)
// on a UDP-payload queue (sockets, io_uring), driven through the fake
// queues of loop_harness.hpp.
#include <gtest/gtest.h>

#include "loop_harness.hpp"

namespace {

using namespace rateline;
using namespace rateline::loop_harness;

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

}  // namespace
