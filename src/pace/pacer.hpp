// Burst pacing with udp_bench semantics.
//
// Two ways to space bursts of `burst` packets:
// - delay: after a burst ends, wait delay_ns before the next starts
//   (udp_bench's "t ms between bursts"; achieved rate depends on how long a
//   burst takes to send, and is reported).
// - rate: burst k starts at start + k * period_ns with period = burst / rate;
//   absolute deadlines, so errors do not accumulate. A sender that falls more
//   than kMaxLagPeriods behind is rebased to now instead of bursting to catch
//   up, and the slip is counted: a catch-up burst would be a rate we never asked for.
// Neither (delay 0, no rate): unpaced.
//
// Waiting: sleep (clock_nanosleep) while more than kSpinNs remains, in chunks
// of at most kMaxSleepNs so a stop request is seen promptly; then spin.
#pragma once

#include <atomic>
#include <cstdint>

namespace rateline::pace {

struct PacePlan {
  uint32_t burst = 1;
  uint64_t delay_ns = 0;    // udp_bench delay after each burst
  double period_ns = 0.0;   // rate mode: burst-start spacing; 0 = not rate-paced

  bool paced() const { return delay_ns != 0 || period_ns > 0.0; }
  // Spacing for a packet rate: burst / rate_pps seconds between burst starts.
  static PacePlan for_rate(uint32_t burst, double rate_pps);
  static PacePlan for_delay(uint32_t burst, uint64_t delay_ns);
};

class Pacer {
 public:
  static constexpr uint64_t kSpinNs = 100'000;      // below this, spin: sleep wakeups are ~50-100us late
  static constexpr uint64_t kMaxSleepNs = 20'000'000;
  static constexpr uint64_t kMaxLagPeriods = 8;

  explicit Pacer(const PacePlan& plan) : plan_(plan) {}

  void start(uint64_t now) {
    base_ns_ = now;
    bursts_since_base_ = 0;
  }

  // Deadline at which the next burst may start, given the time the last
  // burst ended. Pure arithmetic, tested on its own.
  uint64_t next_start(uint64_t burst_end_ns);

  // Blocks until next_start(); returns false early when stop becomes true.
  bool wait_for_next_burst(uint64_t burst_end_ns, const std::atomic<bool>& stop);

  uint64_t slips() const { return slips_; }
  const PacePlan& plan() const { return plan_; }

 private:
  PacePlan plan_;
  uint64_t base_ns_ = 0;
  uint64_t bursts_since_base_ = 0;
  uint64_t slips_ = 0;
};

// Spins/sleeps until `deadline_ns` on CLOCK_MONOTONIC; false if stop was set.
bool wait_until(uint64_t deadline_ns, const std::atomic<bool>& stop);

}  // namespace rateline::pace
