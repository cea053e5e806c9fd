#include "tools/blocktest/pattern.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace rateline::blocktest;

TEST(Crc32c, KnownVectors) {
  const char* s = "123456789";
  EXPECT_EQ(~crc32c(~0u, s, 9), 0xE3069283u);  // the CRC-32C check value
  std::vector<uint8_t> zeros(32, 0);
  EXPECT_EQ(~crc32c(~0u, zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4
}

TEST(Verify, IntactBlocksPass) {
  for (uint64_t len : {1, 7, 8, 15, 16, 17, 100, 512, 4096, 65536}) {
    std::vector<uint8_t> b(len);
    fill_block(b.data(), len, 3 * len, 0x1234567);
    EXPECT_TRUE(check_block(b.data(), len, 3 * len, 0x1234567)) << len;
  }
}

TEST(Verify, CatchesEveryFlippedByte) {
  // Flip each byte of the block in turn (and a single bit of it): every one is caught,
  // and the check names the byte.
  for (uint64_t len : {8, 16, 24, 512, 4096}) {
    std::vector<uint8_t> good(len);
    const uint64_t off = 7 * len;
    fill_block(good.data(), len, off, 42);
    for (uint64_t i = 0; i < len; ++i) {
      for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
        std::vector<uint8_t> b = good;
        b[i] ^= mask;
        const BlockCheck c = check_block(b.data(), len, off, 42);
        ASSERT_FALSE(c) << "len " << len << " byte " << i;
        EXPECT_EQ(c.first_bad_byte, i) << "len " << len;
        if (len >= 16) {
          const BlockFault want = i < 8 ? BlockFault::tag : i >= len - 4 ? BlockFault::checksum : BlockFault::pattern;
          EXPECT_EQ(c.fault, want) << "len " << len << " byte " << i;
        }
      }
    }
  }
}

TEST(Verify, CatchesMisplacedStaleAndZeroBlocks) {
  const uint64_t len = 4096;
  std::vector<uint8_t> b(len);
  fill_block(b.data(), len, 0, 99);
  EXPECT_EQ(check_block(b.data(), len, len, 99).fault, BlockFault::tag);   // block 0 read back at block 1
  EXPECT_FALSE(check_block(b.data(), len, 0, 100));                          // left over from another run
  std::vector<uint8_t> zeros(len, 0);
  EXPECT_FALSE(check_block(zeros.data(), len, 0, 99));                       // a hole read back as zeros
  std::vector<uint8_t> small(8), other(8);
  fill_block(small.data(), 8, 0, 5);
  fill_block(other.data(), 8, 8, 5);
  EXPECT_NE(std::memcmp(small.data(), other.data(), 8), 0);                  // 8 B blocks differ by offset
  EXPECT_FALSE(check_block(other.data(), 8, 0, 5));
}
