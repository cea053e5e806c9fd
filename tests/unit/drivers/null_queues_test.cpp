// drivers/null: the engine's loops over the null queues. Every frame the RX
// side synthesises must be what a real pktgen sends (headers, checksums,
// sequences), and every frame the engine writes into the TX side must be one.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "engine/rx_loop.hpp"
#include "engine/tx_loop.hpp"
#include "null/null_queues.hpp"
#include "socket/udp_socket.hpp"
#include "wire/decode.hpp"
#include "wire/test_payload.hpp"

namespace {

using namespace rateline;

static_assert(engine::TxQueue<drivers::NullTxQueue>);
static_assert(engine::RxQueue<drivers::NullRxQueue>);

drivers::NullRxConfig rx_config(uint32_t payload, bool ipv6) {
  drivers::NullRxConfig c;
  c.ipv6 = ipv6;
  c.payload_bytes = payload;
  c.stream = 3;
  c.sender_id = 7;
  c.batch = 16;
  c.endpoints.src_ip = drivers::make_address(ipv6 ? "2001:db8::1" : "192.0.2.1", 0).ip();
  c.endpoints.dst_ip = drivers::make_address(ipv6 ? "::1" : "127.0.0.1", 0).ip();
  c.endpoints.src_port = 40000;
  c.endpoints.dst_port = 9000;
  return c;
}

class NullRx : public testing::TestWithParam<std::tuple<uint32_t, bool>> {};

TEST_P(NullRx, SynthesisedFramesAreValidAndInSequence) {
  const auto [payload, ipv6] = GetParam();
  drivers::NullRxQueue q(rx_config(payload, ipv6));
  uint64_t expect_seq = 0;
  for (int round = 0; round < 3; ++round) {
    const auto frames = q.poll(16);
    ASSERT_EQ(frames.size(), 16u);
    for (const engine::RxFrame& f : frames) {
      const std::span<const uint8_t> bytes(f.data, f.len);
      const net::ParsedUdp p = net::parse_udp_frame(bytes);
      ASSERT_EQ(p.status, net::ParseStatus::ok);
      EXPECT_EQ(p.ipv6, ipv6);
      EXPECT_EQ(p.dst_port, 9000);
      EXPECT_EQ(p.payload_len, payload);
      EXPECT_TRUE(net::udp_checksums_ok(bytes, p)) << "seq " << expect_seq;
      const wire::Decoded d = wire::decode(f.data + p.payload_offset, p.payload_len);
      ASSERT_EQ(d.verdict, wire::Verdict::data);
      EXPECT_EQ(d.stream, 3);
      EXPECT_EQ(d.sender, 7);
      EXPECT_EQ(d.seq, expect_seq++);
      EXPECT_NE(d.tx_ns, 0u);
    }
    q.release();
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, NullRx,
                         testing::Combine(testing::Values(32u, 64u, 1400u, 8999u), testing::Bool()));

TEST(NullRx, TheReceiveLoopCountsEveryFrameExactly) {
  drivers::NullRxQueue q(rx_config(200, false));
  engine::RxPlan plan;
  plan.batch = 16;
  plan.udp_port = 9000;
  plan.publish_every_ns = 1'000'000;
  stats::RxSnapshotRing snapshots(64);
  std::atomic<bool> stop{false};
  // Stop once the loop has published at least 50000 packets: the count is then whatever it saw, and must be whole.
  std::thread stopper([&] {
    for (;;) {
      if (auto s = snapshots.try_pop(); s && s->counters.data >= 50000) break;
      std::this_thread::yield();
    }
    stop.store(true);
  });
  const engine::RxResult r = engine::run_rx(q, plan, snapshots, stop, [&q] { return q.drops(); });
  stopper.join();
  ASSERT_EQ(r.streams.size(), 1u);
  const auto& s = r.streams.front();
  // Polled in whole batches of 16, all data, none lost, none out of order, none corrupt.
  EXPECT_GE(r.counters.data, 50000u);
  EXPECT_EQ(r.counters.data % 16, 0u);
  const stats::SequenceCounts c = s.seq.counts();
  EXPECT_EQ(c.received, r.counters.data);
  EXPECT_EQ(c.unique, r.counters.data);
  EXPECT_EQ(c.highest_next, c.unique);  // no gap: nothing lost
  EXPECT_EQ(c.duplicates + c.reordered + c.stale + c.implausible, 0u);
  EXPECT_EQ(r.counters.corrupt, 0u);
  EXPECT_EQ(r.counters.foreign + r.counters.malformed, 0u);
}

TEST(NullRx, AQuotaEndsAfterExactlyThatManyFrames) {
  drivers::NullRxConfig cfg = rx_config(64, false);
  cfg.frames = 100;
  drivers::NullRxQueue q(cfg);
  uint64_t seen = 0;
  for (int polls = 0; polls < 20; ++polls) {
    const auto frames = q.poll(cfg.batch);
    for (const engine::RxFrame& f : frames) {
      const net::ParsedUdp p = net::parse_udp_frame({f.data, f.len});
      ASSERT_EQ(p.status, net::ParseStatus::ok);
      const wire::Decoded d = wire::decode(f.data + p.payload_offset, p.payload_len);
      ASSERT_EQ(d.verdict, wire::Verdict::data);
      EXPECT_EQ(d.seq, seen);
      ++seen;
    }
    q.release();
  }
  EXPECT_EQ(seen, 100u);  // six batches of 16 and one of 4, then nothing, however often it is polled
}

TEST(NullTx, EveryFrameTheEngineWritesIsValid) {
  for (const bool ipv6 : {false, true}) {
    const uint32_t payload = 100;
    drivers::NullTxQueue q(8, 1600);
    engine::TxPlan plan;
    plan.quota = 1000;
    plan.batch = 8;
    plan.ipv6 = ipv6;
    plan.pace = pace::PacePlan::for_delay(1000, 0);  // whole batches of 8: the slots end with 992..999
    plan.payload = wire::PayloadPlan::make(payload, wire::kHeaderBytes / 8, 5);
    plan.end_payload = wire::end_marker_plan(payload, 5);
    plan.end_markers = 0;  // the last frames in the slots are then data frames
    engine::TxFlow flow;
    net::UdpEndpoints ep;
    ep.src_ip = drivers::make_address(ipv6 ? "2001:db8::2" : "192.0.2.2", 0).ip();
    ep.dst_ip = drivers::make_address(ipv6 ? "2001:db8::3" : "192.0.2.3", 0).ip();
    ep.src_port = 40000;
    ep.dst_port = 9000;
    flow.headers_len = static_cast<uint32_t>(net::build_udp_headers(flow.headers, ep, payload));
    plan.flows.push_back(flow);
    stats::TxSnapshotRing snapshots(16);
    std::atomic<bool> stop{false};
    const engine::TxResult r = engine::run_tx(q, plan, snapshots, stop);
    EXPECT_EQ(r.counters.packets, 1000u);
    EXPECT_EQ(r.counters.failed, 0u);
    EXPECT_EQ(r.flows.front().next_seq, 1000u);
    // The slots hold the last batch: sequences 992..999, each a valid frame.
    const auto slots = q.reserve(8);
    ASSERT_EQ(slots.size(), 8u);
    for (uint32_t i = 0; i < 8; ++i) {
      const std::span<const uint8_t> bytes(slots[i].data, slots[i].len);
      const net::ParsedUdp p = net::parse_udp_frame(bytes);
      ASSERT_EQ(p.status, net::ParseStatus::ok);
      EXPECT_TRUE(net::udp_checksums_ok(bytes, p));
      const wire::Decoded d = wire::decode(slots[i].data + p.payload_offset, p.payload_len);
      ASSERT_EQ(d.verdict, wire::Verdict::data);
      EXPECT_EQ(d.seq, 992u + i);
      EXPECT_EQ(d.sender, 5);
    }
  }
}

}  // namespace
