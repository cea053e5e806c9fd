// drivers/socket: the sendmmsg/recvmmsg queues on loopback, driven by the
// engine's own loops as pktgen and rx drive them. Every data packet and end
// marker arrives once, intact, on its stream, or the receive socket's drop
// counter says the kernel dropped it; datagrams that are not ours or do not
// fit a slot are counted apart. Runs as any user: loopback, port 0.
#include <gtest/gtest.h>

#include <string>

#include "loopback_harness.hpp"
#include "socket/socket_queues.hpp"

namespace {

using namespace rateline;
using namespace rateline::loopback_test;
using drivers::SocketRxQueue;
using drivers::SocketTxQueue;

static_assert(engine::TxQueue<SocketTxQueue>);
static_assert(engine::RxQueue<SocketRxQueue>);

class SocketLoopback : public testing::TestWithParam<LoopbackCase> {};

TEST_P(SocketLoopback, EveryDatagramArrivesOnceOnItsStream) {
  const LoopbackCase& c = GetParam();
  if (is_v6(c))
    if (const std::string why = loopback_v6_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  expect_every_datagram_once(c, send_and_receive<SocketTxQueue, SocketRxQueue>(c));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SocketLoopback,
    testing::Values(LoopbackCase{"v4_200B", "127.0.0.1", 200, 1, false},
                    LoopbackCase{"v4_32B_header_only", "127.0.0.1", wire::kHeaderBytes, 1, false},
                    LoopbackCase{"v4_18B_short_form", "127.0.0.1", wire::kShortHeaderBytes, 1, false},
                    LoopbackCase{"v6_31B_short_form", "::1", wire::kHeaderBytes - 1, 2, false},
                    LoopbackCase{"v4_two_flows", "127.0.0.1", 200, 2, false},
                    // UDP_SEGMENT: one sendmsg per batch, the kernel cuts it; each datagram must still be whole.
                    LoopbackCase{"v4_200B_gso", "127.0.0.1", 200, 1, true},
                    LoopbackCase{"v4_32B_gso", "127.0.0.1", wire::kHeaderBytes, 1, true},
                    LoopbackCase{"v4_18B_gso", "127.0.0.1", wire::kShortHeaderBytes, 1, true},
                    LoopbackCase{"v6_200B", "::1", 200, 1, false},
                    LoopbackCase{"v6_two_flows_gso", "::1", 200, 2, true}),
    [](const testing::TestParamInfo<LoopbackCase>& info) { return std::string(info.param.name); });

TEST(SocketRx, DatagramsLongerThanTheSlotAreMalformedNotData) {
  // One byte over the limit fills the slot exactly (max + 1) and arrives
  // whole: the loop's max_payload_bytes makes it malformed all the same.
  expect_overlong_datagrams_malformed<SocketRxQueue>("127.0.0.1", kMaxDatagramBytes + 1);
}

TEST(SocketRx, StrangersAreForeignOrMalformedAndMakeNoStream) {
  expect_strangers_counted_apart<SocketRxQueue>("127.0.0.1");
}

TEST(SocketRx, KernelDropsOfAFullQueueAreReportedExactly) {
  if (const std::string why = socket_drops_unreadable_reason(); !why.empty()) GTEST_SKIP() << why;
  // The smallest receive buffer the kernel grants holds a few datagrams: most of 2000 are dropped.
  const RxRun run = expect_held_datagrams_accounted<SocketRxQueue>("127.0.0.1", 1, 2000);
  EXPECT_GT(run.result.counters.backend_drops, 0u);
}

TEST(SocketRx, KernelDropsAreReportedOnIpv6Too) {
  if (const std::string why = loopback_v6_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  if (const std::string why = socket_drops_unreadable_reason(); !why.empty()) GTEST_SKIP() << why;
  const RxRun run = expect_held_datagrams_accounted<SocketRxQueue>("::1", 1, 2000);
  EXPECT_GT(run.result.counters.backend_drops, 0u);
}

}  // namespace
