// Calibration of the TSC against CLOCK_MONOTONIC for util/stamp_clock.hpp.
#include "util/stamp_clock.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace rateline {

namespace {

std::string current_clocksource() {
  std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string name;
  if (!(f >> name)) name.clear();
  return name;
}

// The CPU says its TSC ticks at one rate whatever the power state
// (constant_tsc) and does not stop in deep idle (nonstop_tsc).
bool cpu_has_invariant_tsc() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
  }
  return false;
}

// CLOCK_MONOTONIC runs on the TSC when the kernel uses it directly (it does
// so only when the TSC is invariant and synchronised across CPUs), or under
// KVM through kvm-clock, which scales the guest's TSC by the host's
// parameters: interpolating is sound there when the TSC is invariant (a VMM
// may still boot the guest with tsc=unstable, e.g. for snapshots restored
// elsewhere; StampClock's extension bound and drift check cover that).
const char* tsc_basis() {
#if defined(__x86_64__)
  const std::string source = current_clocksource();
  if (source == "tsc") return "clocksource tsc";
  if (source == "kvm-clock" && cpu_has_invariant_tsc()) return "clocksource kvm-clock, invariant TSC";
#endif
  return nullptr;
}

// A (ticks, ns) pair read back to back; the ticks are the midpoint of two
// reads around clock_gettime, and of several tries the tightest pair is kept:
// on this VM a first touch of a page can stall a call for a millisecond (the
// host hands freed memory back), which would put a wrong pair in the rate.
struct Pair {
  uint64_t ticks;
  uint64_t ns;
};
Pair read_pair() {
  Pair best{};
  uint64_t best_width = ~0ull;
  for (int i = 0; i < 16; ++i) {
    const uint64_t a = StampClock::ticks();
    const uint64_t ns = now_ns();
    const uint64_t b = StampClock::ticks();
    if (b - a < best_width) {
      best_width = b - a;
      best = {a + (b - a) / 2, ns};
    }
  }
  return best;
}

uint64_t rate_over(uint64_t span_ns) {
  const Pair p0 = read_pair();
  Pair p1 = p0;
  while (p1.ns - p0.ns < span_ns) p1 = read_pair();
  if (p1.ticks <= p0.ticks) return 0;
  return static_cast<uint64_t>((static_cast<unsigned __int128>(p1.ns - p0.ns) << 32) / (p1.ticks - p0.ticks));
}

TscRate measure() {
  const char* env = std::getenv("RATELINE_TSC_STAMPS");
  if (env && std::strcmp(env, "0") == 0) return {};  // A/B runs and tests: per-packet clock_gettime
  if (!tsc_basis()) return {};
  read_pair();  // touch the vDSO and this code before anything is timed
  // Two consecutive 2 ms measurements must agree to 1e-4 (a stall or a
  // migration inside one shows as disagreement); else try again, then give up
  // and stamp with clock_gettime.
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint64_t r1 = rate_over(2 * kNsPerMs);
    const uint64_t r2 = rate_over(2 * kNsPerMs);
    if (!r1 || !r2) continue;
    const uint64_t diff = r1 > r2 ? r1 - r2 : r2 - r1;
    if (diff <= r1 / 10000) return {r1 / 2 + r2 / 2};
  }
  return {};
}

}  // namespace

TscRate tsc_rate() {
  static const TscRate rate = measure();
  return rate;
}

const char* tsc_stamp_basis() { return tsc_rate().ns_per_tick_q32 ? tsc_basis() : nullptr; }

}  // namespace rateline
