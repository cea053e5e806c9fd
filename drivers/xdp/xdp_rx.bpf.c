// rx --backend xdp: the kernel runs the per-packet loop on the receiving
// interface. Per frame: parse Ethernet (up to two VLAN tags), IPv4/IPv6 and
// UDP; for our port, decode our header as wire::decode does and verify the
// payload checksum over every byte; then find the stream by who sent it
// (source address and port, sender id, stream id: engine::StreamKey) and,
// under its lock, the sequence window (stats::SequenceTracker, far-jump rule
// included), latency histogram (stats::LatencyHistogram buckets) and RFC 3550
// jitter.
//
// Everything that is not ours (other EtherTypes, other ports, other UDP on
// our port) is XDP_PASS: the host keeps working. Ours is XDP_DROP once
// counted (the driver-layer ceiling), or XDP_PASS with rx --layers so that
// the socket path counts it again. With rx --reflect, a counted data packet
// (every Nth per CPU) is turned around in place and returned as XDP_TX; the
// driver's failures to send it are counted from its xdp tracepoints.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "net/udp_parse.bpf.h"
#include "xdp_shared.h"
#include "xdp_rx_track.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the XDP backend loads payload words natively: little-endian machines only"
#endif

const volatile struct rl_rx_config cfg = {};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct rl_rx_totals);
} rx_totals SEC(".maps");

// Preallocated (the default): an insert under load takes no allocation, and
// a full table refuses the new stream (counted unknown_stream).
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1);  // the loader sets --max-streams (senders x streams)
  __type(key, struct rl_stream_key);
  __type(value, struct rl_rx_stream);
} rx_streams SEC(".maps");

// A zeroed stream, the value a new stream starts from (too large for the
// stack). Plain bytes: a value that holds a lock may not be read as a whole.
struct rl_rx_stream_bytes {
  __u8 b[sizeof(struct rl_rx_stream)];
};
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct rl_rx_stream_bytes);
} rx_blank SEC(".maps");

// barrier_var (bpf_helpers.h) hides a pointer from clang's loop optimisations:
// without it clang turns `p + 8 > end` into arithmetic on pkt_end, which the
// verifier refuses.

static __always_inline __u64 be64_at(const __u8 *p) { return __builtin_bswap64(*(const __u64 *)p); }
static __always_inline __u32 be32_at(const __u8 *p) { return __builtin_bswap32(*(const __u32 *)p); }
static __always_inline __u16 be16_at(const __u8 *p) { return (__u16)(p[0] << 8 | p[1]); }

// The last `tail` (1..7) bytes at tp as one little-endian word, zero-padded
// (how both payload sums take a length that is not a multiple of 8).
static __always_inline int partial_word(const __u8 *tp, const void *end, __u32 tail, __u64 *word) {
  __u64 w = 0;
  for (__u32 k = 0; k < 7; k++) {
    if (k >= tail) break;
    barrier_var(tp);
    if ((void *)(tp + k + 1) > end) return -1;
    w |= (__u64)tp[k] << (8 * k);
  }
  *word = w;
  return 0;
}

// wire::payload_checksum's share of words 4.. and of the zero-padded
// partial last word, for a payload of plen bytes at pl. Its own BPF function
// (not inlined) so that its loops have the registers to themselves:
// inlined, the caller's live values pushed the accumulators onto the stack.
//
// Sum over i in [4, full) of w_i * (2i + 1) without a multiplier per word:
// with S = sum w_i and R = sum of the running sums (w_i counted full - i
// times) it is (2 full + 1) S - 2 R. Four words per bounds check.
static __attribute__((noinline)) int pattern_share(const __u8 *pl, const void *end, __u32 plen, __u64 *acc) {
  const __u64 full = plen >> 3;
  const __u64 quads = full > RL_FIRST_PATTERN_WORD ? (full - RL_FIRST_PATTERN_WORD) >> 2 : 0;
  const __u8 *p = pl + RL_HEADER_BYTES;
  __u64 sum = 0, runs = 0;
  for (__u64 n = 0; n < RL_MAX_WORDS / 4; n++) {
    if (n >= quads) break;
    barrier_var(p);
    if ((void *)(p + 32) > end) return -1;
    const __u64 w0 = *(const __u64 *)p, w1 = *(const __u64 *)(p + 8), w2 = *(const __u64 *)(p + 16),
                w3 = *(const __u64 *)(p + 24);
    runs += 4 * sum + 4 * w0 + 3 * w1 + 2 * w2 + w3;
    sum += w0 + w1 + w2 + w3;
    p += 32;
  }
  const __u64 rest = full > RL_FIRST_PATTERN_WORD ? (full - RL_FIRST_PATTERN_WORD) & 3 : 0;
  for (__u64 n = 0; n < 3; n++) {  // the last 0..3 full words
    if (n >= rest) break;
    barrier_var(p);
    if ((void *)(p + 8) > end) return -1;
    const __u64 w = *(const __u64 *)p;
    runs += sum + w;
    sum += w;
    p += 8;
  }
  __u64 share = (2 * full + 1) * sum - 2 * runs;
  // The partial last word, zero-padded; from plen, not from p, so that every
  // loop exit reaches it in the same verifier state (verified once).
  const __u32 tail = plen & 7;
  if (tail) {
    __u64 w;
    if (partial_word(pl + (plen & ~7u), end, tail, &w)) return -1;
    share += w * (2 * full + 1);
  }
  *acc += share;
  return 0;
}

// The stream's entry, created on first sight; NULL when the table is full.
// Two CPUs may create it at once: the second insert fails (it exists) and
// both find the one entry.
static __always_inline struct rl_rx_stream *stream_of(const struct rl_stream_key *key) {
  struct rl_rx_stream *s = bpf_map_lookup_elem(&rx_streams, key);
  if (s) return s;
  __u32 zero = 0;
  struct rl_rx_stream_bytes *blank = bpf_map_lookup_elem(&rx_blank, &zero);
  if (!blank) return 0;
  bpf_map_update_elem(&rx_streams, key, blank, BPF_NOEXIST);
  return bpf_map_lookup_elem(&rx_streams, key);
}

// Who sent it, as net::SenderAddress and engine::StreamKey. l3 and udp lie
// inside the frame (rl_find_udp); said again here for the verifier.
static __always_inline int stream_key(struct rl_stream_key *k, const __u8 *l3, const __u8 *udp, const void *end,
                                      __u32 ipv6, __u16 sender, __u16 stream) {
  __builtin_memset(k, 0, sizeof *k);
  if (ipv6) {
    if ((void *)(l3 + 40) > end) return -1;
    __builtin_memcpy(k->ip, l3 + 8, 16);
  } else {
    if ((void *)(l3 + 20) > end) return -1;
    k->ip[10] = k->ip[11] = 0xff;
    __builtin_memcpy(k->ip + 12, l3 + 12, 4);
  }
  if ((void *)(udp + 2) > end) return -1;
  k->port_be = (__u16)(udp[0] | udp[1] << 8);  // the two bytes as they are: network order
  k->sender = sender;
  k->stream = stream;
  return 0;
}

// A payload of ours that failed its check: counted on the stream its header
// names (the header itself may be what was hit), when there is room for it.
static __always_inline void count_corrupt(struct rl_rx_totals *t, const struct rl_stream_key *key) {
  t->corrupt++;
  struct rl_rx_stream *s = stream_of(key);
  if (!s) return;
  bpf_spin_lock(&s->lock);
  s->corrupt++;
  bpf_spin_unlock(&s->lock);
}

// A data packet that passed its checks: sequence window, and for a timed one
// (every RL_TIME_EVERY-th sequence: a precise clock read costs 23-33 ns on a
// kvm-clock host, more than the rest of the count) latency and jitter. A
// short-form stamp (its low 48 bits) is extended with this CPU's clock. A
// global BPF function: the verifier checks it once, not once per path that
// reaches it (both header forms do), and the caller's state after it is one
// state.
__attribute__((noinline)) int count_data(const struct rl_stream_key *key, __u32 plen, __u64 seq, __u64 tx_ns,
                                         __u32 short_stamp) {
  __u32 zero = 0;
  struct rl_rx_totals *t = bpf_map_lookup_elem(&rx_totals, &zero);
  if (!t || !key) return 0;
  struct rl_rx_stream *s = stream_of(key);
  if (!s) {
    t->unknown_stream++;
    return 0;
  }
  const int timed = (seq & (RL_TIME_EVERY - 1)) == 0;
  // The stream's first packet is read precisely too: it starts the stream's time span. (Read
  // outside the lock: two CPUs at once both read the clock, and the lock keeps the first.)
  const __u64 now = timed || !s->first_ns ? bpf_ktime_get_ns() : bpf_ktime_get_coarse_ns();  // CLOCK_MONOTONIC
  if (short_stamp) tx_ns = rl_extend_stamp48(tx_ns, now);
  t->data++;
  t->payload_bytes += plen;
  const int reflect = cfg.reflect_every && t->data % cfg.reflect_every == 0;

  bpf_spin_lock(&s->lock);
  if (!(s->flags & RL_STREAM_SEEN) || !s->first_ns) s->first_ns = now;
  s->flags |= RL_STREAM_SEEN;
  sequence_record(s, seq);
  withdraw_end_stories(s, seq);
  s->payload_bytes += plen;
  s->payload_len = plen;
  if (now > s->last_ns) s->last_ns = now;  // a coarse read may lag a precise one by a tick
  if (!timed) {
    bpf_spin_unlock(&s->lock);
    return reflect;
  }
  if (now >= tx_ns) {
    const __u64 ns = now - tx_ns;
    s->lat_buckets[rl_latency_index(ns) & (RL_LAT_BUCKETS - 1)]++;
    if (!s->lat_samples || ns < s->lat_min) s->lat_min = ns;
    if (ns > s->lat_max) s->lat_max = ns;
    s->lat_samples++;
    s->lat_sum += ns;
  } else {
    s->clock_behind++;
  }
  if (s->flags & RL_STREAM_HAVE_PREV) {
    // Wrapping arithmetic, then |D| (stats::JitterEstimator), in ns x 16.
    const __u64 d = (now - s->prev_rx_ns) - (tx_ns - s->prev_tx_ns);
    const __u64 abs_d = d >> 63 ? 0 - d : d;
    s->jitter_x16 = s->jitter_x16 + abs_d - (s->jitter_x16 >> 4);
  }
  s->prev_tx_ns = tx_ns;
  s->prev_rx_ns = now;
  s->flags |= RL_STREAM_HAVE_PREV;
  bpf_spin_unlock(&s->lock);
  return reflect;
}

// rx --reflect: the datagram's UDP checksum over every byte, written afresh
// (a sender on this host may have left it for offload, and the reply must
// pass the sender's kernel). Native-order loads: a ones'-complement sum does
// not depend on byte order (RFC 1071), 32-bit halves fold into 16 bits.
static __attribute__((noinline)) int write_udp_checksum(const __u8 *l3, __u8 *u, const void *end, __u32 udp_len,
                                                        __u32 ipv6) {
  if ((void *)(u + 8) > end || udp_len > 8 + RL_MAX_PAYLOAD) return -1;  // the bound keeps offsets verifiable
  u[6] = u[7] = 0;
  __u64 acc = bpf_htons(IPPROTO_UDP) + bpf_htons((__u16)udp_len);
  if (ipv6) {
    if ((void *)(l3 + 40) > end) return -1;
    for (__u32 k = 8; k < 40; k += 4) acc += *(const __u32 *)(l3 + k);
  } else {
    if ((void *)(l3 + 20) > end) return -1;
    acc += *(const __u32 *)(l3 + 12) + (__u64) * (const __u32 *)(l3 + 16);
  }
  const __u32 full = udp_len >> 3;
  const __u8 *p = u;
  for (__u32 n = 0; n < (RL_MAX_PAYLOAD + 8) / 32; n++) {  // four words per bounds check
    if (n >= full >> 2) break;
    barrier_var(p);
    if ((void *)(p + 32) > end) return -1;
    const __u64 w0 = *(const __u64 *)p, w1 = *(const __u64 *)(p + 8), w2 = *(const __u64 *)(p + 16),
                w3 = *(const __u64 *)(p + 24);
    acc += rl_halves(w0) + rl_halves(w1) + rl_halves(w2) + rl_halves(w3);
    p += 32;
  }
  for (__u32 n = 0; n < 3; n++) {  // the last 0..3 full words
    if (n >= (full & 3)) break;
    barrier_var(p);
    if ((void *)(p + 8) > end) return -1;
    acc += rl_halves(*(const __u64 *)p);
    p += 8;
  }
  const __u32 tail = udp_len & 7;  // zero-padded, from udp_len so every loop exit meets here alike
  if (tail) {
    __u64 w;  // (udp_len & ~7: the mask says its bound again for the verifier)
    if (partial_word(u + (udp_len & 0x3ff8), end, tail, &w)) return -1;
    acc += rl_halves(w);
  }
  __u16 sum = ~rl_ones_fold(acc);
  if (!sum) sum = 0xffff;  // zero means "no checksum" (IPv4) and is refused (IPv6)
  if ((void *)(u + 8) > end) return -1;
  *(__u16 *)(u + 6) = sum;
  return 0;
}

static __always_inline void swap_bytes(__u8 *a, __u8 *b, __u32 n) {
  for (__u32 k = 0; k < n; k++) {
    const __u8 x = a[k];
    a[k] = b[k];
    b[k] = x;
  }
}

// rx --reflect: the frame back to where it came from, as net::reflect_udp_frame
// does for the other receivers: Ethernet, IP and UDP ends swapped (VLAN tags
// and the IPv4 header checksum unchanged: swapping does not move a sum), the
// UDP checksum written afresh. XDP_TX, or `ours` when the frame is not whole.
__attribute__((noinline)) int reflect(struct xdp_md *ctx, __u32 l3_off, __u32 udp_off, __u32 ipv6, int ours) {
  __u8 *data = (__u8 *)(long)ctx->data;
  void *end = (void *)(long)ctx->data_end;
  __u32 zero = 0;
  struct rl_rx_totals *t = bpf_map_lookup_elem(&rx_totals, &zero);
  if (!t) return ours;
  __u8 *l3 = data + (l3_off & 0x3f);
  __u8 *udp = data + (udp_off & 0xff);
  if ((void *)(data + 12) > end) return ours;
  swap_bytes(data, data + 6, 6);
  if (ipv6) {
    if ((void *)(l3 + 40) > end) return ours;
    swap_bytes(l3 + 8, l3 + 24, 16);
  } else {
    if ((void *)(l3 + 20) > end) return ours;
    swap_bytes(l3 + 12, l3 + 16, 4);
  }
  if ((void *)(udp + 8) > end) return ours;
  swap_bytes(udp, udp + 2, 2);
  if (write_udp_checksum(l3, udp, end, be16_at(udp + 4), ipv6)) return ours;
  t->reflect_tx++;
  return XDP_TX;
}

// The driver's failures to send our XDP_TX frames, on this interface only:
// one frame (xdp_exception: most drivers, and generic XDP) or a bulk (veth's
// xdp_bulk_tx flush). Same CPU, same softirq as the program: the per-CPU
// totals need no atomics.
struct net_device {
  int ifindex;
} __attribute__((preserve_access_index));
struct bpf_prog;

static __always_inline void count_reflect_failed(const struct net_device *dev, __u64 frames) {
  __u32 zero = 0;
  struct rl_rx_totals *t = bpf_map_lookup_elem(&rx_totals, &zero);
  if (t && dev->ifindex == (int)cfg.ifindex) t->reflect_failed += frames;
}

SEC("tp_btf/xdp_exception")
int BPF_PROG(rateline_reflect_exception, const struct net_device *dev, const struct bpf_prog *prog, __u32 act) {
  if (act == XDP_TX) count_reflect_failed(dev, 1);
  return 0;
}

SEC("tp_btf/xdp_bulk_tx")
int BPF_PROG(rateline_reflect_bulk, const struct net_device *dev, int sent, int drops, int err) {
  if (drops > 0) count_reflect_failed(dev, (__u64)drops);
  return 0;
}

#define RL_CSUM_OK 0
#define RL_CSUM_UNFILLED 1
#define RL_CSUM_BAD 2

// The UDP checksum of a short-form datagram (udp_len <= 8 + 31 bytes), as
// net::check_udp_checksums: ok, bad, or "unfilled" when the field holds the
// folded pseudo-header sum (CHECKSUM_PARTIAL: a socket sender behind a veth
// on this host left it for a device that never came). Sums big-endian
// 16-bit words; IPv4's zero field means "no checksum".
static __attribute__((noinline)) int short_udp_checksum(const __u8 *l3, const __u8 *u, const void *end, __u32 udp_len,
                                                        __u32 ipv6) {
  if ((void *)(u + 8) > end) return RL_CSUM_BAD;
  const __u16 field = be16_at(u + 6);
  __u64 pseudo = IPPROTO_UDP + udp_len;
  if (ipv6) {
    if ((void *)(l3 + 40) > end) return RL_CSUM_BAD;
    for (__u32 k = 8; k < 40; k += 2) pseudo += be16_at(l3 + k);
  } else {
    if (!field) return RL_CSUM_OK;
    if ((void *)(l3 + 20) > end) return RL_CSUM_BAD;
    for (__u32 k = 12; k < 20; k += 2) pseudo += be16_at(l3 + k);
  }
  __u64 sum = pseudo;
  for (__u32 k = 0; k < 8 + RL_HEADER_BYTES - 1; k++) {
    if (k >= udp_len) break;
    barrier_var(u);
    if ((void *)(u + k + 1) > end) return RL_CSUM_BAD;
    sum += k & 1 ? (__u64)u[k] : (__u64)u[k] << 8;
  }
  if (rl_ones_fold(sum) == 0xffff) return RL_CSUM_OK;
  return field == rl_ones_fold(pseudo) ? RL_CSUM_UNFILLED : RL_CSUM_BAD;
}

// A short-form datagram (its first two bytes say so), as wire::decode_short
// plus the UDP checksum: the only integrity check the short form has. A
// global BPF function, verified once: its loops run to the payload's length,
// and inlined, each exit of each loop would be a path of the caller's.
__attribute__((noinline)) int count_short(struct xdp_md *ctx, __u32 l3_off, __u32 udp_off, __u32 ipv6, int ours) {
  void *data = (void *)(long)ctx->data;
  void *end = (void *)(long)ctx->data_end;
  __u32 zero = 0;
  struct rl_rx_totals *t = bpf_map_lookup_elem(&rx_totals, &zero);
  if (!t) return XDP_PASS;
  // rl_find_udp's offsets (Ethernet, two tags, IP) are below these; the
  // masks give the verifier the bounds on the registers it checks.
  const __u8 *l3 = (const __u8 *)data + (l3_off & 0x3f);
  const __u8 *udp = (const __u8 *)data + (udp_off & 0xff);
  if ((void *)(udp + 8) > end) goto malformed;
  const __u32 udp_len = be16_at(udp + 4);
  const __u32 plen = udp_len - 8;
  const __u8 *pl = udp + 8;
  if (udp_len < 8 || plen < RL_SHORT_HEADER_BYTES || plen >= RL_HEADER_BYTES ||
      (void *)(pl + RL_SHORT_HEADER_BYTES) > end)
    goto malformed;
  const int check = short_udp_checksum(l3, udp, end, udp_len, ipv6);
  if (check == RL_CSUM_BAD) {
    t->bad_udp_checksum++;  // dropped before decoding, as the kernel drops it before a socket
    return ours;
  }
  if (check == RL_CSUM_UNFILLED) t->udp_checksum_unfilled++;
  if ((void *)(pl + RL_SHORT_HEADER_BYTES) > end) goto malformed;  // (said again for the verifier)
  const __u32 stream = be16_at(pl + RL_OFF_SHORT_STREAM);
  struct rl_stream_key key;
  if (stream_key(&key, l3, udp, end, ipv6, be16_at(pl + RL_OFF_SHORT_SENDER), (__u16)stream)) goto malformed;
  const __u64 seq = (__u64)be16_at(pl + RL_OFF_SHORT_SEQ) << 32 | be32_at(pl + RL_OFF_SHORT_SEQ + 2);
  const __u64 tx48 = (__u64)be16_at(pl + RL_OFF_SHORT_TX_NS) << 32 | be32_at(pl + RL_OFF_SHORT_TX_NS + 2);
  const __u64 seed = rl_pattern_seed((__u16)stream, seq);
  for (__u32 j = RL_SHORT_HEADER_BYTES; j < RL_HEADER_BYTES - 1; j++) {
    if (j >= plen) break;
    barrier_var(pl);
    if ((void *)(pl + j + 1) > end) goto malformed;
    if (pl[j] != rl_short_pad_byte(seed, j)) {
      count_corrupt(t, &key);
      return ours;
    }
  }
  if (count_data(&key, plen, seq, tx48, 1)) return reflect(ctx, l3_off, udp_off, ipv6, ours);
  return ours;
malformed:
  t->malformed++;
  return ours;
}

SEC("xdp")
int rateline_count(struct xdp_md *ctx) {
  void *data = (void *)(long)ctx->data;
  void *end = (void *)(long)ctx->data_end;
  const __u32 frame_len = ctx->data_end - ctx->data;
  const int ours = cfg.pass_counted ? XDP_PASS : XDP_DROP;
  __u32 zero = 0;
  struct rl_rx_totals *t = bpf_map_lookup_elem(&rx_totals, &zero);
  if (!t) return XDP_PASS;
  t->frames++;

  // ---- Ethernet / VLAN / IP / UDP: net/udp_parse.bpf.h, as the steering program ----
  struct rl_udp_at at;
  const int found = rl_find_udp(data, end, &at);
  if (found == RL_UDP_FRAGMENT) {
    t->fragments++;  // to any port: a later fragment names none (the stack reassembles it)
    return XDP_PASS;
  }
  if (found) goto foreign;
  __u8 *udp = (__u8 *)at.udp;
  if ((void *)(udp + 8) > end) goto foreign;  // (checked in rl_find_udp; said again for the verifier)
  if ((__u16)(bpf_ntohs(at.udp->dest) - bpf_ntohs(cfg.port_be)) >= cfg.port_count) goto foreign;
  const __u32 udp_off = at.udp_off;
  const __u32 l4_limit = at.l4_limit;
  const __u32 udp_len = bpf_ntohs(at.udp->len);
  if (udp_len < 8 || l4_limit > frame_len || udp_off + udp_len > l4_limit) goto foreign;
  const __u32 plen = udp_len - 8;
  __u8 *pl = udp + 8;

  // ---- the short form (payload below 32 B) ----
  if (plen >= 2 && (void *)(pl + 2) <= end && pl[0] == RL_SHORT_TAG && pl[1] == RL_SHORT_VERSION_KIND)
    return count_short(ctx, (__u32)(at.l3 - (__u8 *)data), udp_off, at.ipv6, ours);

  // ---- our header, as wire::decode ----
  if (plen < 4 || (void *)(pl + 4) > end || be32_at(pl) != RL_MAGIC) goto foreign;
  if (plen < RL_HEADER_BYTES || plen > RL_MAX_PAYLOAD || plen > cfg.max_payload || (void *)(pl + RL_HEADER_BYTES) > end)
    goto malformed;
  const __u8 kind = pl[RL_OFF_KIND];
  if (pl[RL_OFF_VERSION] != RL_VERSION || (kind != RL_KIND_DATA && kind != RL_KIND_END)) goto malformed;
  if (be16_at(pl + RL_OFF_LEN) != plen) goto malformed;
  if (kind == RL_KIND_END && plen < RL_END_MIN_BYTES) goto malformed;
  // ---- payload checksum over every byte (wire::payload_checksum) ----
  // The header fields are read after it: fewer values live across the call.
  __u64 acc = *(const __u64 *)pl + 3 * *(const __u64 *)(pl + 8) + 5 * *(const __u64 *)(pl + 16) +
              7 * (*(const __u64 *)(pl + 24) & 0xffffffffull);  // bytes 28..31 read as zero
  if (pattern_share(pl, end, plen, &acc)) goto malformed;
  if ((void *)(pl + RL_HEADER_BYTES) > end) goto malformed;  // (checked above; said again for the verifier)
  const __u32 stream = be16_at(pl + RL_OFF_STREAM);
  const __u64 seq = be64_at(pl + RL_OFF_SEQ);
  const __u64 tx_ns = be64_at(pl + RL_OFF_TX_NS);
  const __u32 stored_csum = be32_at(pl + RL_OFF_CSUM);
  struct rl_stream_key key;
  if (stream_key(&key, at.l3, udp, end, at.ipv6, be16_at(pl + RL_OFF_SENDER), (__u16)stream)) goto malformed;
  if (rl_fold32(acc) != stored_csum) {
    count_corrupt(t, &key);
    return ours;
  }

  if (kind == RL_KIND_END) {
    t->end_markers++;
    const __u8 *q = pl + RL_HEADER_BYTES;
    if ((void *)(q + RL_END_BODY_BYTES) > end) goto malformed;
    struct rl_end_body body;
    body.total_sent = seq;
    const __u64 first_word = be64_at(q);
    body.clock_id = first_word == seq ? 0 : first_word;
    body.delay_ns = be64_at(q + 8);
    body.count = be64_at(q + 16);
    body.burst = be32_at(q + 24);
    body.stream_count = be16_at(q + 28);
    body.data_size = be16_at(q + 30);
    struct rl_rx_stream *s = stream_of(&key);
    if (!s) {
      t->unknown_stream++;
      return ours;
    }
    bpf_spin_lock(&s->lock);
    weigh_end_marker(s, &body);
    s->flags |= RL_STREAM_SEEN;
    bpf_spin_unlock(&s->lock);
    return ours;
  }

  if (count_data(&key, plen, seq, tx_ns, 0)) return reflect(ctx, (__u32)(at.l3 - (__u8 *)data), udp_off, at.ipv6, ours);
  return ours;

malformed:
  t->malformed++;
  return ours;
foreign:
  t->foreign++;
  return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
