/* The XDP counter's per-stream tracking (xdp_rx.bpf.c), as plain C over
 * struct rl_rx_stream: the sequence window with its far-jump rule
 * (stats::SequenceTracker) and end markers as evidence (engine::EndEvidence).
 * The program calls these under the stream's lock. Compiled as C++ too, so
 * that tests/unit/xdp/xdp_rx_track_test.cpp drives them and the engine's
 * classes with the same arrivals and compares every count. */
#ifndef RATELINE_XDP_RX_TRACK_H
#define RATELINE_XDP_RX_TRACK_H

#include "xdp_shared.h"

RL_INLINE void window_set(struct rl_rx_stream *s, rl_u64 seq) {
  const rl_u64 slot = seq & (RL_WINDOW_BITS - 1);
  s->window[(slot >> 6) & (RL_WINDOW_WORDS - 1)] |= 1ull << (slot & 63);
}

RL_INLINE int window_test(const struct rl_rx_stream *s, rl_u64 seq) {
  const rl_u64 slot = seq & (RL_WINDOW_BITS - 1);
  return (s->window[(slot >> 6) & (RL_WINDOW_WORDS - 1)] >> (slot & 63)) & 1;
}

// Clears the bits of sequences [from, to), to - from <= RL_WINDOW_BITS: a
// partial word, whole words, a partial word: at most RL_WINDOW_WORDS + 1 steps.
RL_INLINE void window_clear(struct rl_rx_stream *s, rl_u64 from, rl_u64 to) {
  for (rl_u32 k = 0; k < RL_WINDOW_WORDS + 1; k++) {
    if (from >= to) break;
    const rl_u64 slot = from & (RL_WINDOW_BITS - 1);
    const rl_u32 bit = slot & 63;
    rl_u64 n = 64 - bit;
    if (n > to - from) n = to - from;
    const rl_u64 mask = n == 64 ? ~0ull : ((1ull << n) - 1) << bit;
    s->window[(slot >> 6) & (RL_WINDOW_WORDS - 1)] &= ~mask;
    from += n;
  }
}

// stats::SequenceTracker::record, with its far-jump rule: a jump of more
// than a window ahead is held (pending) until an arrival within a window of
// it confirms it; a lone one is implausible and changes nothing else. One
// window_clear call site: each inlined copy of its loop is verified again.
RL_INLINE void sequence_record(struct rl_rx_stream *s, rl_u64 seq) {
  s->received++;
  if (seq >= s->highest_next) {
    if (seq == ~0ull) {  // would wrap highest_next: only a forged header gets here
      s->received--;
      s->implausible++;
      return;
    }
    rl_u64 from = s->highest_next, to = seq;  // the gap: not (yet) seen
    int taken = 0;
    const rl_u64 d = seq > s->pending ? seq - s->pending : s->pending - seq;
    if ((s->flags & RL_STREAM_PENDING) && d != 0 && d <= RL_WINDOW_BITS) {
      // Confirmed: the held jump moves the window (take_pending).
      s->flags &= ~RL_STREAM_PENDING;
      s->highest_next = s->pending + 1;
      s->unique++;
      s->received++;
      taken = 1;
      from = 0;
      to = RL_WINDOW_BITS;
    } else {
      const rl_u64 advance = seq - s->highest_next + 1;
      if (advance > RL_WINDOW_BITS) {  // held; a held one it replaces never was
        s->received--;
        if (s->flags & RL_STREAM_PENDING) s->implausible++;
        s->pending = seq;
        s->flags |= RL_STREAM_PENDING;
        return;
      }
      if (advance >= RL_WINDOW_BITS) {
        from = 0;
        to = RL_WINDOW_BITS;  // every bit (a plain loop would become a memset)
      }
    }
    window_clear(s, from, to);
    if (taken) {
      window_set(s, s->pending);
      if (seq < s->highest_next) goto below;  // within the moved window, behind the held jump
    }
    s->highest_next = seq + 1;
    window_set(s, seq);
    s->unique++;
    return;
  }
below:
  if (s->highest_next - seq > RL_WINDOW_BITS) {
    s->received--;
    s->stale++;
    return;
  }
  if (window_test(s, seq)) {
    s->duplicates++;
    return;
  }
  window_set(s, seq);
  s->unique++;
  s->reordered++;
}

RL_INLINE int same_body(const struct rl_end_body *a, const struct rl_end_body *b) {
  return a->total_sent == b->total_sent && a->stream_count == b->stream_count && a->count == b->count &&
         a->burst == b->burst && a->delay_ns == b->delay_ns && a->data_size == b->data_size &&
         a->clock_id == b->clock_id;
}

// engine::detail::believed: which story (0, 1) is believed now, -1 none.
RL_INLINE int end_believed(const struct rl_rx_stream *s) {
  int best = -1;
  for (int i = 0; i < 2; i++) {
    if (!s->end_votes[i] || s->end_candidate[i].total_sent < s->highest_next) continue;
    const int quorum = s->end_votes[i] >= 2 || s->end_candidate[i].total_sent == s->highest_next;
    if (quorum && s->end_votes[i] > s->end_votes[1 - i]) best = i;
  }
  return best;
}

// engine::detail::publish_end_state: the stream has ended while a story is
// believed; RL_STREAM_END_SECOND says which.
RL_INLINE void publish_end_state(struct rl_rx_stream *s) {
  const int b = end_believed(s);
  s->flags &= ~(RL_STREAM_ENDED | RL_STREAM_END_SECOND);
  if (b >= 0) s->flags |= RL_STREAM_ENDED | (b ? RL_STREAM_END_SECOND : 0);
}

// engine::detail::weigh_end_marker: a marker is a vote for its story, never
// a command. A total below a sequence that arrived is no story at all; a
// third story while two are open is not kept.
RL_INLINE void weigh_end_marker(struct rl_rx_stream *s, const struct rl_end_body *body) {
  s->end_copies++;
  if (body->total_sent < s->highest_next) {
    // no story (engine: EndEvidence::implausible; the report counts copies not believed)
  } else if (s->end_votes[0] && same_body(&s->end_candidate[0], body)) {
    s->end_votes[0]++;
  } else if (s->end_votes[1] && same_body(&s->end_candidate[1], body)) {
    s->end_votes[1]++;
  } else if (!s->end_votes[0]) {
    s->end_candidate[0] = *body;
    s->end_votes[0] = 1;
  } else if (!s->end_votes[1]) {
    s->end_candidate[1] = *body;
    s->end_votes[1] = 1;
  }
  publish_end_state(s);  // every marker, as the engine: what arrived since may change the verdict
}

// engine::detail::withdraw_end: a data packet at or beyond the believed
// total proves it wrong, and with it every story the sequences have passed.
RL_INLINE void withdraw_end_stories(struct rl_rx_stream *s, rl_u64 seq) {
  if (!(s->flags & RL_STREAM_ENDED)) return;
  const int b = (s->flags & RL_STREAM_END_SECOND) ? 1 : 0;
  if (seq < s->end_candidate[b].total_sent) return;
  for (int i = 0; i < 2; i++)
    if (s->end_votes[i] && s->end_candidate[i].total_sent <= s->highest_next - 1) s->end_votes[i] = 0;
  publish_end_state(s);
}

#endif
