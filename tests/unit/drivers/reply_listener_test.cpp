// pktgen --rtt's reply listener on a polled port (DPDK's shape): frames are
// handed over whole, and every one is timed, counted as what it is, or (not
// a datagram at all) left out. A fake port stands in for the RX queues.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "../net/frame_harness.hpp"
#include "socket/reply_listener.hpp"
#include "util/clock.hpp"
#include "wire/test_payload.hpp"

namespace rateline::drivers {
namespace {

constexpr uint16_t kSender = 4242, kReplyPort = 9000;
constexpr uint32_t kPayload = 200;

struct Frame {
  std::vector<uint8_t> bytes;
  uint64_t rx_ns;
};

// Hands each frame once, on the listener's thread, then reports empty polls.
class FakePort : public ReplyFramePort {
 public:
  explicit FakePort(std::vector<Frame> frames) : frames_(std::move(frames)) {}
  uint32_t poll(const Take& take) override {
    for (const Frame& f : frames_) take(f.bytes, f.rx_ns);
    const auto n = static_cast<uint32_t>(frames_.size());
    frames_.clear();
    return n;
  }

 private:
  std::vector<Frame> frames_;
};

// A reply as rx --reflect sends it: our payload, from rx's port to ours.
std::vector<uint8_t> reply(uint16_t sender, uint64_t tx_ns, uint16_t src_port = kReplyPort) {
  net::UdpEndpoints ep = net::frame_harness::v4_endpoints();
  ep.src_port = src_port;
  ep.dst_port = 5000;
  std::vector<uint8_t> f(net::headers_len(false) + kPayload);
  net::build_udp_headers(f, ep, kPayload);
  const wire::PayloadPlan plan = wire::PayloadPlan::make(kPayload, wire::kHeaderBytes / 8, sender);
  wire::fill_data_payload(f.data() + net::headers_len(false), plan, 0, 7, tx_ns);
  net::udp_finish_checksum(f, false);
  return f;
}

RttCounts listen(std::vector<Frame> frames, stats::LatencyHistogram* rtt = nullptr) {
  ReplyListener l(kSender, kReplyPort, kPayload);
  l.adopt_port(std::make_unique<FakePort>(std::move(frames)));
  EXPECT_FALSE(l.kernel_stamps()) << "a polled port's replies are stamped per burst, not by the kernel";
  l.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  l.stop();
  if (rtt) *rtt = l.rtt();
  return l.counts();
}

TEST(ReplyListenerPort, TimesOurRepliesFromTheReceiversPort) {
  const uint64_t now = now_ns() + 10'000'000;  // after the listener's run began
  stats::LatencyHistogram rtt;
  const RttCounts c = listen({{reply(kSender, now + 1000), now + 51'000}, {reply(kSender, now + 2000), now + 32'000}}, &rtt);
  EXPECT_EQ(c.replies, 2u);
  EXPECT_EQ(c.not_ours + c.other_sender + c.implausible + c.unauthenticated, 0u);
  ASSERT_EQ(rtt.samples(), 2u);
  EXPECT_EQ(rtt.min(), 30'000u);
  EXPECT_EQ(rtt.max(), 50'000u);
}

TEST(ReplyListenerPort, CountsWhatIsNoReplyOfOurs) {
  const uint64_t now = now_ns() + 10'000'000;
  std::vector<uint8_t> bad_sum = reply(kSender, now + 1000);
  bad_sum.back() ^= 0x5a;  // the UDP checksum no longer holds: a socket would never have had it
  std::vector<uint8_t> arp = reply(kSender, now + 1000);
  arp[12] = 0x08, arp[13] = 0x06;  // EtherType ARP: no datagram at all, left out
  const RttCounts c = listen({{reply(kSender + 1, now + 1000), now + 5000},           // another run's
                              {reply(kSender, now + 1'000'000'000), now + 5000},      // stamped after it arrived
                              {reply(kSender, now - 3'600'000'000'000), now + 5000},  // before this run began
                              {reply(kSender, now + 1000, 9999), now + 5000},         // not from rx's port
                              {bad_sum, now + 5000},
                              {arp, now + 5000}});
  EXPECT_EQ(c.replies, 0u);
  EXPECT_EQ(c.other_sender, 1u);
  EXPECT_EQ(c.implausible, 2u);
  EXPECT_EQ(c.not_ours, 2u);
}

}  // namespace
}  // namespace rateline::drivers
