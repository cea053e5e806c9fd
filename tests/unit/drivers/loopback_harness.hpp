// Shared by the socket and io_uring queue tests: a receive queue bound on
// loopback (port 0, the kernel picks a free one) and run by the engine's
// receive loop in a thread of its own, a send through a TX queue and the
// engine's send loop, and the checks that every datagram arrived once.
// Loopback only, no privilege needed.
#pragma once

#include <gtest/gtest.h>

#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/rx_loop.hpp"
#include "engine/tx_loop.hpp"
#include "socket/udp_socket.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "wire/test_payload.hpp"

namespace rateline::loopback_test {

// Bounds every wait for the receiver: a test fails instead of hanging. Below
// meson's default timeout (30 s) for the whole binary, so the failure names the test.
inline constexpr std::chrono::seconds kDeadline{20};

// Sized as rx sizes it (rx/setup.cpp): the largest datagram expected plus one
// spare byte, so that a longer one arrives cut and is seen as such.
inline constexpr uint32_t kMaxDatagramBytes = 2048;
inline constexpr uint32_t kRxSlotBytes = kMaxDatagramBytes + 1;

inline constexpr uint16_t kSenderId = 0x5eed;  // pktgen draws one per run; never 0
inline constexpr uint64_t kPackets = 20000;

inline drivers::UdpRxConfig loopback_rx_config(const std::string& ip) {
  drivers::UdpRxConfig c;
  c.bind = drivers::make_address(ip, 0);
  c.slot_bytes = kRxSlotBytes;
  c.batch = 64;
  c.rcvbuf_bytes = 4 << 20;  // rx's default; root gets it forced, a user up to net.core.rmem_max
  c.reuseport = false;       // the port the kernel picked is ours alone: no other socket may share it
  c.poll_timeout_ms = 10;    // bounds how long the loop takes to see the stop flag
  return c;
}

// Empty when a UDP socket can bind [::1] here, else why not (IPv6 disabled, no ::1 on lo).
inline std::string loopback_v6_unavailable_reason() {
  const int fd = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "no IPv6 UDP socket here: " + errno_text(errno);
  const drivers::SocketAddress a = drivers::make_address("::1", 0);
  const int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&a.storage), a.len);
  const int e = errno;
  ::close(fd);
  return rc == 0 ? std::string() : "Couldn't bind [::1]:0: " + errno_text(e);
}

// Why the kernel's per-socket drop count cannot be read here ("" if it can):
// qemu-user does not translate SO_MEMINFO, so a drop test would wait for
// drops it can never see.
inline std::string socket_drops_unreadable_reason() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "no UDP socket here: " + errno_text(errno);
  uint32_t mem[SK_MEMINFO_VARS] = {};
  socklen_t l = sizeof mem;
  const int rc = getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &l);
  const int e = errno;
  ::close(fd);
  if (rc != 0) return "SO_MEMINFO unreadable here (" + errno_text(e) + "): kernel drops cannot be counted";
  if (l < sizeof(uint32_t) * (SK_MEMINFO_DROPS + 1)) return "SO_MEMINFO has no drop count here";
  return {};
}

inline drivers::SocketAddress bound_address(int fd) {
  drivers::SocketAddress a;
  a.len = sizeof a.storage;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a.storage), &a.len) != 0)
    throw SetupError("Couldn't read the receive socket's address: " + errno_text(errno));
  return a;
}

struct RxRun {
  engine::RxResult result;
  bool timed_out = false;  // the loop never published the awaited count
  uint64_t left_over = 0;  // frames still queued after the loop stopped: more than was sent
};

// One receive queue and its loop in a thread. The queue is made in that
// thread: an io_uring ring set up SINGLE_ISSUER takes submissions only from
// the thread that created it, as in the programs (drivers/queue_backend.hpp).
template <class RxQueue>
class LoopbackReceiver {
 public:
  // Returns once the queue is bound; rethrows what its constructor threw.
  // `hold`: the loop starts only at finish(), so that whatever is sent before
  // piles up in the kernel (tests of a full receive queue).
  explicit LoopbackReceiver(const drivers::UdpRxConfig& cfg, bool hold = false) : held_(hold) {
    std::promise<drivers::SocketAddress> bound;
    std::future<drivers::SocketAddress> bound_future = bound.get_future();
    thread_ = std::thread([this, cfg, bound = std::move(bound)]() mutable { run(cfg, bound); });
    try {
      address_ = bound_future.get();
    } catch (...) {
      thread_.join();
      throw;
    }
  }
  ~LoopbackReceiver() {
    if (!thread_.joinable()) return;
    stop_.store(true);
    unhold();
    thread_.join();
  }
  LoopbackReceiver(const LoopbackReceiver&) = delete;
  LoopbackReceiver& operator=(const LoopbackReceiver&) = delete;

  // Where it listens: the loopback address and the port the kernel chose.
  const drivers::SocketAddress& address() const { return address_; }

  // Lets the loop run until it has published that `datagrams` were received
  // or dropped by the kernel (or the deadline passed), then stops it.
  RxRun finish(uint64_t datagrams) {
    unhold();
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    bool reached = false;
    while (!reached && std::chrono::steady_clock::now() < deadline) {
      while (auto s = snapshots_.try_pop())
        if (s->counters.frames + s->counters.backend_drops >= datagrams) reached = true;
      if (!reached) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    stop_.store(true);
    thread_.join();
    run_.timed_out = !reached;
    return std::move(run_);
  }

 private:
  void run(const drivers::UdpRxConfig& cfg, std::promise<drivers::SocketAddress>& bound) {
    std::optional<RxQueue> q;
    try {
      q.emplace(cfg);
      bound.set_value(bound_address(q->info().fd));
    } catch (...) {
      bound.set_exception(std::current_exception());
      return;
    }
    held_.wait(true);  // pairs with unhold()'s store and notify
    engine::RxPlan plan;
    plan.batch = cfg.batch;
    plan.max_streams = 16;
    plan.max_payload_bytes = kMaxDatagramBytes;  // as rx sets it from --max-size
    plan.publish_every_ns = kNsPerMs;  // the main thread waits on these snapshots
    run_.result = engine::run_rx(*q, plan, snapshots_, stop_, [&q] { return q->drops(); });
    // The loop stops as soon as the count is reached; a duplicate the queue
    // made would still wait here. One more poll (it blocks poll_timeout_ms) finds it.
    run_.left_over = q->poll(cfg.batch).size();
    q->release();
  }
  void unhold() {
    held_.store(false);
    held_.notify_all();
  }

  std::atomic<bool> held_;
  std::atomic<bool> stop_{false};
  stats::RxSnapshotRing snapshots_{64};  // full = the main thread is not waiting yet: the loop skips, never blocks
  RxRun run_;  // written by the thread, read after join()
  drivers::SocketAddress address_;
  std::thread thread_;
};

// ---- sending through a TX queue and run_tx ----

struct LoopbackCase {
  const char* name;
  const char* ip;
  uint32_t payload_bytes;
  uint16_t flows;  // one socket (source port) per flow, one stream each
  bool gso;
};

inline bool is_v6(const LoopbackCase& c) { return std::strchr(c.ip, ':') != nullptr; }

// As pktgen builds it (pktgen/setup.cpp), for one worker.
inline engine::TxPlan loopback_tx_plan(const LoopbackCase& c) {
  engine::TxPlan p;
  p.quota = kPackets;
  p.batch = 32;
  // A modest rate so the receiver keeps up and the count is exact in
  // practice; 20000 packets take 0.1 s.
  p.pace = pace::PacePlan::for_rate(32, 200'000);
  p.payload = wire::PayloadPlan::make(c.payload_bytes, wire::kHeaderBytes / 8, kSenderId);
  p.end_payload = wire::end_marker_plan(c.payload_bytes, kSenderId);
  p.end_body.count = kPackets;
  p.end_body.burst = 32;
  p.end_body.stream_count = c.flows;
  p.end_body.data_size = static_cast<uint16_t>(c.payload_bytes);
  p.end_markers = 3;
  p.ipv6 = is_v6(c);
  for (uint16_t f = 0; f < c.flows; ++f) {
    engine::TxFlow flow;
    flow.stream = f;
    flow.queue_flow = f;
    p.flows.push_back(flow);
  }
  return p;
}

// As the socket backend fills it (drivers/socket/socket_backend.cpp).
inline drivers::UdpTxConfig loopback_tx_config(const LoopbackCase& c, const drivers::SocketAddress& dst) {
  drivers::UdpTxConfig cfg;
  cfg.dst = dst;
  cfg.src_ports.assign(c.flows, 0);  // kernel-chosen source ports: one per flow, all different
  cfg.slot_bytes = std::max(c.payload_bytes, wire::kEndMarkerMinPayloadBytes);
  cfg.batch = 32;
  cfg.gso = c.gso;
  return cfg;
}

// The TX queue is made and used in the calling thread (io_uring: SINGLE_ISSUER).
template <class TxQueue>
engine::TxResult transmit(const LoopbackCase& c, const drivers::SocketAddress& dst) {
  TxQueue q(loopback_tx_config(c, dst));
  stats::TxSnapshotRing snapshots(16);
  std::atomic<bool> stop{false};
  return engine::run_tx(q, loopback_tx_plan(c), snapshots, stop);
}

struct LoopbackRun {
  engine::TxResult tx;
  RxRun rx;
};

template <class TxQueue, class RxQueue>
LoopbackRun send_and_receive(const LoopbackCase& c) {
  LoopbackReceiver<RxQueue> receiver(loopback_rx_config(c.ip));
  LoopbackRun run;
  run.tx = transmit<TxQueue>(c, receiver.address());
  run.rx = receiver.finish(run.tx.counters.packets + run.tx.counters.end_markers);
  return run;
}

// What a receiver may see from a loopback sender: every datagram arrived once
// and intact, in order, or the kernel counted it dropped. Drops are allowed
// only as the receive socket's own drop counter (sk_drops) accounts for them;
// with a big receive buffer and a modest rate there are none in practice, and
// then the count is exact.
inline void expect_every_datagram_once(const LoopbackCase& c, const LoopbackRun& run) {
  const stats::TxCounters& t = run.tx.counters;
  EXPECT_FALSE(run.tx.stalled);
  EXPECT_EQ(t.packets, kPackets);
  EXPECT_EQ(t.failed, 0u) << "last error " << t.last_error;
  EXPECT_EQ(t.end_markers, 3u * c.flows);
  const stats::RxCounters& k = run.rx.result.counters;
  ASSERT_FALSE(run.rx.timed_out) << "received " << k.frames << ", kernel drops " << k.backend_drops << " of "
                                 << t.packets + t.end_markers;
  // Every datagram sent is either received or dropped by the kernel, none twice, none invented.
  EXPECT_EQ(k.frames + k.backend_drops, t.packets + t.end_markers);
  EXPECT_EQ(run.rx.left_over, 0u);
  EXPECT_EQ(k.corrupt, 0u);
  EXPECT_EQ(k.malformed, 0u);
  EXPECT_EQ(k.foreign, 0u);
  EXPECT_EQ(k.unknown_stream, 0u);
  EXPECT_EQ(k.payload_bytes, k.data * c.payload_bytes);
  ASSERT_EQ(run.rx.result.streams.size(), c.flows);
  ASSERT_EQ(run.tx.flows.size(), c.flows);
  uint64_t unique = 0;
  for (const engine::TxFlow& f : run.tx.flows) {
    const engine::RxStreamState* s = run.rx.result.find(f.stream);
    ASSERT_NE(s, nullptr) << "stream " << f.stream;
    const stats::SequenceCounts n = s->seq.counts();
    // Loopback delivers one socket's datagrams in order: no duplicate, no reordering.
    EXPECT_EQ(n.duplicates + n.reordered + n.stale + n.implausible + n.beyond_end, 0u) << "stream " << f.stream;
    EXPECT_EQ(n.received, n.unique) << "stream " << f.stream;
    EXPECT_EQ(s->corrupt, 0u);
    EXPECT_EQ(s->payload_len, c.payload_bytes);
    EXPECT_EQ(s->key.sender, kSenderId);
    EXPECT_NE(s->key.from.port, 0u) << "the queue must report who sent it";
    EXPECT_EQ(s->key.from.is_v4(), !is_v6(c));
    EXPECT_LE(f.next_seq - n.unique, k.backend_drops) << "stream " << f.stream << ": a missing packet not in the drops";
    unique += n.unique;
    if (k.backend_drops == 0) {
      EXPECT_EQ(n.unique, f.next_seq) << "stream " << f.stream;
      EXPECT_EQ(n.highest_next, f.next_seq) << "stream " << f.stream;
      EXPECT_TRUE(s->ended) << "stream " << f.stream;
      EXPECT_EQ(s->end.total_sent, f.next_seq) << "stream " << f.stream;
      EXPECT_EQ(s->seq.lost_given_total(s->end.total_sent), 0u) << "stream " << f.stream;
    }
  }
  EXPECT_EQ(unique, k.data);
  if (c.flows == 2) {
    EXPECT_FALSE(run.rx.result.streams[0].key.from == run.rx.result.streams[1].key.from)
        << "two flows must arrive from two source ports";
  }
  if (k.backend_drops == 0) {
    EXPECT_EQ(k.data, kPackets);
    EXPECT_EQ(k.end_markers, 3u * c.flows);
    EXPECT_EQ(k.streams_ended, c.flows);
    EXPECT_EQ(k.lost_so_far, 0u);
  } else {
    // Allowed, but worth seeing: exactness then rests on the drop counter.
    std::printf("note: the kernel dropped %llu of %llu datagrams (receive queue full)\n",
                static_cast<unsigned long long>(k.backend_drops),
                static_cast<unsigned long long>(t.packets + t.end_markers));
  }
}

// ---- datagrams from a plain socket ----

// A valid data payload of `len` bytes (header, pattern, checksum), as pktgen writes it.
inline std::vector<uint8_t> data_payload(uint32_t len, uint16_t stream, uint64_t seq) {
  std::vector<uint8_t> p(len);
  wire::fill_data_payload(p.data(), wire::PayloadPlan::make(len, wire::kHeaderBytes / 8, kSenderId), stream, seq,
                          now_ns());
  return p;
}

// Sends each payload as one datagram from a fresh unbound UDP socket (one
// source port for all); returns how many the kernel took.
inline uint64_t send_plain(const drivers::SocketAddress& dst, const std::vector<std::vector<uint8_t>>& payloads) {
  const int fd = ::socket(dst.storage.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  uint64_t sent = 0;
  for (const auto& p : payloads)
    if (::sendto(fd, p.data(), p.size(), 0, reinterpret_cast<const sockaddr*>(&dst.storage), dst.len) ==
        static_cast<ssize_t>(p.size()))
      ++sent;
  ::close(fd);
  return sent;
}

// ---- what a receive queue makes of datagrams that are not a clean data packet ----

// A datagram longer than the slot arrives cut; its length field then
// disagrees with what arrived: malformed, never data, and no sequence is
// taken from it. `first_cut_bytes` is the shortest datagram the queue cuts.
template <class RxQueue>
void expect_overlong_datagrams_malformed(const char* ip, uint32_t first_cut_bytes) {
  LoopbackReceiver<RxQueue> receiver(loopback_rx_config(ip));
  const std::vector<std::vector<uint8_t>> datagrams = {
      data_payload(kMaxDatagramBytes, 0, 0),  // the largest rx is sized for: whole
      data_payload(first_cut_bytes, 0, 1),
      data_payload(4 * kRxSlotBytes, 0, 2),
      data_payload(64, 0, 3),  // and the next one is whole again
  };
  ASSERT_EQ(send_plain(receiver.address(), datagrams), datagrams.size());
  const RxRun run = receiver.finish(datagrams.size());
  const stats::RxCounters& k = run.result.counters;
  ASSERT_FALSE(run.timed_out) << "received " << k.frames;
  EXPECT_EQ(k.backend_drops, 0u);
  EXPECT_EQ(k.frames, 4u);
  EXPECT_EQ(run.left_over, 0u);
  EXPECT_EQ(k.data, 2u);
  EXPECT_EQ(k.malformed, 2u);
  EXPECT_EQ(k.corrupt + k.foreign, 0u);
  EXPECT_EQ(k.payload_bytes, kMaxDatagramBytes + 64u);
  ASSERT_EQ(run.result.streams.size(), 1u);
  const stats::SequenceCounts n = run.result.streams[0].seq.counts();
  EXPECT_EQ(n.unique, 2u);
  EXPECT_EQ(n.highest_next, 4u);  // 1 and 2 count as missing: a cut datagram is not evidence of arrival
}

// Someone else's datagrams (no magic, empty, too short to hold it) are
// foreign; ours with a bad header are malformed; neither makes a stream.
template <class RxQueue>
void expect_strangers_counted_apart(const char* ip) {
  LoopbackReceiver<RxQueue> receiver(loopback_rx_config(ip));
  std::vector<uint8_t> noise(100);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (uint8_t& b : noise) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<uint8_t>(x);
  }
  noise[0] = 0;  // "RLN1" starts with 'R': this is not it
  std::vector<uint8_t> bad_version = data_payload(64, 0, 0);
  bad_version[4] = wire::kVersion + 1;
  const std::vector<std::vector<uint8_t>> datagrams = {
      noise, {}, {'R', 'L', 'N'}, bad_version, data_payload(64, 0, 0),
  };
  ASSERT_EQ(send_plain(receiver.address(), datagrams), datagrams.size());
  const RxRun run = receiver.finish(datagrams.size());
  const stats::RxCounters& k = run.result.counters;
  ASSERT_FALSE(run.timed_out) << "received " << k.frames << " (an empty datagram must arrive too)";
  EXPECT_EQ(k.backend_drops, 0u);
  EXPECT_EQ(k.frames, 5u);
  EXPECT_EQ(run.left_over, 0u);
  EXPECT_EQ(k.foreign, 3u);
  EXPECT_EQ(k.malformed, 1u);
  EXPECT_EQ(k.data, 1u);
  EXPECT_EQ(k.corrupt, 0u);
  EXPECT_EQ(k.streams_created, 1u);
  ASSERT_EQ(run.result.streams.size(), 1u);
  EXPECT_EQ(run.result.streams[0].seq.counts().unique, 1u);
}

// `count` datagrams arrive while nobody reads the queue; then the loop runs.
// Whatever the receive buffer could not hold the kernel dropped, and drops()
// must say exactly how many: every sequence missing at the receiver is one.
template <class RxQueue>
RxRun expect_held_datagrams_accounted(const char* ip, int rcvbuf_bytes, uint64_t count) {
  drivers::UdpRxConfig cfg = loopback_rx_config(ip);
  cfg.rcvbuf_bytes = rcvbuf_bytes;
  LoopbackReceiver<RxQueue> receiver(cfg, /*hold=*/true);
  std::vector<std::vector<uint8_t>> datagrams;
  for (uint64_t seq = 0; seq < count; ++seq) datagrams.push_back(data_payload(200, 0, seq));
  EXPECT_EQ(send_plain(receiver.address(), datagrams), count);
  RxRun run = receiver.finish(count);
  const stats::RxCounters& k = run.result.counters;
  EXPECT_FALSE(run.timed_out) << "received " << k.frames << ", kernel drops " << k.backend_drops << " of " << count;
  EXPECT_EQ(k.frames + k.backend_drops, count);
  EXPECT_EQ(run.left_over, 0u);
  EXPECT_EQ(k.data, k.frames);
  EXPECT_EQ(k.corrupt + k.malformed + k.foreign, 0u);
  if (run.result.streams.size() == 1) {
    const stats::SequenceCounts n = run.result.streams[0].seq.counts();
    EXPECT_EQ(n.unique, k.data);
    EXPECT_EQ(n.duplicates + n.reordered, 0u);
    EXPECT_EQ(count - n.unique, k.backend_drops);
  } else {
    ADD_FAILURE() << run.result.streams.size() << " streams, expected 1";
  }
  return run;
}

}  // namespace rateline::loopback_test
