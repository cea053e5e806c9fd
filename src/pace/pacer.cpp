#include "pace/pacer.hpp"

#include <cerrno>
#include <cmath>
#include <ctime>

#include "util/clock.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RATELINE_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define RATELINE_CPU_RELAX() asm volatile("yield" ::: "memory")
#else
#define RATELINE_CPU_RELAX() do {} while (0)
#endif

namespace rateline::pace {

PacePlan PacePlan::for_rate(uint32_t burst, double rate_pps) {
  PacePlan p;
  p.burst = burst;
  p.period_ns = static_cast<double>(burst) * 1e9 / rate_pps;
  return p;
}

PacePlan PacePlan::for_delay(uint32_t burst, uint64_t delay_ns) {
  PacePlan p;
  p.burst = burst;
  p.delay_ns = delay_ns;
  return p;
}

uint64_t Pacer::next_start(uint64_t burst_end_ns) {
  if (plan_.period_ns > 0.0) {
    ++bursts_since_base_;
    const auto deadline =
        base_ns_ + static_cast<uint64_t>(std::llround(static_cast<double>(bursts_since_base_) * plan_.period_ns));
    const double lag = static_cast<double>(burst_end_ns) - static_cast<double>(deadline);
    if (lag > plan_.period_ns * kMaxLagPeriods && lag > 1e6) {
      ++slips_;
      base_ns_ = burst_end_ns;
      bursts_since_base_ = 0;
      return burst_end_ns;
    }
    return deadline;
  }
  return burst_end_ns + plan_.delay_ns;
}

bool Pacer::wait_for_next_burst(uint64_t burst_end_ns, const std::atomic<bool>& stop) {
  if (!plan_.paced()) return !stop.load(std::memory_order_relaxed);
  return wait_until(next_start(burst_end_ns), stop);
}

bool wait_until(uint64_t deadline_ns, const std::atomic<bool>& stop) {
  for (;;) {
    if (stop.load(std::memory_order_relaxed)) return false;
    const uint64_t now = now_ns();
    if (now >= deadline_ns) return true;
    const uint64_t left = deadline_ns - now;
    if (left > Pacer::kSpinNs) {
      uint64_t sleep_ns = left - Pacer::kSpinNs;
      if (sleep_ns > Pacer::kMaxSleepNs) sleep_ns = Pacer::kMaxSleepNs;
      timespec ts{static_cast<time_t>(sleep_ns / kNsPerSec), static_cast<long>(sleep_ns % kNsPerSec)};
      nanosleep(&ts, nullptr);  // EINTR is fine: the loop re-checks time and stop
      continue;
    }
    for (int i = 0; i < 64; ++i) RATELINE_CPU_RELAX();
  }
}

}  // namespace rateline::pace
