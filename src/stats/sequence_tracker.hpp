// Per-stream loss / reorder / duplicate accounting (RFC 4737, RFC 5560 terms).
//
// `next_` is one past the highest sequence seen. A window of seen-bits covers
// [next_ - kWindow, next_): an arrival below next_ inside the window is either
// a duplicate (bit set) or a late, reordered packet (bit clear). Arrivals
// older than the window cannot be told apart and are counted as `stale`,
// never as received, so replayed old sequences cannot hide loss.
//
// Lost so far = next_ - unique. When the stream's end marker says how many
// were sent, lost = total_sent - unique exactly, which includes the tail.
//
// A jump of more than a window ahead is believed only once a second arrival
// confirms it (within a window of it): a lone datagram with a far sequence,
// forged or not, is counted `implausible` and changes nothing else. Without
// this one packet with sequence 2^63 would make every later real packet
// stale and report 2^63 lost. A real outage longer than a window costs
// nothing: the packet after it confirms the jump.
#pragma once

#include <array>
#include <cstdint>

namespace rateline::stats {

struct SequenceCounts {
  uint64_t received = 0;    // every arrival that passed the checksum, duplicates included
  uint64_t unique = 0;      // distinct sequences received
  uint64_t duplicates = 0;  // arrivals of a sequence already seen
  uint64_t reordered = 0;   // arrivals below the highest sequence seen, first time seen
  uint64_t stale = 0;       // arrivals older than the window: not counted as received
  uint64_t beyond_end = 0;  // sequences >= total_sent announced by the end marker
  uint64_t highest_next = 0;  // one past the highest sequence seen
  uint64_t implausible = 0;   // lone jumps beyond the window, never confirmed: not received
};

class SequenceTracker {
 public:
  static constexpr uint64_t kWindow = 16384;  // bits; a power of two

  // Records one arrival. Branch-light: the common case (seq == next_) takes
  // one compare and one bit set.
  void record(uint64_t seq) {
    ++c_.received;
    if (seq >= c_.highest_next) [[likely]] {
      if (seq == ~0ull) [[unlikely]] {
        // highest_next would wrap to 0, below unique. No sender ever
        // reaches 2^64 - 1; only a forged header does.
        --c_.received;
        ++c_.implausible;
        return;
      }
      if (has_pending_ && confirms_pending(seq)) [[unlikely]] {
        take_pending();
        if (seq < c_.highest_next) {  // now inside the moved window: the usual path below
          --c_.received;
          record(seq);
          return;
        }
      }
      const uint64_t advance = seq - c_.highest_next + 1;
      if (advance > kWindow) [[unlikely]] {
        // Held until an arrival near it confirms it; a held one it replaces never was.
        --c_.received;
        c_.implausible += has_pending_ ? 1 : 0;
        pending_ = seq;
        has_pending_ = true;
        return;
      }
      if (advance >= kWindow) {
        bits_.fill(0);
      } else if (advance > 1) {
        clear_range(c_.highest_next, seq);  // the gap: not (yet) seen
      }
      c_.highest_next = seq + 1;
      set(seq);  // the new slot may hold a bit from kWindow ago: set() overwrites
      ++c_.unique;
      return;
    }
    if (c_.highest_next - seq > kWindow) {
      --c_.received;
      ++c_.stale;
      return;
    }
    if (test(seq)) {
      ++c_.duplicates;
      return;
    }
    set(seq);
    ++c_.unique;
    ++c_.reordered;
  }

  // A jump still unconfirmed at the time of asking counts as implausible.
  SequenceCounts counts() const {
    SequenceCounts c = c_;
    c.implausible += has_pending_ ? 1 : 0;
    return c;
  }

  // Takes counts kept by the same algorithm elsewhere (the XDP backend's
  // in-kernel tracker, drivers/xdp): after a run only the counts are read,
  // so the window is not carried over.
  void adopt(const SequenceCounts& c) { c_ = c; }

  // Distinct sequences so far.
  uint64_t unique() const { return c_.unique; }

  // Loss so far (gaps below the highest sequence seen).
  uint64_t lost_so_far() const { return c_.highest_next - c_.unique; }

  // Exact loss once the sender's total is known.
  uint64_t lost_given_total(uint64_t total_sent) const {
    return total_sent > c_.unique ? total_sent - c_.unique : 0;
  }

 private:
  bool confirms_pending(uint64_t seq) const {
    if (!has_pending_) return false;
    const uint64_t d = seq > pending_ ? seq - pending_ : pending_ - seq;
    return d != 0 && d <= kWindow;
  }
  // The held jump is confirmed: it moves the window.
  void take_pending() {
    has_pending_ = false;
    bits_.fill(0);
    c_.highest_next = pending_ + 1;
    set(pending_);
    ++c_.unique;
    ++c_.received;
  }
  void set(uint64_t seq) {
    const uint64_t slot = seq & (kWindow - 1);
    bits_[slot >> 6] |= 1ull << (slot & 63);
  }
  bool test(uint64_t seq) const {
    const uint64_t slot = seq & (kWindow - 1);
    return bits_[slot >> 6] >> (slot & 63) & 1;
  }
  // Clears bits for sequences [from, to): those slots last held seq - kWindow.
  void clear_range(uint64_t from, uint64_t to) {
    for (uint64_t s = from; s < to; ++s) {
      const uint64_t slot = s & (kWindow - 1);
      if ((slot & 63) == 0 && to - s >= 64) {
        bits_[slot >> 6] = 0;
        s += 63;
        continue;
      }
      bits_[slot >> 6] &= ~(1ull << (slot & 63));
    }
  }

  SequenceCounts c_;
  uint64_t pending_ = 0;  // a far jump waiting for a second arrival near it
  bool has_pending_ = false;
  std::array<uint64_t, kWindow / 64> bits_{};
};

}  // namespace rateline::stats
