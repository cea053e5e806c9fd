// The test payload every backend sends and every receiver checks.
//
// Layout (UDP payload, multi-byte header fields big-endian so tshark/tcpdump
// show them readably):
//   off  size  field
//   0    4     magic "RLN1"
//   4    1     version (1)
//   5    1     kind: 1 data, 2 end marker
//   6    2     stream id
//   8    8     sequence (per stream, from 0)      -- end marker: total data packets sent on the stream
//   16   8     tx timestamp, ns, CLOCK_MONOTONIC
//   24   2     sender id: drawn at random by each pktgen run (never 0), so that
//               a receiver tells runs from one address and port apart; 0 from
//               encoders that predate it (the field was the length's high half)
//   26   2     payload length (whole UDP payload; UDP caps it below 65536)
//   28   4     payload checksum (see below)
//   32   ...   data: pattern words derived from (stream, seq); end marker: EndMarkerBody then pattern
//
// Short form, for data payloads of 18..31 bytes (RFC 2544's 64-byte IPv4
// frame leaves 18 B of UDP payload; the long header alone is 32):
//   off  size  field
//   0    1     tag 'r' (the long form starts with 'R')
//   1    1     version (high nibble, 1) and kind (low nibble, 1 data; end
//               markers always use the long form)
//   2    2     sender id
//   4    2     stream id
//   6    6     sequence, 48 bits (a stream ends before it would wrap)
//   12   6     tx timestamp, the low 48 bits of the ns (78 hours): the
//               receiver takes the value within +-39 h of its own clock
//   18   ...   pad: byte j is byte (j % 8) of the LE word seed + (j / 8) * step
// It carries no payload checksum (no room): the UDP checksum is its integrity
// check, which the socket path's kernel verifies and raw receivers verify
// themselves (engine/rx_loop.hpp). The receiver's side: wire/decode.hpp.
//
// Pattern: 64-bit little-endian word i (i counted from the start of the
// payload, first pattern word is i = 4) is seed + i * kPatternStep with
// seed = mix(stream, seq). A receiver can recompute it, and a flipped bit,
// a shifted block or a payload from another packet all change the checksum.
//
// Checksum: acc = sum over all 64-bit LE words w_i (checksum field zero,
// trailing partial word zero-padded) of w_i * (2i + 1) mod 2^64, folded to
// 32 bits. The odd multipliers make every single-word change and every swap
// of two words visible. Because the pattern is an arithmetic sequence, the
// sender's share of the sum over the pattern has a closed form (seed * A +
// step * B with per-length constants), so the sender never re-reads the payload;
// the receiver reads every byte.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rateline::wire {

inline constexpr uint32_t kMagic = 0x524c4e31;  // "RLN1"
inline constexpr uint8_t kVersion = 1;
inline constexpr uint32_t kHeaderBytes = 32;
inline constexpr uint32_t kEndMarkerBodyBytes = 32;
inline constexpr uint32_t kShortHeaderBytes = 18;
inline constexpr uint32_t kMinPayloadBytes = kShortHeaderBytes;
inline constexpr uint8_t kShortTag = 'r';
inline constexpr uint8_t kShortVersionKind = 0x11;  // version 1, kind data
inline constexpr uint64_t kShortSeqLimit = 1ull << 48;  // sequences of the short form are below this

// Whether a data payload of `len` bytes uses the short form.
constexpr bool is_short_form(uint32_t len) { return len < kHeaderBytes; }
inline constexpr uint32_t kEndMarkerMinPayloadBytes = kHeaderBytes + kEndMarkerBodyBytes;
inline constexpr uint64_t kPatternStep = 0xd1b54a32d192ed03ull;  // odd

enum class Kind : uint8_t { data = 1, end = 2 };

namespace detail {
inline uint64_t load_le64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
inline void store_le64(uint8_t* p, uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}
inline uint64_t load_be(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = v << 8 | p[i];
  return v;
}
inline void store_be(uint8_t* p, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) {
    p[i] = static_cast<uint8_t>(v);
    v >>= 8;
  }
}
inline uint32_t fold32(uint64_t acc) { return static_cast<uint32_t>(acc ^ (acc >> 32)); }
}  // namespace detail

inline uint64_t pattern_seed(uint16_t stream, uint64_t seq) {
  // splitmix64 finaliser: neighbouring sequences give unrelated patterns.
  uint64_t z = seq + 0x9e3779b97f4a7c15ull * (uint64_t{stream} + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The receiver's checksum: reads every byte of the payload.
//
// Words 4.. are summed without a multiply per word, in four lanes (word
// 4 + 4m + j in lane j): two adds per word in four independent chains, 2.5x
// faster than a multiply per word here (1400 B: 40 vs 104 ns at -O3), and
// no 64-bit vector multiply needed (only AVX-512 has one; NEON and SSE do not). Per lane, S_j = sum_m w and R_j = sum_m (running S_j)
// = sum_m w * (M - m); then sum_m m * w = M * S_j - R_j and the lane's share
// of sum w_i (2i + 1), with 2i + 1 = 8m + 2j + 9, is
// 8 (M S_j - R_j) + (2j + 9) S_j. Everything is mod 2^64, as the definition.
inline uint32_t payload_checksum(const uint8_t* p, uint32_t len) {
  const uint32_t words = len / 8;
  uint64_t acc = 0;
  uint32_t i = 0;
  for (; i < words && i < 4; ++i) {  // the header: word 3's high half is the checksum field, read as zero
    uint64_t w = detail::load_le64(p + 8 * i);
    if (i == 3) w &= 0x00000000ffffffffull;
    acc += w * (2ull * i + 1);
  }
  if (words > 4) {
    const uint32_t blocks = (words - 4) / 4;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, r0 = 0, r1 = 0, r2 = 0, r3 = 0;
    const uint8_t* q = p + 32;
    for (uint32_t m = 0; m < blocks; ++m, q += 32) {
      s0 += detail::load_le64(q);
      s1 += detail::load_le64(q + 8);
      s2 += detail::load_le64(q + 16);
      s3 += detail::load_le64(q + 24);
      r0 += s0;
      r1 += s1;
      r2 += s2;
      r3 += s3;
    }
    const uint64_t M = blocks;
    acc += 8 * (M * s0 - r0) + 9 * s0;
    acc += 8 * (M * s1 - r1) + 11 * s1;
    acc += 8 * (M * s2 - r2) + 13 * s2;
    acc += 8 * (M * s3 - r3) + 15 * s3;
    for (i = 4 + 4 * blocks; i < words; ++i) acc += detail::load_le64(p + 8 * i) * (2ull * i + 1);
  }
  if (const uint32_t r = len % 8) {
    uint8_t tail[8] = {};
    std::memcpy(tail, p + 8 * i, r);
    uint64_t w = detail::load_le64(tail);
    if (i == 3) w &= 0x00000000ffffffffull;
    acc += w * (2ull * i + 1);
  }
  return detail::fold32(acc);
}

// Per-length constants for the sender's closed-form checksum. Built once per run.
struct PayloadPlan {
  uint32_t len = 0;          // whole UDP payload
  uint16_t sender = 0;       // the run's sender id (header bytes 24..25)
  uint32_t first_word = 4;   // first pattern word index (5 + ... for end markers it is 8)
  uint32_t full_words = 0;   // index one past the last full pattern word
  uint32_t tail_bytes = 0;   // bytes in the trailing partial word
  uint64_t sum_odd = 0;      // A = sum_{i=first}^{full-1} (2i+1)
  uint64_t sum_i_odd = 0;    // B = sum_{i=first}^{full-1} i(2i+1)
  bool short_form = false;   // a data payload below kHeaderBytes: the short header

  static PayloadPlan make(uint32_t payload_len, uint32_t first_pattern_word = kHeaderBytes / 8, uint16_t sender = 0) {
    PayloadPlan pl;
    pl.len = payload_len;
    pl.sender = sender;
    pl.first_word = first_pattern_word;
    pl.full_words = payload_len / 8;
    pl.tail_bytes = payload_len % 8;
    pl.short_form = is_short_form(payload_len);
    for (uint64_t i = pl.first_word; i < pl.full_words; ++i) {
      pl.sum_odd += 2 * i + 1;
      pl.sum_i_odd += i * (2 * i + 1);
    }
    return pl;
  }
};

struct HeaderFields {
  Kind kind = Kind::data;
  uint16_t sender = 0;
  uint16_t stream = 0;
  uint64_t seq = 0;
  uint64_t tx_ns = 0;
};

inline void write_header(uint8_t* p, const HeaderFields& h, uint32_t payload_len) {
  detail::store_be(p, kMagic, 4);
  p[4] = kVersion;
  p[5] = static_cast<uint8_t>(h.kind);
  detail::store_be(p + 6, h.stream, 2);
  detail::store_be(p + 8, h.seq, 8);
  detail::store_be(p + 16, h.tx_ns, 8);
  detail::store_be(p + 24, h.sender, 2);
  detail::store_be(p + 26, payload_len, 2);
  std::memset(p + 28, 0, 4);
}

// What writing a payload adds up, so nobody reads it back: `rln` is the
// share of the payload checksum above; `ones` is the RFC 1071 accumulator of
// the bytes written (the two 32-bit halves of every stored 64-bit word, as
// net::ones_sum adds them on a little-endian host), which completes the UDP
// checksum of an Ethernet-layer frame.
struct PayloadSums {
  uint64_t rln = 0;
  uint64_t ones = 0;
};

namespace detail {
inline uint64_t halves(uint64_t w) { return (w >> 32) + (w & 0xffffffffull); }
}  // namespace detail

// Writes the pattern for (stream, seq) from plan.first_word on and returns its
// shares; then the caller adds the shares of the words before it.
inline PayloadSums write_pattern(uint8_t* p, const PayloadPlan& pl, uint64_t seed) {
  PayloadSums sums;
  // The bound in a local and a 64-bit index: stores through p may alias
  // `pl` as far as the compiler knows, and a bound re-read after every store
  // kept the loop scalar; a 32-bit index times 8 might wrap, and that made
  // GCC vectorise with scatter stores. Either way 1400 B took ~110 ns per
  // packet in pktgen; this loop vectorises to plain stores.
  const size_t first = pl.first_word;
  const size_t full = pl.full_words;
  uint64_t w = seed + uint64_t{first} * kPatternStep;
  for (size_t i = first; i < full; ++i) {
    detail::store_le64(p + 8 * i, w);
    sums.ones += detail::halves(w);  // the value is in a register: no second pass over the payload
    w += kPatternStep;
  }
  sums.rln = seed * pl.sum_odd + kPatternStep * pl.sum_i_odd;
  if (pl.tail_bytes && pl.full_words >= pl.first_word) {
    uint8_t tail[8];
    detail::store_le64(tail, w);
    std::memcpy(p + 8ull * pl.full_words, tail, pl.tail_bytes);
    const uint64_t masked = w & (~0ull >> (64 - 8 * pl.tail_bytes));
    sums.rln += masked * (2ull * pl.full_words + 1);
    sums.ones += detail::halves(masked);  // zero-padded, as ones_sum pads an odd tail
  }
  return sums;
}

// Checksum share of the first `words` full words (all before the pattern).
inline uint64_t prefix_share(const uint8_t* p, uint32_t words) {
  uint64_t acc = 0;
  for (uint32_t i = 0; i < words; ++i) {
    uint64_t w = detail::load_le64(p + 8 * i);
    if (i == 3) w &= 0x00000000ffffffffull;
    acc += w * (2ull * i + 1);
  }
  return acc;
}

inline void store_checksum(uint8_t* p, uint32_t csum) { detail::store_be(p + 28, csum, 4); }

namespace detail {
// The short form's pad byte j (j >= kShortHeaderBytes).
inline uint8_t short_pad_byte(uint64_t seed, uint32_t j) {
  return static_cast<uint8_t>((seed + uint64_t{j / 8} * kPatternStep) >> (8 * (j % 8)));
}

}  // namespace detail

// The short form (layout above) as four little-endian words, zero past
// len: pad byte j is byte j % 8 of the pattern word seed + (j / 8) * step,
// so words 2 and 3 are pattern words with the header's last two bytes over
// word 2. Built in registers: the sender stores them, and sums their halves
// for the UDP checksum without reading anything back.
struct ShortWords {
  uint64_t w[4];
};

inline ShortWords short_words(uint16_t sender, uint16_t stream, uint64_t seq, uint64_t tx_ns, uint32_t len) {
  ShortWords s;
  s.w[0] = uint64_t{kShortTag} | uint64_t{kShortVersionKind} << 8 | uint64_t{__builtin_bswap16(sender)} << 16 |
           uint64_t{__builtin_bswap16(stream)} << 32 | ((seq >> 40) & 0xff) << 48 | ((seq >> 32) & 0xff) << 56;
  s.w[1] = __builtin_bswap64((seq & 0xffffffffull) << 32 | ((tx_ns >> 16) & 0xffffffffull));
  const uint64_t stamp_tail = ((tx_ns >> 8) & 0xff) | (tx_ns & 0xff) << 8;  // bytes 16, 17
  if (len == kShortHeaderBytes) {  // the 64 B frame: no pad, no seed to compute
    s.w[2] = stamp_tail;
    s.w[3] = 0;
    return s;
  }
  const uint64_t seed = pattern_seed(stream, seq);
  const uint64_t w2 = ((seed + 2 * kPatternStep) & ~0xffffull) | stamp_tail;
  const uint64_t w3 = seed + 3 * kPatternStep;
  s.w[2] = len >= 24 ? w2 : w2 & ((1ull << (8 * (len - 16))) - 1);
  s.w[3] = len > 24 ? w3 & (~0ull >> (8 * (32 - len))) : 0;
  return s;
}

// Writes the short form: words 0 and 1, then the 16 bytes that end at len,
// cut from the four words in registers (they overlap word 1 with the same
// bytes). Never a byte past len, and nothing staged in memory: a store
// read back at another width stalls store forwarding (it cost half the
// sender's time per 64 B frame).
inline PayloadSums fill_short_payload(uint8_t* p, const PayloadPlan& pl, uint16_t stream, uint64_t seq,
                                      uint64_t tx_ns) {
  const ShortWords s = short_words(pl.sender, stream, seq, tx_ns, pl.len);
  detail::store_le64(p, s.w[0]);
  detail::store_le64(p + 8, s.w[1]);
  const uint32_t start = pl.len - 16;  // 2..15
  const unsigned __int128 head = s.w[0] | static_cast<unsigned __int128>(s.w[1]) << 64;
  const unsigned __int128 tail = s.w[2] | static_cast<unsigned __int128>(s.w[3]) << 64;
  const unsigned __int128 last16 = head >> (8 * start) | tail << (128 - 8 * start);
  detail::store_le64(p + start, static_cast<uint64_t>(last16));
  detail::store_le64(p + start + 8, static_cast<uint64_t>(last16 >> 64));
  return PayloadSums{0, detail::halves(s.w[0]) + detail::halves(s.w[1]) + detail::halves(s.w[2]) + detail::halves(s.w[3])};
}

// Builds a complete data payload in place: header, pattern, checksum. This is
// the per-packet work of every sender; it touches each payload byte once and
// reads none back. The header goes out as four 64-bit words built from the
// values (word i is load_le64(p + 8i) of the layout above), so its checksum
// shares come from registers, not from bytes just stored.
inline PayloadSums fill_data_payload(uint8_t* p, const PayloadPlan& pl, uint16_t stream, uint64_t seq,
                                     uint64_t tx_ns) {
  if (pl.short_form) [[unlikely]] return fill_short_payload(p, pl, stream, seq, tx_ns);
  const uint64_t w0 = uint64_t{kMagic >> 24} | uint64_t{(kMagic >> 16) & 0xff} << 8 |
                      uint64_t{(kMagic >> 8) & 0xff} << 16 | uint64_t{kMagic & 0xff} << 24 |
                      uint64_t{kVersion} << 32 | uint64_t{static_cast<uint8_t>(Kind::data)} << 40 |
                      uint64_t{static_cast<uint8_t>(stream >> 8)} << 48 |
                      uint64_t{static_cast<uint8_t>(stream)} << 56;
  const uint64_t w1 = __builtin_bswap64(seq);
  const uint64_t w2 = __builtin_bswap64(tx_ns);
  // Bytes 24..27: sender id and length; 28..31 (checksum) zero for now.
  const uint64_t w3_len = __builtin_bswap32(uint32_t{pl.sender} << 16 | (pl.len & 0xffff));
  // A header-only payload (32 B) has no pattern: no seed to mix.
  PayloadSums sums;
  if (pl.full_words > pl.first_word || pl.tail_bytes) sums = write_pattern(p, pl, pattern_seed(stream, seq));
  const uint32_t csum = detail::fold32(sums.rln + w0 + 3 * w1 + 5 * w2 + 7 * w3_len);
  const uint64_t w3 = w3_len | uint64_t{__builtin_bswap32(csum)} << 32;
  detail::store_le64(p, w0);
  detail::store_le64(p + 8, w1);
  detail::store_le64(p + 16, w2);
  detail::store_le64(p + 24, w3);
  sums.ones += detail::halves(w0) + detail::halves(w1) + detail::halves(w2) + detail::halves(w3);
  return sums;
}

// What an end marker tells the receiver about the run that just ended.
// On the wire the total is the header's sequence; the body's first word
// carries the sender's clock id (util/clock_id.hpp) instead. Encoders from
// before the clock id wrote the total there too: a first word equal to the
// sequence (or 0) means "no clock id given".
struct EndMarkerBody {
  uint64_t total_sent = 0;    // data packets sent on this stream (the header's seq)
  uint64_t delay_ns = 0;      // --delay between bursts
  uint64_t count = 0;         // --count of the whole run, 0 if unbounded
  uint32_t burst = 0;         // --burst
  uint16_t stream_count = 0;  // streams in the whole run, so rx knows when all ended
  uint16_t data_size = 0;     // --size of the data packets (payload bytes; 0 if > 65535)
  uint64_t clock_id = 0;      // the sender's CLOCK_MONOTONIC identity (util/clock_id.hpp); 0: not given
};

inline void fill_end_marker(uint8_t* p, const PayloadPlan& pl, uint16_t stream, const EndMarkerBody& b,
                            uint64_t tx_ns) {
  write_header(p, HeaderFields{Kind::end, pl.sender, stream, b.total_sent, tx_ns}, pl.len);
  uint8_t* q = p + kHeaderBytes;
  detail::store_be(q, b.clock_id ? b.clock_id : b.total_sent, 8);
  detail::store_be(q + 8, b.delay_ns, 8);
  detail::store_be(q + 16, b.count, 8);
  detail::store_be(q + 24, b.burst, 4);
  detail::store_be(q + 28, b.stream_count, 2);
  detail::store_be(q + 30, b.data_size, 2);
  uint64_t acc = prefix_share(p, kEndMarkerMinPayloadBytes / 8);
  acc += write_pattern(p, pl, pattern_seed(stream, b.total_sent)).rln;
  store_checksum(p, detail::fold32(acc));
}

inline PayloadPlan end_marker_plan(uint32_t data_payload_len, uint16_t sender = 0) {
  const uint32_t len = data_payload_len > kEndMarkerMinPayloadBytes ? data_payload_len : kEndMarkerMinPayloadBytes;
  return PayloadPlan::make(len, kEndMarkerMinPayloadBytes / 8, sender);
}

}  // namespace rateline::wire
