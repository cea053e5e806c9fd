// drivers/xdp/xdp_shared.h is compiled into the BPF programs and into C++:
// its arithmetic must agree with the engine's (wire::, stats::, net::), and
// the hooks that turn map contents into engine state must carry them whole.
#include <gtest/gtest.h>

#include <random>

#include "net/checksum.hpp"
#include "stats/latency.hpp"
#include "stats/sequence_tracker.hpp"
#include "wire/decode.hpp"
#include "wire/test_payload.hpp"
#include "xdp/xdp_shared.h"

namespace rateline {
namespace {

TEST(XdpShared, PatternSeedMatchesWire) {
  for (uint16_t stream : {0, 1, 7, 65535})
    for (uint64_t seq : {0ull, 1ull, 12345ull, ~0ull - 1}) EXPECT_EQ(rl_pattern_seed(stream, seq), wire::pattern_seed(stream, seq));
}

TEST(XdpShared, FoldsMatchEngine) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t v = rng();
    EXPECT_EQ(rl_fold32(v), wire::detail::fold32(v));
    EXPECT_EQ(rl_ones_fold(v), net::ones_fold(v));
  }
}

TEST(XdpShared, LatencyIndexMatchesHistogram) {
  std::mt19937_64 rng(11);
  for (uint64_t ns = 0; ns < 5000; ++ns) ASSERT_EQ(rl_latency_index(ns), static_cast<rl_u32>(stats::LatencyHistogram::index(ns))) << ns;
  for (int i = 0; i < 10000; ++i) {
    const uint64_t ns = rng() >> (rng() % 64);
    ASSERT_EQ(rl_latency_index(ns), static_cast<rl_u32>(stats::LatencyHistogram::index(ns))) << ns;
    ASSERT_LT(rl_latency_index(ns), static_cast<rl_u32>(RL_LAT_BUCKETS));
  }
  EXPECT_EQ(rl_msb64(1), 0u);
  EXPECT_EQ(rl_msb64(~0ull), 63u);
}

TEST(XdpShared, WireConstantsMatch) {
  uint8_t p[64];
  wire::fill_data_payload(p, wire::PayloadPlan::make(64, wire::kHeaderBytes / 8, 0xbeef), 0x0102, 0x1122334455667788ull, 0x99aabbccddeeff00ull);
  EXPECT_EQ(wire::detail::load_be(p + RL_OFF_MAGIC, 4), RL_MAGIC);
  EXPECT_EQ(p[RL_OFF_VERSION], RL_VERSION);
  EXPECT_EQ(p[RL_OFF_KIND], RL_KIND_DATA);
  EXPECT_EQ(wire::detail::load_be(p + RL_OFF_STREAM, 2), 0x0102u);
  EXPECT_EQ(wire::detail::load_be(p + RL_OFF_SEQ, 8), 0x1122334455667788ull);
  EXPECT_EQ(wire::detail::load_be(p + RL_OFF_TX_NS, 8), 0x99aabbccddeeff00ull);
  EXPECT_EQ(wire::detail::load_be(p + RL_OFF_SENDER, 2), 0xbeefu);
  EXPECT_EQ(wire::detail::load_be(p + RL_OFF_LEN, 2), 64u);
  EXPECT_EQ(wire::detail::load_be(p + RL_OFF_CSUM, 4), wire::payload_checksum(p, 64));
  EXPECT_EQ(RL_WINDOW_BITS, stats::SequenceTracker::kWindow);
  EXPECT_EQ(RL_LAT_BUCKETS, stats::LatencyHistogram::kBuckets);
}

// The XDP generator's short-form words are the bytes wire:: writes, and
// the receiver program's pad bytes and stamp extension are wire::'s.
TEST(XdpShared, ShortFormMatchesWire) {
  std::mt19937_64 rng(19);
  for (uint32_t len = wire::kShortHeaderBytes; len < wire::kHeaderBytes; ++len)
    for (int i = 0; i < 50; ++i) {
      const auto sender = static_cast<uint16_t>(rng()), stream = static_cast<uint16_t>(rng());
      const uint64_t seq = rng() & (wire::kShortSeqLimit - 1), ts = rng();
      uint8_t want[32] = {};
      wire::fill_short_payload(want, wire::PayloadPlan::make(len, wire::kHeaderBytes / 8, sender), stream, seq, ts);
      const rl_short_words got = rl_short_payload(sender, stream, seq, ts, len);
      for (int w = 0; w < 4; ++w) ASSERT_EQ(got.w[w], wire::detail::load_le64(want + 8 * w)) << "len " << len << " word " << w;
      const uint64_t seed = wire::pattern_seed(stream, seq);
      for (uint32_t j = wire::kShortHeaderBytes; j < len; ++j) ASSERT_EQ(rl_short_pad_byte(seed, j), want[j]);
      const wire::Decoded d = wire::decode(want, len);
      ASSERT_EQ(d.verdict, wire::Verdict::data);
      const uint64_t near = rng();
      EXPECT_EQ(rl_extend_stamp48(d.tx_ns, near), wire::extend_stamp48(d.tx_ns, near));
    }
  EXPECT_EQ(RL_SHORT_HEADER_BYTES, wire::kShortHeaderBytes);
  EXPECT_EQ(rl_extend_stamp48(5, (1ull << 48) - 3), (1ull << 48) + 5);  // the receiver's clock just past a wrap
  EXPECT_EQ(rl_extend_stamp48((1ull << 48) - 3, (1ull << 48) + 5), (1ull << 48) - 3);
}

// The generator's closed form (xdp_tx.bpf.c): the checksum share of the
// constant words plus 3*seq_word + 5*ts_word + seed*sum_odd (+ the tail)
// equals the receiver's checksum over the bytes.
TEST(XdpShared, GeneratorChecksumAlgebra) {
  for (uint32_t len : {32u, 33u, 39u, 40u, 700u, 1400u, 1403u}) {
    const wire::PayloadPlan pl = wire::PayloadPlan::make(len);
    std::vector<uint8_t> p(len);
    const uint16_t stream = 3;
    const uint64_t seq = 4242, ts = 987654321;
    wire::fill_data_payload(p.data(), pl, stream, seq, ts);
    const uint64_t w0 = wire::detail::load_le64(p.data());
    const uint64_t w3 = wire::detail::load_le64(p.data() + 24) & 0xffffffffull;
    const uint64_t base = w0 + 7 * w3 + RL_PATTERN_STEP * pl.sum_i_odd;
    const uint64_t seed = rl_pattern_seed(stream, seq);
    uint64_t acc = base + 3 * __builtin_bswap64(seq) + 5 * __builtin_bswap64(ts) + seed * pl.sum_odd;
    if (pl.tail_bytes) {
      const uint64_t w = seed + uint64_t{pl.full_words} * RL_PATTERN_STEP;
      acc += (w & (~0ull >> (64 - 8 * pl.tail_bytes))) * (2ull * pl.full_words + 1);
    }
    EXPECT_EQ(rl_fold32(acc), wire::payload_checksum(p.data(), len)) << len;
  }
}

TEST(XdpShared, EngineStateAdoptsMapContents) {
  stats::SequenceCounts q;
  q.received = 10;
  q.unique = 9;
  q.duplicates = 1;
  q.reordered = 2;
  q.highest_next = 12;
  stats::SequenceTracker t;
  t.adopt(q);
  EXPECT_EQ(t.counts().unique, 9u);
  EXPECT_EQ(t.lost_so_far(), 3u);
  EXPECT_EQ(t.lost_given_total(12), 3u);

  stats::LatencyHistogram direct, binned;
  std::vector<uint64_t> buckets(RL_LAT_BUCKETS, 0);
  uint64_t sum = 0;
  for (uint64_t ns : {100ull, 2000ull, 2100ull, 50000ull}) {
    direct.record(ns);
    ++buckets[rl_latency_index(ns)];
    sum += ns;
  }
  binned.merge_binned(buckets.data(), sum, 100, 50000);
  EXPECT_EQ(binned.samples(), direct.samples());
  EXPECT_EQ(binned.min(), direct.min());
  EXPECT_EQ(binned.max(), direct.max());
  EXPECT_DOUBLE_EQ(binned.mean(), direct.mean());
  for (double qq : {0.5, 0.9, 0.99}) EXPECT_EQ(binned.quantile(qq), direct.quantile(qq));

  stats::JitterEstimator j;
  j.adopt(12.5);
  EXPECT_DOUBLE_EQ(j.jitter_ns(), 12.5);
}

}  // namespace
}  // namespace rateline
