// Test payload format (src/wire/test_payload.hpp): sender's closed-form
// checksum vs receiver's full computation, corruption detection, decoding.
#include "wire/decode.hpp"
#include "wire/test_payload.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace {

using namespace rateline::wire;

uint64_t be(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}
uint64_t le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

// Spec of the checksum written out from the header comment, independent of
// payload_checksum(): sum of LE words * (2i+1), checksum bytes as zero, tail
// zero-padded, folded to 32 bits.
uint32_t spec_checksum(const std::vector<uint8_t>& p) {
  uint64_t acc = 0;
  for (size_t i = 0; 8 * i < p.size(); ++i) {
    uint64_t w = 0;
    for (size_t b = 0; b < 8; ++b) {
      const size_t at = 8 * i + b;
      const uint8_t byte = (at < p.size() && !(at >= 28 && at < 32)) ? p[at] : 0;
      w |= uint64_t{byte} << (8 * b);
    }
    acc += w * (2 * i + 1);
  }
  return static_cast<uint32_t>(acc ^ (acc >> 32));
}

std::vector<uint8_t> data_payload(uint32_t len, uint16_t stream, uint64_t seq, uint64_t tx_ns) {
  std::vector<uint8_t> p(len);  // exactly len: writing past it is a heap overflow
  fill_data_payload(p.data(), PayloadPlan::make(len), stream, seq, tx_ns);
  return p;
}

std::vector<uint8_t> end_payload(uint32_t data_size, uint16_t stream, const EndMarkerBody& b, uint64_t tx_ns) {
  const PayloadPlan pl = end_marker_plan(data_size);
  std::vector<uint8_t> p(pl.len);
  fill_end_marker(p.data(), pl, stream, b, tx_ns);
  return p;
}

Verdict verdict(const std::vector<uint8_t>& p) { return decode(p.data(), static_cast<uint32_t>(p.size())).verdict; }

TEST(PayloadPlan, ConstantsMatchTheirDefinition) {
  const PayloadPlan pl = PayloadPlan::make(1403);
  EXPECT_EQ(pl.len, 1403u);
  EXPECT_EQ(pl.first_word, 4u);
  EXPECT_EQ(pl.full_words, 175u);
  EXPECT_EQ(pl.tail_bytes, 3u);
  uint64_t a = 0, b = 0;
  for (uint64_t i = 4; i < 175; ++i) {
    a += 2 * i + 1;
    b += i * (2 * i + 1);
  }
  EXPECT_EQ(pl.sum_odd, a);
  EXPECT_EQ(pl.sum_i_odd, b);
  const PayloadPlan em = end_marker_plan(32);
  EXPECT_EQ(em.len, kEndMarkerMinPayloadBytes);
  EXPECT_EQ(em.first_word, 8u);
  EXPECT_EQ(end_marker_plan(1400).len, 1400u);
}

TEST(DataPayload, HeaderLayoutIsBigEndianAtDocumentedOffsets) {
  const auto p = data_payload(100, 0x1234, 0x0102030405060708ull, 0x1112131415161718ull);
  EXPECT_EQ(be(&p[0], 4), 0x524c4e31u);  // "RLN1"
  EXPECT_EQ(p[0], 'R');
  EXPECT_EQ(p[3], '1');
  EXPECT_EQ(p[4], 1);  // version
  EXPECT_EQ(p[5], 1);  // kind data
  EXPECT_EQ(be(&p[6], 2), 0x1234u);
  EXPECT_EQ(be(&p[8], 8), 0x0102030405060708ull);
  EXPECT_EQ(be(&p[16], 8), 0x1112131415161718ull);
  EXPECT_EQ(be(&p[24], 4), 100u);
}

TEST(DataPayload, PatternWordsAreSeedPlusIndexTimesStep) {
  for (uint32_t len : {32u, 33u, 39u, 40u, 41u, 64u, 71u, 1400u, 1403u}) {
    const uint16_t stream = 7;
    const uint64_t seq = 99;
    const auto p = data_payload(len, stream, seq, 5);
    const uint64_t seed = pattern_seed(stream, seq);
    for (uint32_t i = 4; 8 * i < len; ++i) {
      const uint64_t want = seed + uint64_t{i} * kPatternStep;
      if (8 * (i + 1) <= len) {
        ASSERT_EQ(le64(&p[8 * i]), want) << "len " << len << " word " << i;
      } else {
        for (uint32_t b = 0; 8 * i + b < len; ++b)
          ASSERT_EQ(p[8 * i + b], static_cast<uint8_t>(want >> (8 * b))) << "len " << len << " tail byte " << b;
      }
    }
  }
}

// The receiver's lane-summed checksum against the definition, on bytes no
// sender wrote (so no closed form helps), every length up to a jumbo frame's
// payload, and on words at the top of their range (wrap-around mod 2^64).
TEST(PayloadChecksum, EqualsTheDefinitionOnArbitraryBytes) {
  std::mt19937_64 rng(7);
  for (uint32_t len = 0; len <= 9000; len += len < 300 ? 1 : 37) {
    for (int rep = 0; rep < 2; ++rep) {
      std::vector<uint8_t> p(len);
      for (auto& b : p) b = rep ? 0xff : static_cast<uint8_t>(rng());
      ASSERT_EQ(payload_checksum(p.data(), len), spec_checksum(p)) << "len " << len << " rep " << rep;
    }
  }
}

TEST(DataPayload, PatternSeedDiffersBetweenNeighbours) {
  EXPECT_NE(pattern_seed(0, 0), pattern_seed(0, 1));
  EXPECT_NE(pattern_seed(0, 0), pattern_seed(1, 0));
  EXPECT_NE(pattern_seed(1, 5), pattern_seed(5, 1));
}

TEST(DataPayload, ClosedFormChecksumEqualsReceiverChecksumForEveryLength) {
  std::mt19937_64 rng(1);
  for (uint32_t len = kHeaderBytes; len <= 2000; ++len) {  // the long form; the short one below
    for (int rep = 0; rep < 3; ++rep) {
      const auto stream = static_cast<uint16_t>(rng());
      const uint64_t seq = rep == 0 ? 0 : rng();
      const uint64_t tx = rng();
      const auto p = data_payload(len, stream, seq, tx);
      const auto stored = static_cast<uint32_t>(be(&p[28], 4));
      ASSERT_EQ(payload_checksum(p.data(), len), stored) << "len " << len << " stream " << stream << " seq " << seq;
      ASSERT_EQ(spec_checksum(p), stored) << "len " << len;
      const Decoded d = decode(p.data(), len);
      ASSERT_EQ(d.verdict, Verdict::data) << "len " << len;
      ASSERT_EQ(d.stream, stream);
      ASSERT_EQ(d.seq, seq);
      ASSERT_EQ(d.tx_ns, tx);
    }
  }
}

TEST(DataPayload, ExtremeFieldValuesRoundTrip) {
  for (uint64_t seq : {uint64_t{0}, uint64_t{1}, ~uint64_t{0}, uint64_t{1} << 63}) {
    const auto p = data_payload(1400, 0xffff, seq, ~uint64_t{0});
    const Decoded d = decode(p.data(), 1400);
    ASSERT_EQ(d.verdict, Verdict::data);
    EXPECT_EQ(d.stream, 0xffff);
    EXPECT_EQ(d.seq, seq);
    EXPECT_EQ(d.tx_ns, ~uint64_t{0});
  }
}

// What a single-bit flip at byte `at` must be classified as.
Verdict expected_after_flip(size_t at) {
  if (at < 4) return Verdict::foreign;                       // magic
  if (at == 4 || at == 5) return Verdict::malformed;         // version, kind
  if (at >= 26 && at < 28) return Verdict::malformed;        // length field
  return Verdict::corrupt;                                   // stream/seq/tx/sender/checksum/data
}

TEST(DataPayload, EverySingleBitFlipInSmallPayloadsIsDetected) {
  for (uint32_t len : {32u, 37u, 64u, 69u, 128u}) {
    const auto good = data_payload(len, 3, 12345, 777);
    for (size_t at = 0; at < len; ++at)
      for (int bit = 0; bit < 8; ++bit) {
        auto p = good;
        p[at] ^= static_cast<uint8_t>(1u << bit);
        const Verdict v = verdict(p);
        ASSERT_NE(v, Verdict::data) << "len " << len << " byte " << at << " bit " << bit;
        ASSERT_EQ(v, expected_after_flip(at)) << "len " << len << " byte " << at << " bit " << bit;
      }
  }
}

TEST(DataPayload, RandomBitFlipsInLargePayloadsAreDetected) {
  std::mt19937_64 rng(2);
  for (int rep = 0; rep < 4000; ++rep) {
    const uint32_t len = 200 + static_cast<uint32_t>(rng() % 1801);
    auto p = data_payload(len, static_cast<uint16_t>(rng()), rng(), rng());
    const size_t at = rng() % len;
    p[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    const Verdict v = verdict(p);
    ASSERT_NE(v, Verdict::data) << "len " << len << " byte " << at;
    ASSERT_EQ(v, expected_after_flip(at)) << "len " << len << " byte " << at;
  }
}

TEST(DataPayload, LastByteOfTailIsCovered) {
  for (uint32_t len = 33; len <= 2000; ++len) {
    auto p = data_payload(len, 1, len, 0);
    p[len - 1] ^= 0x80;
    ASSERT_EQ(verdict(p), Verdict::corrupt) << "len " << len;
  }
}

TEST(DataPayload, SwappingTwoPatternWordsIsCorrupt) {
  std::mt19937_64 rng(3);
  const uint32_t len = 1400;
  const auto good = data_payload(len, 9, 4242, 1);
  const uint32_t words = len / 8;
  for (int rep = 0; rep < 2000; ++rep) {
    const uint32_t i = 4 + static_cast<uint32_t>(rng() % (words - 4));
    uint32_t j = 4 + static_cast<uint32_t>(rng() % (words - 4));
    if (i == j) j = i == 4 ? 5 : i - 1;
    auto p = good;
    std::swap_ranges(p.begin() + 8 * i, p.begin() + 8 * i + 8, p.begin() + 8 * j);
    ASSERT_EQ(verdict(p), Verdict::corrupt) << "swap " << i << " " << j;
  }
  // Adjacent swaps everywhere, including header words (never data).
  for (uint32_t i = 0; i + 1 < words; ++i) {
    auto p = good;
    std::swap_ranges(p.begin() + 8 * i, p.begin() + 8 * i + 8, p.begin() + 8 * (i + 1));
    ASSERT_NE(verdict(p), Verdict::data) << "swap " << i << " " << i + 1;
  }
}

TEST(DataPayload, PayloadOfAnotherPacketIsCorrupt) {
  // Same length, header of seq 1 with the body of seq 2: the checksum catches it.
  const auto a = data_payload(500, 1, 1, 10);
  const auto b = data_payload(500, 1, 2, 10);
  auto p = a;
  std::copy(b.begin() + 32, b.end(), p.begin() + 32);
  EXPECT_EQ(verdict(p), Verdict::corrupt);
}

TEST(Decode, WrongMagicIsForeign) {
  auto p = data_payload(64, 1, 1, 1);
  p[0] = 'X';
  EXPECT_EQ(verdict(p), Verdict::foreign);
  std::vector<uint8_t> zeros(64, 0);
  EXPECT_EQ(verdict(zeros), Verdict::foreign);
}

// The short form (18..31 B: a 64 B IPv4 frame): every length round-trips
// its fields; the stamp's low 48 bits come back whole near the sender's clock.
TEST(ShortForm, RoundTripsEveryLength) {
  std::mt19937_64 rng(21);
  for (uint32_t len = kShortHeaderBytes; len < kHeaderBytes; ++len)
    for (int rep = 0; rep < 20; ++rep) {
      const auto sender = static_cast<uint16_t>(rng() | 1), stream = static_cast<uint16_t>(rng());
      const uint64_t seq = rep == 0 ? 0 : rng() & (kShortSeqLimit - 1);
      const uint64_t tx = rng() >> 1;
      std::vector<uint8_t> p(len);
      fill_data_payload(p.data(), PayloadPlan::make(len, kHeaderBytes / 8, sender), stream, seq, tx);
      EXPECT_EQ(p[0], 'r');
      const Decoded d = decode(p.data(), len);
      ASSERT_EQ(d.verdict, Verdict::data) << len;
      EXPECT_TRUE(d.short_form);
      EXPECT_EQ(d.sender, sender);
      EXPECT_EQ(d.stream, stream);
      EXPECT_EQ(d.seq, seq);
      EXPECT_EQ(d.tx_ns, tx & (kShortSeqLimit - 1));
      // Received up to 39 hours later, or with the receiver's clock a little behind.
      const uint64_t later = tx + (rng() % (39ull * 3600 * 1000000000ull));
      EXPECT_EQ(extend_stamp48(d.tx_ns, later), tx);
      EXPECT_EQ(extend_stamp48(d.tx_ns, tx - std::min<uint64_t>(tx, 5000)), tx);
    }
}

TEST(ShortForm, PadBitFlipsAreCorrupt) {
  for (uint32_t len = kShortHeaderBytes + 1; len < kHeaderBytes; ++len) {
    std::vector<uint8_t> p(len);
    fill_data_payload(p.data(), PayloadPlan::make(len, kHeaderBytes / 8, 7), 3, 99, 12345);
    for (uint32_t j = kShortHeaderBytes; j < len; ++j)
      for (int bit = 0; bit < 8; ++bit) {
        auto q = p;
        q[j] ^= static_cast<uint8_t>(1u << bit);
        ASSERT_EQ(decode(q.data(), len).verdict, Verdict::corrupt) << len << " byte " << j << " bit " << bit;
      }
  }
}

TEST(ShortForm, TagLengthAndVersionDecideOursOrNot) {
  std::vector<uint8_t> p(kShortHeaderBytes);
  fill_data_payload(p.data(), PayloadPlan::make(kShortHeaderBytes), 1, 1, 1);
  for (uint32_t len = 2; len < kShortHeaderBytes; ++len)  // ours, cut short
    EXPECT_EQ(decode(p.data(), len).verdict, Verdict::malformed) << len;
  auto longer = p;
  longer.resize(kHeaderBytes, 0);  // the short form is never 32 B or more
  EXPECT_EQ(verdict(longer), Verdict::malformed);
  auto other_version = p;
  other_version[1] = 0x21;
  EXPECT_EQ(verdict(other_version), Verdict::foreign);  // 'r' alone is not enough to be ours
  EXPECT_EQ(decode(p.data(), 1).verdict, Verdict::foreign);
}

TEST(ShortForm, StampExtensionPicksTheNearestWrap) {
  constexpr uint64_t wrap = kShortSeqLimit;
  EXPECT_EQ(extend_stamp48(5, wrap - 3), wrap + 5);         // sent just after the 48-bit wrap
  EXPECT_EQ(extend_stamp48(wrap - 3, wrap + 5), wrap - 3);  // sent just before it
  EXPECT_EQ(extend_stamp48(100, 3 * wrap + 50), 3 * wrap + 100);
  EXPECT_EQ(extend_stamp48(0, 0), 0u);
}

TEST(Decode, ShorterThanMagicIsForeign) {
  const auto p = data_payload(64, 1, 1, 1);
  for (uint32_t len = 0; len < 4; ++len) {
    std::vector<uint8_t> cut(p.begin(), p.begin() + len);
    EXPECT_EQ(decode(cut.data(), len).verdict, Verdict::foreign) << len;
  }
}

TEST(Decode, TruncatedBelowHeaderWithMagicIsMalformed) {
  const auto p = data_payload(64, 1, 1, 1);
  for (uint32_t len = 4; len < kHeaderBytes; ++len) {  // the long form's magic: never read as the short form
    std::vector<uint8_t> cut(p.begin(), p.begin() + len);
    EXPECT_EQ(decode(cut.data(), len).verdict, Verdict::malformed) << len;
  }
}

TEST(Decode, LengthFieldDisagreeingWithLengthIsMalformed) {
  const auto p = data_payload(200, 1, 1, 1);
  // Shorter capture.
  for (uint32_t len : {32u, 100u, 199u}) EXPECT_EQ(decode(p.data(), len).verdict, Verdict::malformed) << len;
  // Longer capture (trailing bytes).
  auto longer = p;
  longer.resize(201, 0);
  EXPECT_EQ(verdict(longer), Verdict::malformed);
  // Length field edited.
  auto q = p;
  q[27] = 201;
  EXPECT_EQ(verdict(q), Verdict::malformed);
}

TEST(Decode, WrongVersionOrKindIsMalformed) {
  for (uint8_t version : {0, 2, 255}) {
    auto p = data_payload(64, 1, 1, 1);
    p[4] = version;
    EXPECT_EQ(verdict(p), Verdict::malformed) << int(version);
  }
  for (uint8_t kind : {0, 3, 255}) {
    auto p = data_payload(64, 1, 1, 1);
    p[5] = kind;
    EXPECT_EQ(verdict(p), Verdict::malformed) << int(kind);
  }
}

TEST(Decode, EndKindShorterThanEndMarkerIsMalformed) {
  // A well-checksummed 40-byte payload claiming kind "end": too short for the body.
  auto p = data_payload(40, 1, 1, 1);
  p[5] = static_cast<uint8_t>(Kind::end);
  EXPECT_EQ(verdict(p), Verdict::malformed);
}

TEST(Decode, CorruptKeepsHeaderFields) {
  auto p = data_payload(100, 42, 77, 88);
  p[60] ^= 1;
  const Decoded d = decode(p.data(), 100);
  EXPECT_EQ(d.verdict, Verdict::corrupt);
  EXPECT_EQ(d.stream, 42);
  EXPECT_EQ(d.seq, 77u);
}

class EndMarkerRoundTrip : public ::testing::TestWithParam<uint32_t> {};

TEST_P(EndMarkerRoundTrip, AllBodyFieldsSurviveDecode) {
  const uint32_t size = GetParam();
  EndMarkerBody b;
  b.total_sent = 0x0102030405060708ull;
  b.delay_ns = 1'500'000;
  b.count = 100'000;
  b.burst = 0xa1b2c3d4u;
  b.stream_count = 0xbeef;
  b.data_size = static_cast<uint16_t>(size);
  const auto p = end_payload(size, 0x4321, b, 0xfeedfacecafebeefull);
  ASSERT_EQ(p.size(), std::max(size, kEndMarkerMinPayloadBytes));
  EXPECT_EQ(payload_checksum(p.data(), static_cast<uint32_t>(p.size())), be(&p[28], 4));
  EXPECT_EQ(spec_checksum(p), be(&p[28], 4));
  const Decoded d = decode(p.data(), static_cast<uint32_t>(p.size()));
  ASSERT_EQ(d.verdict, Verdict::end);
  EXPECT_EQ(d.stream, 0x4321);
  EXPECT_EQ(d.seq, b.total_sent);  // header seq = total sent
  EXPECT_EQ(d.tx_ns, 0xfeedfacecafebeefull);
  EXPECT_EQ(d.end.total_sent, b.total_sent);
  EXPECT_EQ(d.end.delay_ns, b.delay_ns);
  EXPECT_EQ(d.end.count, b.count);
  EXPECT_EQ(d.end.burst, b.burst);
  EXPECT_EQ(d.end.stream_count, b.stream_count);
  EXPECT_EQ(d.end.data_size, b.data_size);
  EXPECT_EQ(d.end.clock_id, 0u) << "none given";
  EXPECT_EQ(be(&p[32], 8), b.total_sent) << "without a clock id the body's first word is the total, as before it";

  b.clock_id = 0x5eed0fc10c4b00d5ull;
  const auto q = end_payload(size, 0x4321, b, 0xfeedfacecafebeefull);
  EXPECT_EQ(be(&q[32], 8), b.clock_id);
  EXPECT_EQ(spec_checksum(q), be(&q[28], 4));
  const Decoded e = decode(q.data(), static_cast<uint32_t>(q.size()));
  ASSERT_EQ(e.verdict, Verdict::end);
  EXPECT_EQ(e.end.total_sent, b.total_sent) << "the total comes from the header's sequence";
  EXPECT_EQ(e.end.clock_id, b.clock_id);
}

INSTANTIATE_TEST_SUITE_P(Sizes, EndMarkerRoundTrip, ::testing::Values(32u, 64u, 65u, 71u, 1400u, 1403u));

TEST(EndMarker, ChecksumHoldsForEveryLength) {
  std::mt19937_64 rng(4);
  for (uint32_t size = kMinPayloadBytes; size <= 2000; ++size) {
    EndMarkerBody b;
    b.total_sent = rng();
    b.delay_ns = rng();
    b.count = rng();
    b.burst = static_cast<uint32_t>(rng());
    b.stream_count = static_cast<uint16_t>(rng());
    b.data_size = static_cast<uint16_t>(size);
    const auto p = end_payload(size, static_cast<uint16_t>(rng()), b, rng());
    const Decoded d = decode(p.data(), static_cast<uint32_t>(p.size()));
    ASSERT_EQ(d.verdict, Verdict::end) << "size " << size;
    ASSERT_EQ(d.end.total_sent, b.total_sent);
    ASSERT_EQ(d.end.count, b.count);
  }
}

TEST(EndMarker, BitFlipsInBodyAndPatternAreCorrupt) {
  EndMarkerBody b;
  b.total_sent = 1000;
  b.burst = 100;
  b.stream_count = 2;
  b.data_size = 69;
  const auto good = end_payload(69, 1, b, 5);
  for (size_t at = 0; at < good.size(); ++at)
    for (int bit = 0; bit < 8; ++bit) {
      auto p = good;
      p[at] ^= static_cast<uint8_t>(1u << bit);
      const Verdict v = verdict(p);
      ASSERT_NE(v, Verdict::end) << "byte " << at << " bit " << bit;
      ASSERT_NE(v, Verdict::data) << "byte " << at << " bit " << bit;
      ASSERT_EQ(v, expected_after_flip(at)) << "byte " << at << " bit " << bit;
    }
}

}  // namespace
