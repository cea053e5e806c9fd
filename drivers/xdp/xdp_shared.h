/* The XDP-native backend's one description of what BPF and C++ share: the
 * wire layout (offsets into the test payload, src/wire/test_payload.hpp),
 * the arithmetic both sides must agree on (pattern seed, checksum fold,
 * latency bucket), and the plain structs kept in the programs' maps.
 *
 * Plain C, included by xdp_tx.bpf.c / xdp_rx.bpf.c (clang -target bpf) and
 * by the C++ loaders, which static_assert that these numbers match the
 * engine's (xdp_tx.cpp, xdp_rx.cpp) and unit-test the functions against
 * wire:: and stats:: (tests/unit/xdp/xdp_shared_test.cpp).
 *
 * Byte order: header fields are big-endian on the wire; the checksum works
 * on little-endian 64-bit words. Both programs load payload words natively
 * and so assume a little-endian machine (x86-64, arm64): xdp_*.bpf.c refuse
 * to compile otherwise.
 */
#ifndef RATELINE_XDP_SHARED_H
#define RATELINE_XDP_SHARED_H

#ifdef __cplusplus
#include <cstdint>
typedef uint8_t rl_u8;
typedef uint16_t rl_u16;
typedef uint32_t rl_u32;
typedef uint64_t rl_u64;
#define RL_INLINE inline
#else
typedef __u8 rl_u8;
typedef __u16 rl_u16;
typedef __u32 rl_u32;
typedef __u64 rl_u64;
#define RL_INLINE static __always_inline
#endif

/* ---- the test payload (README "Wire format") ---- */
#define RL_MAGIC 0x524c4e31u /* "RLN1", big-endian at offset 0 */
#define RL_VERSION 1
#define RL_KIND_DATA 1
#define RL_KIND_END 2
#define RL_OFF_MAGIC 0
#define RL_OFF_VERSION 4
#define RL_OFF_KIND 5
#define RL_OFF_STREAM 6
#define RL_OFF_SEQ 8
#define RL_OFF_TX_NS 16
#define RL_OFF_SENDER 24
#define RL_OFF_LEN 26 /* 2 bytes */
#define RL_OFF_CSUM 28
#define RL_HEADER_BYTES 32
#define RL_FIRST_PATTERN_WORD 4 /* = RL_HEADER_BYTES / 8 */
#define RL_END_BODY_BYTES 32    /* clock id (or total_sent) 8, delay_ns 8, count 8, burst 4, stream_count 2, data_size 2 */
#define RL_END_MIN_BYTES 64
#define RL_PATTERN_STEP 0xd1b54a32d192ed03ull
/* The short form, for data payloads of RL_SHORT_HEADER_BYTES..RL_HEADER_BYTES-1
 * (a 64 B IPv4 frame): no magic word and no payload checksum, the UDP
 * checksum is its integrity check. */
#define RL_SHORT_TAG 0x72           /* 'r' */
#define RL_SHORT_VERSION_KIND 0x11  /* version 1, kind data */
#define RL_SHORT_HEADER_BYTES 18
#define RL_OFF_SHORT_SENDER 2
#define RL_OFF_SHORT_STREAM 4
#define RL_OFF_SHORT_SEQ 6    /* 6 bytes */
#define RL_OFF_SHORT_TX_NS 12 /* 6 bytes: the low 48 bits */
#define RL_SHORT_LIMIT (1ull << 48) /* sequences and stamps are below this */
/* Largest UDP payload the RX program verifies (jumbo frames): its checksum
 * loop has this many words as its constant bound. */
#define RL_MAX_PAYLOAD 9000
#define RL_MAX_WORDS (RL_MAX_PAYLOAD / 8)

/* ---- sequence window and latency histogram (stats/) ---- */
#define RL_WINDOW_BITS 16384 /* = stats::SequenceTracker::kWindow */
#define RL_WINDOW_WORDS (RL_WINDOW_BITS / 64)
#define RL_LAT_SUB_BITS 3 /* = stats::LatencyHistogram::kSubBits */
#define RL_LAT_BUCKETS (64 << RL_LAT_SUB_BITS)

/* splitmix64 finaliser: wire::pattern_seed. */
RL_INLINE rl_u64 rl_pattern_seed(rl_u16 stream, rl_u64 seq) {
  rl_u64 z = seq + 0x9e3779b97f4a7c15ull * ((rl_u64)stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* wire::detail::fold32. */
RL_INLINE rl_u32 rl_fold32(rl_u64 acc) { return (rl_u32)(acc ^ (acc >> 32)); }

/* Index of the most significant set bit (v != 0); BPF has no clz. */
RL_INLINE rl_u32 rl_msb64(rl_u64 v) {
  rl_u32 r = 0;
  if (v >> 32) { v >>= 32; r += 32; }
  if (v >> 16) { v >>= 16; r += 16; }
  if (v >> 8) { v >>= 8; r += 8; }
  if (v >> 4) { v >>= 4; r += 4; }
  if (v >> 2) { v >>= 2; r += 2; }
  if (v >> 1) r += 1;
  return r;
}

/* stats::LatencyHistogram::index: 8 log-linear sub-buckets per power of two. */
RL_INLINE rl_u32 rl_latency_index(rl_u64 ns) {
  if (ns < (1u << RL_LAT_SUB_BITS)) return (rl_u32)ns;
  const rl_u32 shift = rl_msb64(ns) - RL_LAT_SUB_BITS;
  const rl_u32 sub = (rl_u32)((ns >> shift) & ((1u << RL_LAT_SUB_BITS) - 1));
  return (shift + 1) * (1u << RL_LAT_SUB_BITS) + sub;
}

/* A native 64-bit load's two 32-bit halves, summed: how the programs add a
 * word to a one's-complement accumulator (wire::detail::halves). */
RL_INLINE rl_u64 rl_halves(rl_u64 w) { return (w & 0xffffffffull) + (w >> 32); }

/* Folds a 64-bit one's-complement accumulator to 16 bits (net::ones_fold). */
RL_INLINE rl_u16 rl_ones_fold(rl_u64 acc) {
  acc = (acc & 0xffffffffu) + (acc >> 32);
  acc = (acc & 0xffffffffu) + (acc >> 32);
  acc = (acc & 0xffffu) + (acc >> 16);
  acc = (acc & 0xffffu) + (acc >> 16);
  return (rl_u16)acc;
}

/* A short-form payload of len bytes (18..31) as four little-endian words,
 * zero past len: the bytes wire::fill_short_payload writes. Pad byte j is
 * byte j % 8 of the pattern word seed + (j / 8) * step, so words 2 and 3 are
 * pattern words with the header's last two bytes laid over word 2. */
struct rl_short_words {
  rl_u64 w[4];
};

RL_INLINE rl_u64 rl_low_bytes(rl_u64 w, rl_u32 bytes) { return bytes >= 8 ? w : w & ((1ull << (8 * bytes)) - 1); }

RL_INLINE struct rl_short_words rl_short_payload(rl_u16 sender, rl_u16 stream, rl_u64 seq, rl_u64 tx_ns, rl_u32 len) {
  const rl_u64 seed = rl_pattern_seed(stream, seq);
  struct rl_short_words s;
  s.w[0] = (rl_u64)RL_SHORT_TAG | (rl_u64)RL_SHORT_VERSION_KIND << 8 | (rl_u64)(sender >> 8) << 16 |
           (rl_u64)(sender & 0xff) << 24 | (rl_u64)(stream >> 8) << 32 | (rl_u64)(stream & 0xff) << 40 |
           ((seq >> 40) & 0xff) << 48 | ((seq >> 32) & 0xff) << 56;
  s.w[1] = __builtin_bswap64((seq & 0xffffffffull) << 32 | ((tx_ns >> 16) & 0xffffffffull));
  s.w[2] = ((seed + 2 * RL_PATTERN_STEP) & ~0xffffull) | ((tx_ns >> 8) & 0xff) | (tx_ns & 0xff) << 8;
  s.w[3] = seed + 3 * RL_PATTERN_STEP;
  s.w[2] = rl_low_bytes(s.w[2], len - 16);
  s.w[3] = len > 24 ? rl_low_bytes(s.w[3], len - 24) : 0;
  return s;
}

/* wire::detail::short_pad_byte: the pad byte the receiver expects at j. */
RL_INLINE rl_u8 rl_short_pad_byte(rl_u64 seed, rl_u32 j) {
  return (rl_u8)((seed + (rl_u64)(j / 8) * RL_PATTERN_STEP) >> (8 * (j % 8)));
}

/* wire::extend_stamp48: the full clock value nearest `near` whose low 48
 * bits are low48. */
RL_INLINE rl_u64 rl_extend_stamp48(rl_u64 low48, rl_u64 near) {
  const rl_u64 diff = (low48 - near) & (RL_SHORT_LIMIT - 1);
  return diff >= RL_SHORT_LIMIT / 2 ? near - (RL_SHORT_LIMIT - diff) : near + diff;
}

/* ==== TX: xdp_tx.bpf.c, run by BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES ==== */

/* BPF_PROG_RUN passes these 8 bytes as XDP metadata in front of every
 * template frame: the generator acts only on frames that carry them. The
 * program is also attached (generic mode, see xdp_tx.cpp) to keep it in the
 * kernel's XDP dispatcher; real received frames have no such metadata and
 * pass untouched. */
#define RL_GEN_META_MAGIC 0x474e4c52u /* "RLNG" */
#define RL_GEN_META_BYTES 8
/* A size mix's template (pktgen --size a,b,c): this magic, then the
 * stream id (a 32-bit word). The template is the largest size; each frame is
 * cut to its size class, so its payload cannot be where the stream id is
 * read from (a shorter class wrote over it in a recycled page). */
#define RL_GEN_META_MIX_MAGIC 0x4d4e4c52u /* "RLNM" */

/* Per run, fixed before load (.rodata: the verifier sees constants). Every
 * stream of a run has the same frame layout and payload length. */
#define RL_MAX_L2_BYTES 24 /* 14 + two 4-byte tags, rounded up to a word */

struct rl_tx_config {
  rl_u32 payload_off;  /* Ethernet + IP + UDP header bytes */
  rl_u32 udp_off;      /* where the UDP header starts */
  rl_u32 payload_len;  /* data packets' UDP payload */
  rl_u32 full_words;   /* wire::PayloadPlan::full_words */
  rl_u32 tail_bytes;   /* wire::PayloadPlan::tail_bytes */
  rl_u32 max_streams;  /* entries of tx_streams */
  rl_u32 short_form;   /* data packets use the short form (payload_len < RL_HEADER_BYTES) */
  rl_u32 l2_len;       /* VLAN-tagged frames: Ethernet header and tags, rewritten per frame; 0 untagged */
  rl_u64 sum_odd;      /* wire::PayloadPlan::sum_odd */
  rl_u64 sum_i_odd;    /* wire::PayloadPlan::sum_i_odd */
  /* Those bytes (every flow has the same MACs and tags). A frame's page is
   * recycled; a veth peer that pops a tag moves the MACs inside it. */
  rl_u8 l2[RL_MAX_L2_BYTES];
};

/* One entry per stream in tx_streams (an mmapable array). Single writer:
 * a stream belongs to one pktgen worker, whose BPF_PROG_RUN calls run one at
 * a time, so plain increments are exact. Userspace writes the constants
 * before the first run and reads next_seq after each call (mmap, no
 * syscall). One cache line per stream: workers never share a line. */
struct rl_tx_stream {
  rl_u64 next_seq;    /* data packets generated so far = the next sequence */
  rl_u64 csum_base;   /* payload checksum share of the constant words: w0*1 + w3*7 + step*sum_i_odd (long form) */
  rl_u64 ones_base;   /* one's-complement sum of pseudo-header, UDP header and the constant payload halves
                         (short form: no payload halves, the program sums all four words) */
  rl_u64 end_frames;  /* end markers sent (the template already complete: sent as is) */
  rl_u64 bad_frames;  /* frames that did not fit the template (never expected): dropped */
  rl_u64 stamp_ns;    /* the send stamp the next frames share (one clock read per RL_STAMP_EVERY frames) */
  rl_u32 stamp_left;  /* frames that may still use stamp_ns; userspace sets 0 before each call */
  rl_u32 mix_at;      /* a size mix: the worker's place in the cycle; userspace sets it before a call, reads it after */
  rl_u64 pad;
};

/* A size mix (pktgen --size a,b,c --weights, --imix): engine/size_mix.hpp's
 * cycle and one payload plan per size class, as the other backends follow
 * them: the k-th packet of a worker gets class cycle[k % len]. */
#define RL_MIX_MAX_CLASSES 16   /* engine::kMaxMixSizes */
#define RL_MIX_MAX_CYCLE 4096   /* engine::kMaxMixCycle, a power of two */
struct rl_tx_mix {
  rl_u8 cycle[RL_MIX_MAX_CYCLE];
  rl_u32 len;          /* entries of cycle in use */
  rl_u16 ip_len_at;    /* where the IP length field is in the frame (IPv4 total length, IPv6 payload length) */
  rl_u16 ip_csum_at;   /* the IPv4 header checksum; 0 for IPv6 */
};
struct rl_tx_mix_class {  /* a size class: wire::PayloadPlan of its payload */
  rl_u32 payload_len;
  rl_u32 full_words;
  rl_u32 tail_bytes;
  rl_u32 short_form;
  rl_u64 sum_odd;
};
struct rl_tx_mix_stream {  /* tx_mix_streams[stream * RL_MIX_MAX_CLASSES + class]: rl_tx_stream's bases for that size */
  rl_u64 csum_base;
  rl_u64 ones_base;
  rl_u64 w0;          /* long form: payload word 0 (magic, version, kind, stream), as stored */
  rl_u32 w3;          /* long form: payload bytes 24..27 (sender id, length), as stored */
  rl_u16 ip_len_be;   /* the IP length field and (IPv4) the header checksum, as stored */
  rl_u16 ip_csum_be;
  rl_u16 udp_len_be;
  rl_u16 pad[3];
};

/* The generator reads the clock once per this many frames of a call; the
 * frames between share the stamp (as a batch does on the other backends). */
#define RL_STAMP_EVERY 32

/* The counter times (latency, jitter) the packets whose sequence is a
 * multiple of this, with a precise clock read; every packet is still counted
 * and checked, and stamps the stream's last activity from the coarse clock
 * (CLOCK_MONOTONIC_COARSE: one tick behind at most). A power of two. */
#define RL_TIME_EVERY 16

/* Transmit results the xdp tracepoints report for one worker thread
 * (tx_xmit, keyed by thread id): what the egress driver took and refused. */
struct rl_tx_xmit {
  rl_u64 sent;      /* frames ndo_xdp_xmit accepted */
  rl_u64 drops;     /* frames it refused (ring full, peer not ready) */
  rl_u64 redirect_errors;  /* frames that never reached the driver (xdp_redirect_err) */
  rl_u32 last_err;  /* errno of the last refusal (positive) */
  rl_u32 pad;
};

/* ==== RX: xdp_rx.bpf.c, attached to the receiving interface ==== */

struct rl_rx_config {
  rl_u16 port_be;       /* our UDP destination port, network order: the first of */
  rl_u16 port_count;    /* these (rx --port A-B) */
  rl_u32 max_streams;   /* entries of rx_streams: senders x streams */
  rl_u32 pass_counted;  /* rx --layers: pass our frames on after counting (else XDP_DROP) */
  rl_u32 max_payload;   /* rx --max-size: a longer UDP payload of ours is malformed, as on every receiver */
  rl_u32 reflect_every; /* rx --reflect: every Nth data packet (per CPU) goes back by XDP_TX; 0 = none */
  rl_u32 ifindex;       /* the interface the program sits on: whose XDP_TX failures are ours */
};

/* Per CPU (rx_totals, PERCPU_ARRAY of one): summed by userspace. */
struct rl_rx_totals {
  rl_u64 frames;          /* every frame the program saw */
  rl_u64 data;            /* our data packets, checksum ok (duplicates included) */
  rl_u64 payload_bytes;
  rl_u64 end_markers;
  rl_u64 foreign;         /* not ours: not UDP to our port, or not our magic (passed on) */
  rl_u64 malformed;       /* our magic, bad header or length, or longer than RL_MAX_PAYLOAD */
  rl_u64 corrupt;         /* payload checksum mismatch */
  rl_u64 unknown_stream;  /* a new stream while rx_streams is full */
  rl_u64 bad_udp_checksum;       /* short form: UDP checksum wrong (dropped, as the kernel would) */
  rl_u64 udp_checksum_unfilled;  /* short form: checksum left for offload by a sender on this host */
  rl_u64 fragments;       /* IP fragments (passed on: the stack reassembles them) */
  rl_u64 reflect_tx;      /* rx --reflect: data packets turned around and returned as XDP_TX */
  rl_u64 reflect_failed;  /* of those, what the driver failed to send (its xdp tracepoints) */
};

struct rl_end_body {
  rl_u64 total_sent;  /* the header's sequence */
  rl_u64 delay_ns;
  rl_u64 count;
  rl_u32 burst;
  rl_u16 stream_count;
  rl_u16 data_size;
  rl_u64 clock_id;    /* the body's first word unless it equals the total (wire::EndMarkerBody) */
};

#define RL_STREAM_SEEN 1u
#define RL_STREAM_ENDED 2u      /* a story is believed (engine::RxStreamState::ended) */
#define RL_STREAM_HAVE_PREV 4u
#define RL_STREAM_PENDING 8u     /* a far jump waits for confirmation (stats::SequenceTracker) */
#define RL_STREAM_END_SECOND 16u /* the believed story is end_candidate[1] */

/* rx_streams is a hash keyed as engine::StreamKey: who sent the stream
 * (source address and port), the run's sender id, the stream id. Two
 * pktgens into one receiver are two senders, and a stranger's datagram
 * never lands in a stream it did not start. */
struct rl_stream_key {
  rl_u8 ip[16];    /* IPv6, or IPv4 as ::ffff:a.b.c.d (net::SenderAddress) */
  rl_u16 port_be;  /* the sender's UDP source port, network order */
  rl_u16 sender;   /* the header's sender id */
  rl_u16 stream;   /* the header's stream id */
  rl_u16 pad;      /* zero: hashed with the rest */
};

/* One entry per stream in rx_streams. Everything below `lock` is written
 * only while holding it: the CPUs that receive a stream take turns, so the
 * window and the counts are exact however RSS spreads the stream (and,
 * with one stream per RX queue, the lock is never contended). The fields
 * mirror stats::SequenceCounts and the per-stream part of engine::RxStreamState;
 * the latency histogram (stats::LatencyHistogram buckets) is the last field,
 * so that a packet costs one map lookup. */
struct rl_rx_stream {
#ifdef __cplusplus
  rl_u32 lock_space; /* struct bpf_spin_lock (one u32) */
#else
  struct bpf_spin_lock lock;
#endif
  rl_u32 flags;       /* RL_STREAM_* */
  rl_u64 received;    /* stats::SequenceCounts ... */
  rl_u64 unique;
  rl_u64 duplicates;
  rl_u64 reordered;
  rl_u64 stale;
  rl_u64 highest_next;
  rl_u64 implausible; /* lone far jumps, never confirmed */
  rl_u64 pending;     /* the far jump held (RL_STREAM_PENDING) */
  rl_u64 payload_bytes;
  rl_u64 corrupt;
  rl_u64 clock_behind;
  rl_u64 first_ns;
  rl_u64 last_ns;
  rl_u64 lat_samples;
  rl_u64 lat_sum;
  rl_u64 lat_min;
  rl_u64 lat_max;
  rl_u64 prev_tx_ns;  /* RFC 3550 jitter state */
  rl_u64 prev_rx_ns;
  rl_u64 jitter_x16;  /* jitter in ns, times 16 (fixed point: J += (|D| - J) / 16) */
  rl_u32 payload_len;
  rl_u32 pad;
  /* End markers are evidence (engine::EndEvidence): two candidate bodies
   * with their votes (xdp_rx_track.h). */
  struct rl_end_body end_candidate[2];
  rl_u32 end_votes[2];
  rl_u64 end_copies;  /* every marker that passed the checksum */
  rl_u64 window[RL_WINDOW_WORDS];  /* seen-bits, as stats::SequenceTracker */
  rl_u64 lat_buckets[RL_LAT_BUCKETS];
};

#endif
