// pktgen --backend xdp: the kernel runs the per-packet loop.
//
// Userspace calls BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES on one
// prebuilt frame (a flow's template: Ethernet/IP/UDP headers and a complete
// payload for sequence 0) and a repeat count. The kernel copies the template
// into page-pool pages once and runs rateline_gen on a page each time; a
// recycled page still holds whatever the last run wrote, so every varying
// field is rewritten in full, never patched from the page. Per frame:
//   sequence   the stream's next_seq (tx_streams, single writer: see xdp_shared.h)
//   tx time    bpf_ktime_get_ns() = CLOCK_MONOTONIC, the clock rx and userspace stamp
//              with, read once per RL_STAMP_EVERY frames (frame_stamp)
//   pattern    seed + i * step with seed = pattern_seed(stream, seq), as every backend
//   checksums  our payload checksum in closed form (never re-read), and the
//              UDP checksum from one's-complement halves summed while writing
// then XDP_TX, which BPF_PROG_RUN turns into a redirect to the device the
// run names (the egress interface) through its ndo_xdp_xmit.
//
// Short-form frames (payload below 32 B, down to the 64 B IPv4 frame) get
// their whole payload rewritten per frame: header, pad and UDP checksum.
//
// End markers are complete frames built by userspace (kind = end): sent as is.
//
// Only frames that carry our metadata (RL_GEN_META_MAGIC, put in front of
// the template by userspace) are touched: the program is also attached in
// generic mode to the egress device, only to keep it in the XDP dispatcher,
// and there it sees real received frames, which it passes.
//
// rateline_devmap_xmit / rateline_redirect_err count per worker thread what
// the driver accepted and refused: XDP transmit has no backpressure, so a
// full device ring drops frames silently; these tracepoints make the
// sender's "failed" count exact instead.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "xdp_shared.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the XDP backend loads payload words natively: little-endian machines only"
#endif

// Set by the loader before load; .rodata, so the verifier sees constants.
const volatile struct rl_tx_config cfg = {};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_MMAPABLE);
  __uint(max_entries, 1);  // the loader sets one entry per stream
  __type(key, __u32);
  __type(value, struct rl_tx_stream);
} tx_streams SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 256);
  __type(key, __u32);  // thread id of a pktgen worker
  __type(value, struct rl_tx_xmit);
} tx_xmit SEC(".maps");

// A size mix: the cycle, the classes, and each (stream, class)'s bases.
// Written by userspace before the first call; read-only to the program.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct rl_tx_mix);
} tx_mix SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, RL_MIX_MAX_CLASSES);
  __type(key, __u32);
  __type(value, struct rl_tx_mix_class);
} tx_mix_classes SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);  // the loader sets streams x RL_MIX_MAX_CLASSES
  __type(key, __u32);
  __type(value, struct rl_tx_mix_stream);
} tx_mix_streams SEC(".maps");

// The frame's send stamp: one bpf_ktime_get_ns() per RL_STAMP_EVERY frames,
// shared by them (23-33 ns a read on this project's VM, against a few ns of
// the rest of a 64 B frame). The first frame of every call reads the clock:
// userspace zeroes stamp_left before each call.
static __always_inline __u64 frame_stamp(struct rl_tx_stream *st) {
  if (!st->stamp_left) {
    st->stamp_ns = bpf_ktime_get_ns();
    st->stamp_left = RL_STAMP_EVERY;
  }
  st->stamp_left--;
  return st->stamp_ns;
}

// Writes `words` pattern words w, w + step, ... at p and adds their
// one's-complement halves to *ones. Its own BPF function (not inlined) so
// that its loop has the registers to itself; four words per bounds check.
static __attribute__((noinline)) int write_pattern(__u8 *p, const void *end, __u64 w, __u64 words, __u64 *ones) {
  __u64 sum = 0;
  const __u64 quads = words >> 2;
  for (__u64 n = 0; n < RL_MAX_WORDS / 4; n++) {
    if (n >= quads) break;
    barrier_var(p);
    if ((void *)(p + 32) > end) return -1;
    const __u64 w1 = w + RL_PATTERN_STEP, w2 = w1 + RL_PATTERN_STEP, w3 = w2 + RL_PATTERN_STEP;
    *(__u64 *)p = w;
    *(__u64 *)(p + 8) = w1;
    *(__u64 *)(p + 16) = w2;
    *(__u64 *)(p + 24) = w3;
    sum += rl_halves(w) + rl_halves(w1) + rl_halves(w2) + rl_halves(w3);
    w = w3 + RL_PATTERN_STEP;
    p += 32;
  }
  const __u64 rest = words & 3;
  for (__u64 n = 0; n < 3; n++) {
    if (n >= rest) break;
    barrier_var(p);
    if ((void *)(p + 8) > end) return -1;
    *(__u64 *)p = w;
    sum += rl_halves(w);
    w += RL_PATTERN_STEP;
    p += 8;
  }
  *ones += sum;
  return 0;
}

// What a short-form frame is written from: who sends it, its length, and
// the one's-complement sum of its pseudo-header and UDP header.
struct short_frame {
  __u64 ones_base;
  __u32 len;
  __u16 sender;
  __u16 stream;
};

// One short-form data frame (payload below RL_HEADER_BYTES, a 64 B IPv4
// frame at the least): the whole payload is four words computed from
// registers, then the UDP checksum over them. Its own function, so that the
// long form's code paths keep their registers.
static __attribute__((noinline)) int gen_short(__u8 *pl, void *end, __u8 *udp, struct rl_tx_stream *st,
                                               const struct short_frame *f) {
  if ((void *)(pl + RL_SHORT_HEADER_BYTES) > end || (void *)(udp + 8) > end) return XDP_DROP;
  const __u64 seq = st->next_seq;
  st->next_seq = seq + 1;
  const __u32 len = f->len;
  const struct rl_short_words s = rl_short_payload(f->sender, f->stream, seq, frame_stamp(st), len);
  *(__u64 *)pl = s.w[0];
  *(__u64 *)(pl + 8) = s.w[1];
  for (__u32 k = 16; k < RL_HEADER_BYTES - 1; k++) {  // bytes 16..len-1
    if (k >= len) break;
    if ((void *)(pl + k + 1) > end) {
      st->bad_frames++;
      return XDP_DROP;
    }
    pl[k] = (__u8)((k < 24 ? s.w[2] : s.w[3]) >> (8 * (k & 7)));
  }
  const __u64 ones = f->ones_base + rl_halves(s.w[0]) + rl_halves(s.w[1]) + rl_halves(s.w[2]) + rl_halves(s.w[3]);
  __u16 udp_csum = (__u16)~rl_ones_fold(ones);
  if (!udp_csum) udp_csum = 0xffff;  // 0 means "no checksum"
  *(__u16 *)(udp + 6) = udp_csum;
  return XDP_TX;
}

// One long-form data frame's varying parts for the stream's next sequence:
// sequence, stamp, pattern, our checksum in closed form and the UDP checksum,
// for a payload laid out as (full_words, tail_bytes, sum_odd) with the
// stream's constant shares. Inlined: a one-size run passes .rodata constants.
static __always_inline int gen_long(__u8 *pl, void *end, __u8 *udp, struct rl_tx_stream *st, __u32 stream,
                                    __u64 full_words, __u32 tail_bytes, __u64 sum_odd, __u64 csum_base,
                                    __u64 ones_base) {
  if ((void *)(pl + RL_HEADER_BYTES) > end) goto bad;
  const __u64 seq = st->next_seq;
  st->next_seq = seq + 1;
  const __u64 seq_w = __builtin_bswap64(seq);  // the big-endian field as a little-endian word
  const __u64 ts_w = __builtin_bswap64(frame_stamp(st));
  *(__u64 *)(pl + RL_OFF_SEQ) = seq_w;
  *(__u64 *)(pl + RL_OFF_TX_NS) = ts_w;
  __u64 ones = ones_base + rl_halves(seq_w) + rl_halves(ts_w);

  const __u64 seed = rl_pattern_seed((__u16)stream, seq);
  const __u64 words = full_words > RL_FIRST_PATTERN_WORD ? full_words - RL_FIRST_PATTERN_WORD : 0;
  if (write_pattern(pl + RL_HEADER_BYTES, end, seed + RL_FIRST_PATTERN_WORD * RL_PATTERN_STEP, words, &ones)) goto bad;
  const __u64 w = seed + full_words * RL_PATTERN_STEP;  // the word after the last full one
  __u8 *p = pl + 8 * (full_words & 0x7ff);  // (<= RL_MAX_WORDS: the mask bounds it for the verifier)
  // wire::write_pattern's share: seed * A + step * B, plus the partial last word.
  __u64 acc = csum_base + seq_w * 3 + ts_w * 5 + seed * sum_odd;
  if (tail_bytes) {
    const __u64 masked = w & (~0ull >> (64 - 8 * (tail_bytes & 7)));
    for (__u32 k = 0; k < 7; k++) {
      if (k >= tail_bytes) break;
      if ((void *)(p + k + 1) > end) goto bad;
      p[k] = (__u8)(w >> (8 * k));
    }
    ones += rl_halves(masked);  // zero-padded, as the UDP checksum pads an odd byte
    acc += masked * (2 * full_words + 1);
  }
  const __u32 csum_be = __builtin_bswap32(rl_fold32(acc));
  *(__u32 *)(pl + RL_OFF_CSUM) = csum_be;
  ones += csum_be;

  __u16 udp_csum = (__u16)~rl_ones_fold(ones);
  if (!udp_csum) udp_csum = 0xffff;  // 0 means "no checksum"
  if ((void *)(udp + 8) > end) goto bad;
  *(__u16 *)(udp + 6) = udp_csum;
  return XDP_TX;

bad:
  st->bad_frames++;
  return XDP_DROP;
}

// A size mix's data frame: the stream's place in the worker's cycle names
// its size class; the frame (the largest class's template) is cut to that
// class's length, and every field a class sets is written in full (the
// lengths and IPv4 checksum, the payload's constant words: a recycled page
// holds whatever class used it last). Then as one size.
__attribute__((noinline)) int gen_mix(struct xdp_md *ctx, __u32 stream, __u16 sender) {
  __u32 zero = 0;
  struct rl_tx_stream *st = bpf_map_lookup_elem(&tx_streams, &stream);
  const struct rl_tx_mix *mix = bpf_map_lookup_elem(&tx_mix, &zero);
  if (!st || !mix) return XDP_DROP;
  __u32 at = st->mix_at;
  if (at >= mix->len) at = 0;
  __u32 k = mix->cycle[at & (RL_MIX_MAX_CYCLE - 1)];
  st->mix_at = at + 1 >= mix->len ? 0 : at + 1;
  const struct rl_tx_mix_class *cls = bpf_map_lookup_elem(&tx_mix_classes, &k);
  __u32 slot = stream * RL_MIX_MAX_CLASSES + k;
  const struct rl_tx_mix_stream *ms = bpf_map_lookup_elem(&tx_mix_streams, &slot);
  if (!cls || !ms) goto bad;
  const __u32 len = cls->payload_len;
  const int cut = (int)(cfg.payload_off + len) - (int)(ctx->data_end - ctx->data);
  if (cut && bpf_xdp_adjust_tail(ctx, cut)) goto bad;
  __u8 *data = (void *)(long)ctx->data;
  void *end = (void *)(long)ctx->data_end;
  __u8 *udp = data + cfg.udp_off;
  __u8 *pl = data + cfg.payload_off;
  const __u32 len_at = mix->ip_len_at & 0x3f, csum_at = mix->ip_csum_at & 0x3f;
  if ((void *)(data + len_at + 2) > end || (void *)(data + csum_at + 2) > end || (void *)(udp + 8) > end) goto bad;
  *(__u16 *)(data + len_at) = ms->ip_len_be;
  if (csum_at) *(__u16 *)(data + csum_at) = ms->ip_csum_be;
  *(__u16 *)(udp + 4) = ms->udp_len_be;
  if (cls->short_form) {
    const struct short_frame f = {.ones_base = ms->ones_base, .len = len, .sender = sender, .stream = (__u16)stream};
    return gen_short(pl, end, udp, st, &f);
  }
  // The long form's constant words: word 0 (magic, version, kind, stream) and bytes 24..27 (sender, length).
  if ((void *)(pl + RL_HEADER_BYTES) > end) goto bad;
  *(__u64 *)pl = ms->w0;
  *(__u32 *)(pl + 24) = ms->w3;
  return gen_long(pl, end, udp, st, stream, cls->full_words, cls->tail_bytes, cls->sum_odd, ms->csum_base,
                  ms->ones_base);
bad:
  if (st) st->bad_frames++;
  return XDP_DROP;
}

SEC("xdp")
int rateline_gen(struct xdp_md *ctx) {
  void *data = (void *)(long)ctx->data;
  void *end = (void *)(long)ctx->data_end;
  const __u32 *meta = (void *)(long)ctx->data_meta;
  if ((void *)(meta + 2) > data) return XDP_PASS;  // a real frame: not ours to touch
  const __u32 magic = meta[0], meta_word = meta[1];
  if (magic != RL_GEN_META_MAGIC && magic != RL_GEN_META_MIX_MAGIC) return XDP_PASS;
  // cfg is .rodata: for an untagged run the verifier drops this branch.
  if (cfg.l2_len) {
    if (data + RL_MAX_L2_BYTES > end) return XDP_DROP;
    __u8 *l2 = data;
    for (__u32 k = 0; k < RL_MAX_L2_BYTES; k++) {
      if (k >= cfg.l2_len) break;
      l2[k] = cfg.l2[k];
    }
  }
  if (magic == RL_GEN_META_MIX_MAGIC) return gen_mix(ctx, meta_word & 0xffff, (__u16)(meta_word >> 16));
  __u8 *pl = data + cfg.payload_off;
  // For a long-form run the verifier drops this branch.
  if (cfg.short_form && (void *)(pl + RL_SHORT_HEADER_BYTES) <= end && pl[0] == RL_SHORT_TAG) {
    __u32 stream = (__u32)pl[RL_OFF_SHORT_STREAM] << 8 | pl[RL_OFF_SHORT_STREAM + 1];
    struct rl_tx_stream *st = bpf_map_lookup_elem(&tx_streams, &stream);
    if (!st) return XDP_DROP;
    const struct short_frame f = {.ones_base = st->ones_base, .len = cfg.payload_len,
                                  .sender = (__u16)(pl[RL_OFF_SHORT_SENDER] << 8 | pl[RL_OFF_SHORT_SENDER + 1]),
                                  .stream = (__u16)stream};
    return gen_short(pl, end, data + cfg.udp_off, st, &f);
  }
  if ((void *)(pl + RL_HEADER_BYTES) > end) return XDP_DROP;
  __u32 stream = (__u32)pl[RL_OFF_STREAM] << 8 | pl[RL_OFF_STREAM + 1];
  struct rl_tx_stream *st = bpf_map_lookup_elem(&tx_streams, &stream);
  if (!st) return XDP_DROP;
  if (pl[RL_OFF_KIND] != RL_KIND_DATA) {
    st->end_frames++;
    return XDP_TX;
  }
  return gen_long(pl, end, data + cfg.udp_off, st, stream, cfg.full_words, cfg.tail_bytes, cfg.sum_odd, st->csum_base,
                  st->ones_base);
}

// TP_PROTO(from_dev, to_dev, int sent, int drops, int err): one call per
// bulk flush to a device, in the context of the task that flushed, which
// for BPF_PROG_RUN is the pktgen worker itself.
SEC("raw_tp/xdp_devmap_xmit")
int rateline_devmap_xmit(struct bpf_raw_tracepoint_args *ctx) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct rl_tx_xmit *x = bpf_map_lookup_elem(&tx_xmit, &tid);
  if (!x) return 0;
  const int sent = (int)ctx->args[2];
  const int drops = (int)ctx->args[3];
  const int err = (int)ctx->args[4];
  if (sent > 0) __sync_fetch_and_add(&x->sent, sent);
  if (drops > 0) __sync_fetch_and_add(&x->drops, drops);
  if (err) x->last_err = err < 0 ? -err : err;
  return 0;
}

// TP_PROTO(dev, xdp, tgt, int err, map_type, map_id, index): a frame that
// could not even be queued for the device (no ndo_xdp_xmit, too long).
SEC("raw_tp/xdp_redirect_err")
int rateline_redirect_err(struct bpf_raw_tracepoint_args *ctx) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct rl_tx_xmit *x = bpf_map_lookup_elem(&tx_xmit, &tid);
  if (!x) return 0;
  const int err = (int)ctx->args[3];
  __sync_fetch_and_add(&x->redirect_errors, 1);
  if (err) x->last_err = err < 0 ? -err : err;
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
