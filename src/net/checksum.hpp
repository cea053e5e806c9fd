// Internet checksum (RFC 1071) helpers.
//
// The one's-complement sum is byte-order independent: summing native 16-bit
// words and storing the folded result natively yields the right bytes on the
// wire on both little- and big-endian hosts (RFC 1071 section 2(B)). We sum
// 32-bit words into a 64-bit accumulator so carries never overflow for any
// frame we can build (< 2^32 words).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rateline::net {

// Adds the bytes [data, data+len) to a running one's-complement accumulator.
// `len` may be odd only for the last chunk of a checksummed region.
inline uint64_t ones_sum(const void* data, size_t len, uint64_t acc = 0) {
  const auto* p = static_cast<const unsigned char*>(data);
  while (len >= 4) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    acc += w;
    p += 4;
    len -= 4;
  }
  if (len >= 2) {
    uint16_t w;
    std::memcpy(&w, p, 2);
    acc += w;
    p += 2;
    len -= 2;
  }
  if (len) {
    // The odd byte is the high-order byte of a 16-bit word in network order.
    unsigned char last[2] = {*p, 0};
    uint16_t w;
    std::memcpy(&w, last, 2);
    acc += w;
  }
  return acc;
}

// Folds the accumulator to 16 bits (end-around carry), not yet complemented.
inline uint16_t ones_fold(uint64_t acc) {
  acc = (acc & 0xffffffffu) + (acc >> 32);
  acc = (acc & 0xffffffffu) + (acc >> 32);
  acc = (acc & 0xffffu) + (acc >> 16);
  acc = (acc & 0xffffu) + (acc >> 16);
  return static_cast<uint16_t>(acc);
}

// Final checksum value to store (native order, see header comment).
inline uint16_t ones_checksum(uint64_t acc) { return static_cast<uint16_t>(~ones_fold(acc)); }

}  // namespace rateline::net
