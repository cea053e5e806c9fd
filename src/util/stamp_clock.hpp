// Per-packet send stamps on CLOCK_MONOTONIC's time line for less than a
// clock_gettime each.
//
// Every packet carries its own send time, and on the fastest paths one
// vDSO clock_gettime per packet was a third of the sender's time (25 ns of
// 58 ns per packet on net_null). Where CLOCK_MONOTONIC itself runs on the
// TSC -- clocksource "tsc", or "kvm-clock" (pvclock: the host's scaling of
// the guest's TSC) on a CPU whose TSC is invariant (constant_tsc and
// nonstop_tsc) -- a sender reads CLOCK_MONOTONIC at least every kMaxExtendNs
// (rebase) and extends it per packet by TSC ticks times a rate calibrated
// against CLOCK_MONOTONIC once per process. Each stamp is still read when its
// packet is written (one rdtsc each); its error against clock_gettime is the
// skew of the base pair (under 1 us: see rebase()) plus rate error times the
// time since the rebase (at most 10 ns). Two guards keep that true if the TSC
// misbehaves (a VM restored on another host, a kernel that distrusts its
// TSC): an extension never spans more than kMaxExtendNs (a stamp past it
// rebases first), and rebases check the TSC against CLOCK_MONOTONIC every
// few milliseconds; past 1e-3 of disagreement the clock stops interpolating
// for good and every stamp is a clock_gettime. Stamps never go backwards. Elsewhere (other
// clocksources, non-x86) stamp() is now_ns().
#pragma once

#include <cstdint>

#include "util/clock.hpp"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace rateline {

struct TscRate {
  uint64_t ns_per_tick_q32 = 0;  // 32.32 fixed point; 0 = interpolation unavailable here
};

// Measured once per process (about 2 ms, on first use); thread-safe.
TscRate tsc_rate();
// Why stamps are TSC-extended here ("clocksource tsc", ...), or nullptr when they are not.
const char* tsc_stamp_basis();

class StampClock {
 public:
  explicit StampClock(TscRate rate = tsc_rate())
      : rate_(rate),
        tight_ticks_(rate.ns_per_tick_q32 ? (kTightBaseNs << 32) / rate.ns_per_tick_q32 : 0),
        max_extend_ticks_(rate.ns_per_tick_q32 ? (kMaxExtendNs << 32) / rate.ns_per_tick_q32 : 0) {
    rebase();
  }

  bool interpolating() const { return rate_.ns_per_tick_q32 != 0; }
  // Rebases that found the TSC off CLOCK_MONOTONIC's pace (then interpolation stopped).
  uint32_t rate_breaks() const { return rate_breaks_; }

  // Reads a new base pair; stamps and now() call it themselves when the
  // last one is older than kMaxExtendNs. The base pair is a clock_gettime
  // bracketed by two TSC reads; a read the host stalled (this VM has
  // millisecond stalls) would put every stamp of the batch up to half the
  // stall off -- ahead of the receiver's clock, even, and the no-backwards
  // clamp would carry that on. So a wide bracket is read again: the
  // narrowest of kBaseTries, stopping at the first within kTightBaseNs.
  void rebase() {
    if (!interpolating()) return;
    uint64_t best_span = ~0ull;
    for (uint32_t i = 0; i < kBaseTries; ++i) {
      const uint64_t before = ticks();
      const uint64_t ns = now_ns();
      const uint64_t span = ticks() - before;
      if (span < best_span) {
        best_span = span;
        base_ns_ = ns;
        base_ticks_ = before + span / 2;
      }
      if (span <= tight_ticks_) break;
    }
    if (best_span > tight_ticks_) return;  // a stalled pair: fine as a base, too coarse to judge the rate
    if (!anchor_ns_) {
      anchor_ns_ = base_ns_;
      anchor_ticks_ = base_ticks_;
    } else if (base_ns_ - anchor_ns_ >= kDriftCheckMinNs) {
      if (!rate_holds()) {
        ++rate_breaks_;
        rate_ = {};
      }
      anchor_ns_ = base_ns_;
      anchor_ticks_ = base_ticks_;
    }
  }

  // One per packet: never behind the previous stamp.
  uint64_t stamp() {
    uint64_t t = now();
    if (t < last_ns_) t = last_ns_;  // a rebase may land a few ns behind the last extension
    last_ns_ = t;
    return t;
  }

  // CLOCK_MONOTONIC now, for a TSC read where interpolating; an extension
  // past kMaxExtendNs (a first read after a pause, a long batch, a TSC that
  // jumped, also backwards) rebases first.
  uint64_t now() {
    if (!interpolating()) return now_ns();
    uint64_t since = ticks() - base_ticks_;
    if (since > max_extend_ticks_) [[unlikely]] {
      rebase();
      if (!interpolating()) return now_ns();
      since = ticks() - base_ticks_;
    }
    const unsigned __int128 elapsed = static_cast<unsigned __int128>(since) * rate_.ns_per_tick_q32;
    return base_ns_ + static_cast<uint64_t>(elapsed >> 32);
  }

  static uint64_t ticks() {
#if defined(__x86_64__)
    return __rdtsc();
#else
    return 0;
#endif
  }

 private:
  static constexpr uint64_t kTightBaseNs = 2000;  // a clock_gettime takes ~25-60 ns when not stalled
  static constexpr uint32_t kBaseTries = 4;
  // Longest extension: the error it can carry is the rate's (calibrated to
  // 1e-4) times this, 10 ns; NTP's slew of CLOCK_MONOTONIC (at most 500 ppm)
  // adds at most 50 ns. A rebase costs a clock_gettime per 100 us.
  static constexpr uint64_t kMaxExtendNs = 100'000;
  // The drift check needs a span long enough that the base pairs' skew
  // (< kTightBaseNs each) is small against it.
  static constexpr uint64_t kDriftCheckMinNs = 4'000'000;
  static constexpr uint64_t kDriftLimitPerMille = 1;

  // Did the TSC advance at the calibrated rate since the anchor pair? Each
  // pair's own skew is under kTightBaseNs when it was read unstalled.
  bool rate_holds() const {
    const uint64_t span_ns = base_ns_ - anchor_ns_;
    const unsigned __int128 predicted128 =
        static_cast<unsigned __int128>(base_ticks_ - anchor_ticks_) * rate_.ns_per_tick_q32;
    const uint64_t predicted = static_cast<uint64_t>(predicted128 >> 32);
    const uint64_t diff = predicted > span_ns ? predicted - span_ns : span_ns - predicted;
    return diff <= span_ns / 1000 * kDriftLimitPerMille + 2 * kTightBaseNs;
  }

  TscRate rate_;
  uint64_t tight_ticks_ = 0;
  uint64_t max_extend_ticks_ = 0;
  uint32_t rate_breaks_ = 0;
  uint64_t base_ticks_ = 0;
  uint64_t base_ns_ = 0;
  uint64_t anchor_ticks_ = 0;  // the base pair the drift check last compared against
  uint64_t anchor_ns_ = 0;
  uint64_t last_ns_ = 0;
};

}  // namespace rateline
