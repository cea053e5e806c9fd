// libFuzzer target: the receive engine's per-frame accounting. The input is
// a script of frames: raw bytes, well-formed data packets and end markers
// (built with the real encoder, so checksums pass and the fuzzer reaches the
// sequence tracker, latency and jitter code), mutated ones (a flipped byte,
// a cut tail, a wrong version/kind/length) and replays of earlier frames.
// They go through engine::run_rx on a fake queue, at the UDP-payload layer
// (socket/io_uring backends) or wrapped in Ethernet/IPv4/UDP (raw backends),
// and the result through the report (summary, table, JSON).
//
// Checked after each run: every frame was classified once, the per-stream
// counters add up to the totals, and no count went below zero (wrapped).
#include <arpa/inet.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <vector>

#include "engine/rx_loop.hpp"
#include "net/frame.hpp"
#include "report/rx_summary.hpp"
#include "util/key_file.hpp"
#include "wire/packet_tag.hpp"
#include "wire/test_payload.hpp"

using namespace rateline;

// A broken invariant aborts: libFuzzer saves the input and the stage fails.
#define REQUIRE(cond)                                                                    \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace {

// Hands out the scripted frames in batches, then asks the loop to stop.
template <engine::Layer L>
class ScriptQueue {
 public:
  static constexpr engine::Layer kLayer = L;

  ScriptQueue(const std::vector<std::vector<uint8_t>>& frames, std::atomic<bool>& stop)
      : frames_(frames), stop_(stop) {}

  std::span<const engine::RxFrame> poll(uint32_t n) {
    batch_.clear();
    while (next_ < frames_.size() && batch_.size() < n) {
      batch_.push_back({frames_[next_].data(), static_cast<uint32_t>(frames_[next_].size()), {}});
      ++next_;
    }
    if (batch_.empty()) stop_.store(true, std::memory_order_relaxed);
    return batch_;
  }
  void release() { ++releases_; }
  size_t releases() const { return releases_; }

 private:
  const std::vector<std::vector<uint8_t>>& frames_;
  std::atomic<bool>& stop_;
  std::vector<engine::RxFrame> batch_;
  size_t next_ = 0;
  size_t releases_ = 0;
};

constexpr uint16_t kPort = 9000;

std::vector<uint8_t> to_ethernet(const std::vector<uint8_t>& payload, uint16_t dst_port) {
  net::UdpEndpoints ep;
  ep.src_mac = {2, 0, 0, 0, 0, 1};
  ep.dst_mac = {2, 0, 0, 0, 0, 2};
  in_addr a{};
  a.s_addr = htonl(0xc6120001);  // 198.18.0.1
  ep.src_ip = net::IpAddress::v4(a);
  a.s_addr = htonl(0xc6120002);
  ep.dst_ip = net::IpAddress::v4(a);
  ep.src_port = 40000;
  ep.dst_port = dst_port;
  std::vector<uint8_t> f(net::headers_len(false) + payload.size());
  net::build_udp_headers(f, ep, static_cast<uint32_t>(payload.size()));
  std::copy(payload.begin(), payload.end(), f.begin() + static_cast<std::ptrdiff_t>(net::headers_len(false)));
  net::udp_finish_checksum(f, false);
  return f;
}

// rx --key-file's key, when the input asks for one: most of the script's
// payloads then carry its tag, the rest none or a wrong one.
wire::PacketKey fuzz_key() {
  secret::Key s;
  s.fill(0x5a);
  return wire::packet_key(s);
}

std::vector<std::vector<uint8_t>> script(FuzzedDataProvider& in, bool ethernet, uint32_t max_streams,
                                         const std::optional<wire::PacketKey>& key) {
  std::vector<std::vector<uint8_t>> frames;
  while (in.remaining_bytes() > 0 && frames.size() < 512) {
    const int op = in.ConsumeIntegralInRange(0, 5);
    if (op == 0) {  // raw bytes, as they come
      frames.push_back(in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange<size_t>(0, 1600)));
      continue;
    }
    if (op == 5) {  // replay an earlier frame exactly (duplicates, reordering)
      if (!frames.empty()) frames.push_back(frames[in.ConsumeIntegralInRange<size_t>(0, frames.size() - 1)]);
      continue;
    }
    const auto stream = in.ConsumeIntegralInRange<uint16_t>(0, static_cast<uint16_t>(max_streams + 1));
    // Mostly small sequences near each other; sometimes any 64-bit value.
    const uint64_t seq =
        in.ConsumeBool() ? in.ConsumeIntegral<uint64_t>() : in.ConsumeIntegralInRange<uint64_t>(0, 70000);
    const uint64_t tx_ns = in.ConsumeBool() ? in.ConsumeIntegral<uint64_t>()
                                            : now_ns() - in.ConsumeIntegralInRange<uint64_t>(0, 1'000'000);
    std::vector<uint8_t> p;
    if (op == 2) {  // end marker
      wire::EndMarkerBody b;
      b.total_sent = seq;
      b.count = in.ConsumeIntegral<uint64_t>();
      b.burst = in.ConsumeIntegral<uint32_t>();
      b.stream_count = in.ConsumeIntegral<uint16_t>();
      b.data_size = in.ConsumeIntegral<uint16_t>();
      b.clock_id = in.ConsumeIntegralInRange<uint64_t>(0, 3);  // 1..3 meet the summary's own id below
      const wire::PayloadPlan pl =
          wire::end_marker_plan(in.ConsumeIntegralInRange<uint32_t>(32, 300), in.ConsumeIntegralInRange<uint16_t>(0, 2));
      p.resize(pl.len);
      wire::fill_end_marker(p.data(), pl, stream, b, tx_ns);
    } else {  // data packet
      const wire::PayloadPlan pl = wire::PayloadPlan::make(in.ConsumeIntegralInRange<uint32_t>(32, 300), wire::kHeaderBytes / 8,
                                                           in.ConsumeIntegralInRange<uint16_t>(0, 2));
      p.resize(pl.len);
      wire::fill_data_payload(p.data(), pl, stream, seq, tx_ns);
    }
    if (op == 3) {  // damage it after the checksum was computed
      switch (in.ConsumeIntegralInRange(0, 4)) {
        case 0:
          p[in.ConsumeIntegralInRange<size_t>(0, p.size() - 1)] ^= in.ConsumeIntegralInRange<uint8_t>(1, 255);
          break;
        case 1: p.resize(in.ConsumeIntegralInRange<size_t>(0, p.size() - 1)); break;
        case 2: p[4] = in.ConsumeIntegral<uint8_t>(); break;                                      // version
        case 3: p[5] = in.ConsumeIntegral<uint8_t>(); break;                                      // kind
        case 4: wire::detail::store_be(p.data() + 24, in.ConsumeIntegral<uint32_t>(), 4); break;  // length field
      }
    }
    if (key) {  // the tag before it: right (mostly), or whatever the input says
      std::vector<uint8_t> tagged(wire::kTagBytes + p.size());
      std::copy(p.begin(), p.end(), tagged.begin() + wire::kTagBytes);
      if (in.ConsumeIntegralInRange(0, 3)) wire::put_tag(*key, tagged.data(), static_cast<uint32_t>(p.size()));
      else for (uint32_t i = 0; i < wire::kTagBytes; ++i) tagged[i] = in.ConsumeIntegral<uint8_t>();
      p = std::move(tagged);
    }
    // op 4: a well-formed data packet too, sent to another port on the raw path
    const uint16_t port = ethernet && op == 4 && in.ConsumeBool() ? uint16_t{kPort + 1} : kPort;
    frames.push_back(ethernet ? to_ethernet(p, port) : std::move(p));
  }
  return frames;
}

template <engine::Layer L>
void run(FuzzedDataProvider& in) {
  engine::RxPlan plan;
  plan.max_streams = in.ConsumeIntegralInRange<uint32_t>(1, 8);
  plan.batch = in.ConsumeIntegralInRange<uint32_t>(1, 64);
  // rx --max-size (rx always sets one): longer payloads are malformed. Up to
  // 2048 (the script's frames are at most 1600 B), which also keeps the
  // per-size table run_rx sizes from it small: inputs per second matter here.
  plan.max_payload_bytes = in.ConsumeIntegralInRange<uint32_t>(64, 2048);
  plan.udp_port = kPort;
  if (in.ConsumeIntegralInRange(0, 3) == 0) plan.tag_key = fuzz_key();
  const auto frames = script(in, L == engine::Layer::ethernet, plan.max_streams, plan.tag_key);

  std::atomic<bool> stop{false};
  ScriptQueue<L> q(frames, stop);
  stats::RxSnapshotRing snapshots(16);
  const engine::RxResult r = engine::run_rx(q, plan, snapshots, stop, [] { return uint64_t{0}; });
  const stats::RxCounters& c = r.counters;

  REQUIRE(c.frames == frames.size());
  const uint64_t classified = c.data + c.end_markers + c.foreign + c.malformed + c.corrupt + c.unauthenticated;
  if (!plan.tag_key) REQUIRE(c.unauthenticated == 0);
  REQUIRE(classified <= c.frames && c.frames <= classified + c.unknown_stream + c.fragments);
  uint64_t data = 0, bytes = 0, seen = 0, ended = 0;
  for (const engine::RxStreamState& s : r.streams) {
    const stats::SequenceCounts k = s.seq.counts();
    REQUIRE(k.received == k.unique + k.duplicates);
    REQUIRE(k.reordered <= k.unique);
    REQUIRE(k.unique <= k.highest_next);  // else lost_so_far() wraps below zero
    REQUIRE(s.latency.samples() + s.clock_behind == k.received + k.stale + k.implausible);
    data += k.received + k.stale + k.implausible;
    if (s.ended) REQUIRE(s.end.total_sent >= k.highest_next);  // a believed total is never below what arrived
    bytes += s.payload_bytes;
    seen += s.seen;
    ended += s.ended;
  }
  REQUIRE(data == c.data);
  REQUIRE(bytes == c.payload_bytes);
  uint64_t by_size = 0, size_bytes = 0;
  for (size_t len = 0; len < r.packets_by_size.size(); ++len) {
    by_size += r.packets_by_size[len];
    size_bytes += r.packets_by_size[len] * len;
  }
  REQUIRE(by_size == c.data && size_bytes == c.payload_bytes);  // every data packet under its own length
  REQUIRE(seen == c.streams_seen && ended == c.streams_ended);
  stats::RxCounters again = c;
  engine::refresh_stream_sums(r, again);
  REQUIRE(c.lost_so_far == again.lost_so_far && c.unique_so_far == again.unique_so_far);

  std::vector<engine::RxResult> workers{r};
  const uint64_t expect = in.ConsumeBool() ? 0 : in.ConsumeIntegral<uint64_t>();
  const report::RxSummary sum = report::summarize(workers, expect, in.ConsumeIntegralInRange<uint64_t>(0, 3));
  REQUIRE(sum.received == sum.unique + sum.duplicates);
  REQUIRE(sum.unique == c.unique_so_far);  // the live "received" of the metrics page ends where the result does
  // The summary is the (saturating) sum of its rows, whatever the input claimed.
  uint64_t rows_lost = 0, rows_unique = 0, rows_dup = 0, senders_received = 0;
  for (const report::StreamRow& row : sum.streams) {
    rows_lost = report::sat_add(rows_lost, row.lost);
    rows_unique = report::sat_add(rows_unique, row.unique);
    rows_dup = report::sat_add(rows_dup, row.duplicates);
  }
  for (const report::SenderRow& g : sum.senders) senders_received = report::sat_add(senders_received, g.received);
  if (!sum.lost_from_expect) REQUIRE(sum.lost == rows_lost);
  REQUIRE(sum.unique == rows_unique && sum.duplicates == rows_dup && senders_received == rows_unique);
  (void)report::format_table(sum, false);
  (void)report::to_json(sum, false).dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  if (in.ConsumeBool())
    run<engine::Layer::ethernet>(in);
  else
    run<engine::Layer::udp_payload>(in);
  return 0;
}
