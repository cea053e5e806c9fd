// Per-packet send stamps on CLOCK_MONOTONIC's time line for less than a
// clock_gettime each.
//
// Every packet carries its own send time, and on the fastest paths one
// vDSO clock_gettime per packet was a third of the sender's time (25 ns of
// 58 ns per packet on net_null). Where the kernel itself keeps time with the
// TSC (current_clocksource "tsc": invariant, synchronised across CPUs), a
// sender reads CLOCK_MONOTONIC once per batch (rebase) and extends it per
// packet by TSC ticks times a rate calibrated against CLOCK_MONOTONIC once per
// process. Each stamp is still taken when its packet is written; its error
// against clock_gettime is the skew of the base pair (under 1 us: see rebase()) plus
// rate error times the time since the rebase (1e-5 of a few microseconds).
// Stamps never go backwards. Elsewhere (other clocksources, non-x86) stamp()
// is now_ns().
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

class StampClock {
 public:
  explicit StampClock(TscRate rate = tsc_rate())
      : rate_(rate),
        tight_ticks_(rate.ns_per_tick_q32 ? (kTightBaseNs << 32) / rate.ns_per_tick_q32 : 0) {
    rebase();
  }

  bool interpolating() const { return rate_.ns_per_tick_q32 != 0; }

  // Once per batch, before its stamps. The base pair is a clock_gettime
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
  }

  // One per packet.
  uint64_t stamp() {
    if (!interpolating()) return now_ns();
    const unsigned __int128 elapsed = static_cast<unsigned __int128>(ticks() - base_ticks_) * rate_.ns_per_tick_q32;
    uint64_t t = base_ns_ + static_cast<uint64_t>(elapsed >> 32);
    if (t < last_ns_) t = last_ns_;  // a rebase may land a few ns behind the last extension
    last_ns_ = t;
    return t;
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
  TscRate rate_;
  uint64_t tight_ticks_ = 0;
  uint64_t base_ticks_ = 0;
  uint64_t base_ns_ = 0;
  uint64_t last_ns_ = 0;
};

}  // namespace rateline
