// RFC 1071 one's-complement checksum (src/net/checksum.hpp) against known
// vectors and an independent byte-wise reference.
#include "net/checksum.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

using rateline::net::ones_checksum;
using rateline::net::ones_fold;
using rateline::net::ones_sum;

// Reference: sum big-endian 16-bit words byte by byte, odd last byte is the
// high-order byte, end-around carry, complement. Result in network order.
uint16_t ref_checksum_be(const uint8_t* p, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) {
    sum += static_cast<uint32_t>(p[i]) << 8 | p[i + 1];
    sum = (sum & 0xffff) + (sum >> 16);
  }
  if (len & 1) {
    sum += static_cast<uint32_t>(p[len - 1]) << 8;
    sum = (sum & 0xffff) + (sum >> 16);
  }
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

// The bytes ones_checksum's native result puts on the wire.
std::array<uint8_t, 2> wire_bytes(uint16_t native) {
  std::array<uint8_t, 2> b{};
  std::memcpy(b.data(), &native, 2);
  return b;
}

std::array<uint8_t, 2> be_bytes(uint16_t v) { return {static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)}; }

// The classic IPv4 header example (checksum field b8 61).
constexpr std::array<uint8_t, 20> kIpv4Header = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                                                 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};

TEST(Checksum, ClassicIpv4HeaderGivesB861) {
  auto h = kIpv4Header;
  h[10] = h[11] = 0;
  const auto b = wire_bytes(ones_checksum(ones_sum(h.data(), h.size())));
  EXPECT_EQ(b[0], 0xb8);
  EXPECT_EQ(b[1], 0x61);
  EXPECT_EQ(ref_checksum_be(h.data(), h.size()), 0xb861);
}

TEST(Checksum, HeaderWithItsChecksumFoldsToAllOnes) {
  EXPECT_EQ(ones_fold(ones_sum(kIpv4Header.data(), kIpv4Header.size())), 0xffff);
  EXPECT_EQ(ones_checksum(ones_sum(kIpv4Header.data(), kIpv4Header.size())), 0);
}

TEST(Checksum, EmptyInputChecksumIsFfff) {
  EXPECT_EQ(ones_sum(nullptr, 0), 0u);
  EXPECT_EQ(ones_checksum(0), 0xffff);
}

TEST(Checksum, OddLengthLastByteIsHighOrderByte) {
  // One byte 0x01 is the word 0x0100: checksum 0xfeff in network order.
  const uint8_t one[1] = {0x01};
  EXPECT_EQ(wire_bytes(ones_checksum(ones_sum(one, 1))), be_bytes(0xfeff));
  // Three bytes 00 01 f2 = words 0x0001 + 0xf200 = 0xf201 -> ~ = 0x0dfe.
  const uint8_t three[3] = {0x00, 0x01, 0xf2};
  EXPECT_EQ(wire_bytes(ones_checksum(ones_sum(three, 3))), be_bytes(0x0dfe));
  EXPECT_EQ(ref_checksum_be(three, 3), 0x0dfe);
}

TEST(Checksum, Rfc1071Section3Example) {
  // RFC 1071 3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2 (before complement).
  const uint8_t d[8] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  const uint16_t folded = ones_fold(ones_sum(d, 8));
  EXPECT_EQ(wire_bytes(folded), be_bytes(0xddf2));
  EXPECT_EQ(wire_bytes(ones_checksum(ones_sum(d, 8))), be_bytes(0x220d));
}

TEST(Checksum, CarriesFoldEndAround) {
  // All-ones words: sum of n words of 0xffff is 0xffff in one's complement.
  std::vector<uint8_t> ff(4096, 0xff);
  EXPECT_EQ(ones_fold(ones_sum(ff.data(), ff.size())), 0xffff);
  EXPECT_EQ(ref_checksum_be(ff.data(), ff.size()), 0);
  // 0xffff + 0x0001 wraps to 0x0001 (end-around), checksum 0xfffe.
  const uint8_t w[4] = {0xff, 0xff, 0x00, 0x01};
  EXPECT_EQ(wire_bytes(ones_checksum(ones_sum(w, 4))), be_bytes(0xfffe));
}

TEST(Checksum, FoldHandlesLargeAccumulators) {
  // Any accumulator folds like the reference fold of its 16-bit pieces.
  std::mt19937_64 rng(7);
  for (int t = 0; t < 10000; ++t) {
    const uint64_t acc = rng();
    uint64_t s = 0;
    for (int k = 0; k < 4; ++k) s += (acc >> (16 * k)) & 0xffff;
    while (s >> 16) s = (s & 0xffff) + (s >> 16);
    EXPECT_EQ(ones_fold(acc), s) << std::hex << acc;
  }
  EXPECT_EQ(ones_fold(~0ull), 0xffff);
}

TEST(Checksum, MatchesByteWiseReferenceOnRandomBuffers) {
  std::mt19937_64 rng(12345);
  for (size_t len = 0; len <= 300; ++len) {
    for (int rep = 0; rep < 20; ++rep) {
      std::vector<uint8_t> buf(len);
      for (auto& b : buf) b = static_cast<uint8_t>(rng());
      const uint16_t got = ones_checksum(ones_sum(buf.data(), buf.size()));
      ASSERT_EQ(wire_bytes(got), be_bytes(ref_checksum_be(buf.data(), buf.size()))) << "len " << len;
    }
  }
}

TEST(Checksum, MatchesReferenceAtUnalignedStart) {
  std::mt19937_64 rng(99);
  std::vector<uint8_t> big(2048 + 8);
  for (auto& b : big) b = static_cast<uint8_t>(rng());
  for (size_t start = 0; start < 8; ++start)
    for (size_t len : {1u, 2u, 3u, 5u, 63u, 64u, 1499u, 2048u}) {
      const uint8_t* p = big.data() + start;
      EXPECT_EQ(wire_bytes(ones_checksum(ones_sum(p, len))), be_bytes(ref_checksum_be(p, len)))
          << "start " << start << " len " << len;
    }
}

TEST(Checksum, ChunkedSumAtEvenSplitsEqualsWholeSum) {
  // ones_sum continues an accumulator: even-length chunks (including
  // 2-mod-4 splits) then an odd tail give the same checksum as one call.
  std::mt19937_64 rng(2024);
  for (int rep = 0; rep < 500; ++rep) {
    const size_t len = 1 + rng() % 1500;
    std::vector<uint8_t> buf(len);
    for (auto& b : buf) b = static_cast<uint8_t>(rng());
    const uint16_t whole = ones_checksum(ones_sum(buf.data(), len));
    size_t off = 0;
    uint64_t acc = 0;
    while (off < len) {
      size_t chunk = 2 * (rng() % 40);  // even, possibly 0
      if (off + chunk >= len) chunk = len - off;  // last chunk may be odd
      acc = ones_sum(buf.data() + off, chunk, acc);
      off += chunk;
    }
    ASSERT_EQ(ones_checksum(acc), whole) << "len " << len;
  }
}

TEST(Checksum, StoredChecksumMakesBufferVerify) {
  // Insert the computed checksum into an even-length buffer: the whole folds to 0xffff.
  std::mt19937_64 rng(5);
  for (int rep = 0; rep < 1000; ++rep) {
    const size_t len = 2 * (2 + rng() % 200);
    std::vector<uint8_t> buf(len);
    for (auto& b : buf) b = static_cast<uint8_t>(rng());
    const size_t at = 2 * (rng() % (len / 2));
    buf[at] = buf[at + 1] = 0;
    const uint16_t c = ones_checksum(ones_sum(buf.data(), len));
    std::memcpy(buf.data() + at, &c, 2);
    ASSERT_EQ(ones_fold(ones_sum(buf.data(), len)), 0xffff);
    ASSERT_EQ(ref_checksum_be(buf.data(), len), 0);
  }
}

}  // namespace
