#include "pattern.hpp"

#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif
#if defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#endif

namespace rateline::blocktest {
namespace {

constexpr uint64_t kHeaderBytes = 8, kCrcBytes = 4, kMinTagged = 16;

// splitmix64 finalizer: every input bit reaches every output bit, so
// neighbouring positions and offsets give unrelated words.
inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline void store_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

// Pattern bytes [from, to) of the block at `offset`: byte i is byte i % 8 of
// mix(seed ^ (offset + i) / 8 ...), computed a word at a time.
void fill_pattern(uint8_t* block, uint64_t from, uint64_t to, uint64_t offset, uint64_t seed) {
  uint64_t i = from;
  while (i < to) {
    const uint64_t word_pos = (offset + i) / 8;
    const uint64_t in_word = (offset + i) % 8;
    uint8_t w[8];
    store_le64(w, mix(seed ^ (word_pos * 0x9e3779b97f4a7c15ull)));
    const uint64_t n = (to - i < 8 - in_word) ? to - i : 8 - in_word;
    std::memcpy(block + i, w + in_word, n);
    i += n;
  }
}

uint32_t crc_table_entry(uint32_t i) {
  uint32_t c = i;
  for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
  return c;
}

struct Table {
  uint32_t t[256];
  Table() {
    for (uint32_t i = 0; i < 256; ++i) t[i] = crc_table_entry(i);
  }
};

uint32_t crc32c_soft(uint32_t crc, const uint8_t* p, size_t len) {
  static const Table table;
  for (size_t i = 0; i < len; ++i) crc = table.t[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const uint8_t* p, size_t len) {
  uint64_t c = crc;
  while (len >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    len -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (len--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}
const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#endif

uint64_t tag_for(uint64_t offset, uint64_t seed) { return offset ^ seed; }

uint32_t block_crc(const uint8_t* block, uint64_t len, uint64_t seed) {
  return ~crc32c(~static_cast<uint32_t>(seed), block, len - kCrcBytes);
}

}  // namespace

uint32_t crc32c(uint32_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  if (kHaveSse42) return crc32c_sse42(crc, p, len);
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
  while (len >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    crc = __crc32cd(crc, v);
    p += 8;
    len -= 8;
  }
  while (len--) crc = __crc32cb(crc, *p++);
  return crc;
#endif
  return crc32c_soft(crc, p, len);
}

void fill_block(uint8_t* block, uint64_t len, uint64_t offset, uint64_t seed) {
  if (len < kMinTagged) {
    fill_pattern(block, 0, len, offset, seed);
    return;
  }
  store_le64(block, tag_for(offset, seed));
  fill_pattern(block, kHeaderBytes, len - kCrcBytes, offset, seed);
  const uint32_t c = block_crc(block, len, seed);
  for (uint64_t i = 0; i < kCrcBytes; ++i) block[len - kCrcBytes + i] = static_cast<uint8_t>(c >> (8 * i));
}

BlockCheck check_block(const uint8_t* block, uint64_t len, uint64_t offset, uint64_t seed) {
  BlockCheck r;
  if (len >= kMinTagged) {
    uint32_t stored = 0;
    for (uint64_t i = 0; i < kCrcBytes; ++i) stored |= uint32_t{block[len - kCrcBytes + i]} << (8 * i);
    if (load_le64(block) == tag_for(offset, seed) && stored == block_crc(block, len, seed)) return r;
  }
  // Slow path (short blocks always, long blocks only when they failed):
  // regenerate what was written and name the first byte that differs.
  uint8_t expect[256];
  for (uint64_t at = 0; at < len; at += sizeof expect) {
    const uint64_t n = len - at < sizeof expect ? len - at : sizeof expect;
    fill_pattern(expect, 0, n, offset + at, seed);
    if (len >= kMinTagged && at < kHeaderBytes) {
      uint8_t head[8];
      store_le64(head, tag_for(offset, seed));
      for (uint64_t i = 0; i < kHeaderBytes && i < n; ++i) expect[i] = head[i];
    }
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t pos = at + i;
      if (len >= kMinTagged && pos >= len - kCrcBytes) break;  // the CRC bytes: compared below
      if (block[pos] != expect[i]) {
        r.fault = pos < kHeaderBytes && len >= kMinTagged ? BlockFault::tag : BlockFault::pattern;
        r.first_bad_byte = pos;
        return r;
      }
    }
  }
  if (len >= kMinTagged) {  // data matches what was written: the checksum bytes themselves are wrong
    r.fault = BlockFault::checksum;
    r.first_bad_byte = len - kCrcBytes;
    const uint32_t c = block_crc(block, len, seed);
    for (uint64_t i = 0; i < kCrcBytes; ++i)
      if (block[len - kCrcBytes + i] != static_cast<uint8_t>(c >> (8 * i))) {
        r.first_bad_byte = len - kCrcBytes + i;
        break;
      }
  }
  return r;
}

const char* fault_name(BlockFault f) {
  switch (f) {
    case BlockFault::none: return "ok";
    case BlockFault::tag: return "wrong block tag (misplaced or stale block)";
    case BlockFault::checksum: return "checksum mismatch";
    case BlockFault::pattern: return "pattern mismatch";
  }
  return "?";
}

}  // namespace rateline::blocktest
