// The per-packet tag of pktgen --key-file / rx --key-file: on a network
// where strangers can send, only packets of a holder of the key are counted.
//
// Layout: a tagged UDP payload is the tag, then the test payload of
// wire/test_payload.hpp (long or short form) unchanged:
//   off  size  field
//   0    8     tag: SipHash-2-4 (libsodium crypto_shorthash) of the test
//              payload's first min(len, 64) bytes
//   8    ...   the test payload
// 64 bytes cover the long header (stream, sequence, stamp, sender, length,
// payload checksum) and an end marker's body, everything the count reads;
// the data pattern beyond them is covered by the payload checksum, which
// the tag covers. One SipHash over at most 64 bytes per packet, whatever
// the size. The SipHash key is BLAKE2b-128 of a fixed label keyed with the
// key file's secret (util/key_file.hpp), so it is not the secret itself and
// not ceiling's agent key.
//
// What it does not do: it hides nothing (no encryption), and a captured
// packet sent again verifies again (no nonce per run on the receiver's
// side): from its first source it counts as a duplicate, from another
// source as a sender of its own.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "util/key_file.hpp"

namespace rateline::wire {

inline constexpr uint32_t kTagBytes = 8;
inline constexpr uint32_t kTagCoverBytes = 64;

struct PacketKey {
  std::array<unsigned char, 16> bytes{};
};

PacketKey packet_key(const secret::Key& secret);

// The tag of the test payload at p (len bytes), as its 8 bytes in wire order.
uint64_t packet_tag(const PacketKey& key, const uint8_t* test_payload, uint32_t len);

// Writes the tag of the test payload that follows it (at p + kTagBytes,
// test_len bytes); returns the RFC 1071 share of the 8 bytes written, as
// wire::PayloadSums::ones counts (both 32-bit halves of the word).
inline uint64_t put_tag(const PacketKey& key, uint8_t* p, uint32_t test_len) {
  const uint64_t tag = packet_tag(key, p + kTagBytes, test_len);
  std::memcpy(p, &tag, kTagBytes);
  return (tag >> 32) + (tag & 0xffffffffull);
}

// Whether the UDP payload p (len bytes) starts with the right tag of what follows.
inline bool tag_ok(const PacketKey& key, const uint8_t* p, uint32_t len) {
  if (len < kTagBytes) return false;
  uint64_t tag;
  std::memcpy(&tag, p, kTagBytes);
  return tag == packet_tag(key, p + kTagBytes, len - kTagBytes);
}

}  // namespace rateline::wire
