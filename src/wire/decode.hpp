// The receiver's side of the test payload (layout: wire/test_payload.hpp):
// what a UDP payload is (ours or not, data or end marker, whole or damaged)
// and what it says.
#pragma once

#include <cstdint>

#include "wire/test_payload.hpp"

namespace rateline::wire {

enum class Verdict : uint8_t {
  data,       // well-formed, checksum ok
  end,        // end marker, checksum ok
  foreign,    // not our magic: someone else's UDP
  malformed,  // our magic, but too short, wrong version/kind, or length field disagrees
  corrupt,    // well-formed header, checksum mismatch
};

struct Decoded {
  Verdict verdict = Verdict::foreign;
  uint16_t sender = 0;
  uint16_t stream = 0;
  uint64_t seq = 0;
  uint64_t tx_ns = 0;
  bool short_form = false;  // seq and tx_ns are the wire's low 48 bits (extend_stamp48)
  EndMarkerBody end;  // valid when verdict == end
};

// The short form's 48-bit send time as a full CLOCK_MONOTONIC value: the one
// nearest `near` (the receiver's clock). Exact when both share a clock and
// the packet is younger than 39 hours; across clocks it stays consistent
// from packet to packet (jitter needs only differences).
inline uint64_t extend_stamp48(uint64_t low48, uint64_t near) {
  const uint64_t diff = (low48 - near) & (kShortSeqLimit - 1);
  const int64_t signed_diff = diff >= kShortSeqLimit / 2 ? static_cast<int64_t>(diff) - static_cast<int64_t>(kShortSeqLimit)
                                                         : static_cast<int64_t>(diff);
  return near + static_cast<uint64_t>(signed_diff);
}

inline Decoded decode_short(const uint8_t* p, uint32_t len) {
  Decoded d;
  d.verdict = Verdict::malformed;
  if (len < kShortHeaderBytes || len >= kHeaderBytes) return d;
  d.short_form = true;
  d.sender = static_cast<uint16_t>(detail::load_be(p + 2, 2));
  d.stream = static_cast<uint16_t>(detail::load_be(p + 4, 2));
  d.seq = detail::load_be(p + 6, 6);
  d.tx_ns = detail::load_be(p + 12, 6);
  if (len > kShortHeaderBytes) {
    const uint64_t seed = pattern_seed(d.stream, d.seq);
    for (uint32_t j = kShortHeaderBytes; j < len; ++j)
      if (p[j] != detail::short_pad_byte(seed, j)) {
        d.verdict = Verdict::corrupt;
        return d;
      }
  }
  d.verdict = Verdict::data;
  return d;
}

inline Decoded decode(const uint8_t* p, uint32_t len) {
  Decoded d;
  if (len >= 2 && p[0] == kShortTag && p[1] == kShortVersionKind) [[unlikely]] return decode_short(p, len);
  if (len < 4 || detail::load_be(p, 4) != kMagic) return d;
  d.verdict = Verdict::malformed;
  if (len < kHeaderBytes || p[4] != kVersion) return d;
  const uint8_t kind = p[5];
  if (kind != static_cast<uint8_t>(Kind::data) && kind != static_cast<uint8_t>(Kind::end)) return d;
  if (len > 0xffff || detail::load_be(p + 26, 2) != len) return d;
  if (kind == static_cast<uint8_t>(Kind::end) && len < kEndMarkerMinPayloadBytes) return d;
  d.sender = static_cast<uint16_t>(detail::load_be(p + 24, 2));
  d.stream = static_cast<uint16_t>(detail::load_be(p + 6, 2));
  d.seq = detail::load_be(p + 8, 8);
  d.tx_ns = detail::load_be(p + 16, 8);
  if (payload_checksum(p, len) != static_cast<uint32_t>(detail::load_be(p + 28, 4))) {
    d.verdict = Verdict::corrupt;
    return d;
  }
  if (kind == static_cast<uint8_t>(Kind::end)) {
    const uint8_t* q = p + kHeaderBytes;
    d.end.total_sent = d.seq;
    const uint64_t first_word = detail::load_be(q, 8);
    d.end.clock_id = first_word == d.seq ? 0 : first_word;  // EndMarkerBody: equal to the total is "not given"
    d.end.delay_ns = detail::load_be(q + 8, 8);
    d.end.count = detail::load_be(q + 16, 8);
    d.end.burst = static_cast<uint32_t>(detail::load_be(q + 24, 4));
    d.end.stream_count = static_cast<uint16_t>(detail::load_be(q + 28, 2));
    d.end.data_size = static_cast<uint16_t>(detail::load_be(q + 30, 2));
    d.verdict = Verdict::end;
    return d;
  }
  d.verdict = Verdict::data;
  return d;
}

}  // namespace rateline::wire
