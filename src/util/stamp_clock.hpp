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
// against clock_gettime is the skew of the base pair (tens of ns) plus
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
  explicit StampClock(TscRate rate = tsc_rate()) : rate_(rate) { rebase(); }

  bool interpolating() const { return rate_.ns_per_tick_q32 != 0; }

  // Once per batch, before its stamps.
  void rebase() {
    if (!interpolating()) return;
    const uint64_t before = ticks();
    base_ns_ = now_ns();
    base_ticks_ = before + (ticks() - before) / 2;  // a stalled clock_gettime errs by half its stall, not all
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
  TscRate rate_;
  uint64_t base_ticks_ = 0;
  uint64_t base_ns_ = 0;
  uint64_t last_ns_ = 0;
};

}  // namespace rateline
