// The DPDK queues (drivers/dpdk/) on a net_ring port, in-process: TX
// enqueues mbufs on the port's ring, RX dequeues the very same mbufs and
// frees them back to the TX queue's own pool. So a sent mbuf is out of the
// sender's hands until the receiver releases it, and when the pool hands it
// out again its frame must still hold the headers its tag claims (reused
// mbufs are not stale), while a new queue (other flows, other lengths) on
// the same pool must not trust tags an earlier queue left.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "dpdk/dpdk_port.hpp"
#include "dpdk/dpdk_queues.hpp"
#include "engine/rx_loop.hpp"
#include "engine/tx_loop.hpp"
#include "net/frame.hpp"
#include "report/rx_summary.hpp"
#include "wire/decode.hpp"
#include "wire/test_payload.hpp"

namespace {

using namespace rateline;

static_assert(engine::TxQueue<drivers::DpdkTxQueue>);
static_assert(engine::RxQueue<drivers::DpdkRxQueue>);

constexpr uint16_t kDstPort = 9000;

drivers::DpdkPort* g_port = nullptr;
std::string why_not;

class DpdkEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    drivers::DpdkPortConfig cfg;
    cfg.tool = "unit";
    cfg.eal_args = {"--no-pci", "--vdev=net_ring0", "--log-level=*:error"};
    cfg.worker_cpus = {-1};
    cfg.transmit = true;
    cfg.max_frame_bytes = 1514;
    try {
      port_ = std::make_unique<drivers::DpdkPort>(cfg);
      g_port = port_.get();
    } catch (const std::exception& e) {
      why_not = e.what();  // the tests skip, saying why
    }
  }
  void TearDown() override {
    g_port = nullptr;
    port_.reset();
  }

 private:
  std::unique_ptr<drivers::DpdkPort> port_;
};

engine::TxPlan make_plan(uint64_t count, uint32_t payload, uint16_t flows) {
  engine::TxPlan plan;
  plan.quota = count;
  plan.pace = pace::PacePlan::for_delay(64, 0);
  plan.payload = wire::PayloadPlan::make(payload);
  plan.end_payload = wire::end_marker_plan(payload);
  plan.end_body.count = count;
  plan.end_body.burst = 64;
  plan.end_body.stream_count = flows;
  plan.end_body.data_size = static_cast<uint16_t>(payload);
  plan.batch = 32;
  plan.stall_timeout_ns = 200'000'000;
  for (uint16_t f = 0; f < flows; ++f) {
    net::UdpEndpoints ep;
    ep.src_mac = g_port->mac();
    ep.dst_mac = {2, 0, 0, 0, 0, 2};
    in_addr a{}, b{};
    inet_pton(AF_INET, "198.18.0.1", &a);
    inet_pton(AF_INET, "198.18.0.2", &b);
    ep.src_ip = net::IpAddress::v4(a);
    ep.dst_ip = net::IpAddress::v4(b);
    ep.src_port = static_cast<uint16_t>(5000 + f);
    ep.dst_port = kDstPort;
    engine::TxFlow flow;
    flow.stream = f;
    flow.queue_flow = f;
    flow.headers_len = static_cast<uint32_t>(net::build_udp_headers(flow.headers, ep, payload));
    net::build_udp_headers(flow.end_headers, ep, plan.end_payload.len);
    plan.flows.push_back(flow);
  }
  return plan;
}

TEST(DpdkQueues, EveryPacketArrivesIntactThroughHeldAndReusedMbufs) {
  if (!g_port) GTEST_SKIP() << "no DPDK here: " << why_not;
  constexpr uint64_t kCount = 200'000;  // ~100 times the TX pool's 2047 mbufs: every one reused, several flows each
  std::atomic<bool> rx_stop{false}, tx_stop{false};
  stats::RxSnapshotRing rx_snaps(16);
  engine::RxResult rx_result;
  std::thread receiver([&] {
    drivers::DpdkRxQueue q(g_port->rx_config(0, 64));
    engine::RxPlan plan;
    plan.udp_port = kDstPort;
    plan.max_streams = 16;
    rx_result = engine::run_rx(q, plan, rx_snaps, rx_stop, [&q] { return q.drops(); });
  });
  stats::TxSnapshotRing tx_snaps(16);
  engine::TxResult tx_result;
  std::thread sender([&] {
    drivers::DpdkTxQueue q(g_port->tx_config(0));
    tx_result = engine::run_tx(q, make_plan(kCount, 200, 3), tx_snaps, tx_stop);
  });
  sender.join();
  // The end markers are the last frames on the ring: wait until the receiver saw them.
  for (int i = 0; i < 500; ++i) {
    while (auto s = rx_snaps.try_pop())
      if (s->counters.streams_ended == 3) i = 500;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  rx_stop = true;
  receiver.join();

  EXPECT_FALSE(tx_result.stalled);
  EXPECT_EQ(tx_result.counters.packets, kCount);
  EXPECT_EQ(tx_result.counters.end_markers, 9u);
  const report::RxSummary sum = report::summarize({rx_result}, 0);
  EXPECT_EQ(sum.unique, kCount);
  EXPECT_EQ(sum.lost, 0u);
  EXPECT_EQ(sum.totals.corrupt, 0u);
  EXPECT_EQ(sum.totals.malformed, 0u);
  EXPECT_EQ(sum.totals.foreign, 0u);
  EXPECT_EQ(sum.totals.end_markers, 9u);
}

TEST(DpdkQueues, FullRingStallsInsteadOfSpinningAndGivesSequencesBack) {
  if (!g_port) GTEST_SKIP() << "no DPDK here: " << why_not;
  // Nobody receives: the ring fills, tx_burst takes nothing, the engine's stall guard ends the run.
  std::atomic<bool> stop{false};
  stats::TxSnapshotRing snaps(16);
  engine::TxResult r;
  std::thread sender([&] {
    drivers::DpdkTxQueue q(g_port->tx_config(0));
    r = engine::run_tx(q, make_plan(1'000'000, 64, 1), snaps, stop);
  });
  sender.join();
  EXPECT_TRUE(r.stalled);
  EXPECT_GT(r.counters.retries, 0u);
  EXPECT_LT(r.counters.packets, 1'000'000u);
  EXPECT_EQ(r.flows[0].next_seq, r.counters.packets);  // untaken slots gave their sequence numbers back
  // Drain the ring so the mbufs go back (the receiver frees what it dequeued).
  drivers::DpdkRxQueue q(g_port->rx_config(0, 64));
  uint64_t drained = 0;
  for (int i = 0; i < 100000; ++i) {
    const auto frames = q.poll(64);
    if (frames.empty()) break;
    drained += frames.size();
    q.release();
  }
  EXPECT_EQ(drained, r.counters.packets);
}

// Every frame a receiver sees, checked whole: parses, IP and UDP checksums
// right, the length its kind should have, and the source port of its stream.
struct FrameAudit {
  uint64_t data = 0, end_markers = 0, bad = 0;
  std::string first_bad;
};

void audit(const engine::RxFrame& f, uint32_t payload, FrameAudit& a) {
  const net::ParsedUdp p = net::parse_udp_frame({f.data, f.len});
  std::string why;
  wire::Decoded d;
  if (p.status != net::ParseStatus::ok) why = "does not parse";
  else if (!net::udp_checksums_ok({f.data, f.len}, p)) why = "bad IP/UDP checksum";
  else {
    d = wire::decode(f.data + p.payload_offset, p.payload_len);
    const uint32_t want = d.verdict == wire::Verdict::end ? wire::end_marker_plan(payload).len : payload;
    if (d.verdict != wire::Verdict::data && d.verdict != wire::Verdict::end) why = "payload does not decode";
    else if (p.payload_len != want) why = "payload of " + std::to_string(p.payload_len) + " B";
    else if (p.src_port != 5000 + d.stream) why = "stream " + std::to_string(d.stream) + " from port " + std::to_string(p.src_port);
  }
  if (!why.empty()) {
    if (!a.bad++) a.first_bad = why;
    return;
  }
  (d.verdict == wire::Verdict::end ? a.end_markers : a.data)++;
}

TEST(DpdkQueues, ReusedMbufsHoldTheirOwnFlowsHeadersAcrossQueuesAndLengths) {
  if (!g_port) GTEST_SKIP() << "no DPDK here: " << why_not;
  // One pool, successive queues: lengths and flow counts change, so a tag
  // left by an earlier queue would put wrong lengths or ports on the wire.
  const std::pair<uint32_t, uint16_t> runs[] = {{200, 3}, {64, 2}, {1400, 1}, {64, 3}, {32, 2}};
  for (const auto& [payload, flows] : runs) {
    constexpr uint64_t kCount = 20'000;
    std::atomic<bool> rx_stop{false};
    FrameAudit a;
    std::thread receiver([&] {
      drivers::DpdkRxQueue q(g_port->rx_config(0, 64));
      while (!rx_stop.load() || !q.poll(0).empty()) {
        for (const engine::RxFrame& f : q.poll(64)) audit(f, payload, a);
        q.release();
      }
    });
    std::atomic<bool> tx_stop{false};
    stats::TxSnapshotRing snaps(16);
    engine::TxResult r;
    {
      drivers::DpdkTxQueue q(g_port->tx_config(0));
      r = engine::run_tx(q, make_plan(kCount, payload, flows), snaps, tx_stop);
    }
    for (int i = 0; i < 200 && a.data + a.end_markers + a.bad < kCount + 3u * flows; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    rx_stop = true;
    receiver.join();
    const std::string run = std::to_string(payload) + " B x " + std::to_string(flows) + " flows";
    EXPECT_EQ(r.counters.packets, kCount) << run;
    EXPECT_EQ(a.bad, 0u) << run << ": first bad frame: " << a.first_bad;
    EXPECT_EQ(a.data, kCount) << run;
    EXPECT_EQ(a.end_markers, 3u * flows) << run;
  }
}

const ::testing::Environment* const kEnvironment = ::testing::AddGlobalTestEnvironment(new DpdkEnvironment);

}  // namespace
