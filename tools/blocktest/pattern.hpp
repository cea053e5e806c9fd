// --verify: what each block carries and how a read block is checked.
//
// Block layout (offset = the block's byte offset in the file, seed = per run):
//   len >= 16:  [0, 8)        tag = offset ^ seed, little endian: a block read
//                             from the wrong place, or a stale block, fails here
//               [8, len - 4)  pattern bytes, a hash of (seed, offset + position)
//               [len - 4, len) CRC-32C of bytes [0, len - 4) (Castagnoli, the
//                             iSCSI/ext4/btrfs checksum), little endian
//   len < 16:   pattern bytes only (no room for tag and checksum): the check
//               regenerates the expected bytes and compares them all.
// A read is checked with tag + CRC (cheap); only a failing block is
// regenerated to name the first wrong byte.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rateline::blocktest {

uint32_t crc32c(uint32_t crc, const void* data, size_t len);

void fill_block(uint8_t* block, uint64_t len, uint64_t offset, uint64_t seed);

enum class BlockFault : uint8_t { none, tag, checksum, pattern };

struct BlockCheck {
  BlockFault fault = BlockFault::none;
  uint64_t first_bad_byte = 0;  // index in the block of the first byte that differs from what was written
  explicit operator bool() const { return fault == BlockFault::none; }
};

BlockCheck check_block(const uint8_t* block, uint64_t len, uint64_t offset, uint64_t seed);

const char* fault_name(BlockFault f);

}  // namespace rateline::blocktest
