// The DPDK queues (drivers/dpdk/) on a net_ring port, in-process: TX
// enqueues mbufs on the port's ring, RX dequeues the very same mbufs. So a
// sent mbuf stays out of the sender's hands (refcount 2) until the receiver
// releases it: reserve() must skip it, and the frame in it must still be
// intact when it comes round again (prebuilt mbufs are not stale on reuse).
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
  constexpr uint64_t kCount = 200'000;  // 100 times the 2048 prebuilt mbufs: every one reused, several flows each
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

const ::testing::Environment* const kEnvironment = ::testing::AddGlobalTestEnvironment(new DpdkEnvironment);

}  // namespace
