// util/stamp_clock.hpp: TSC-extended stamps stay on CLOCK_MONOTONIC's time
// line. Correctness bounds, not speed: a stamp must lie between clock reads
// taken around it (widened by a small, stated tolerance), however long the
// scheduler makes the window.
#include "util/stamp_clock.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace {

using namespace rateline;

// Skew of a rebase pair plus rate error over the spans below: far under 1 us.
constexpr uint64_t kToleranceNs = 1000;

bool cpu_flag(const std::string& flag) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

TEST(StampClock, InterpolatesWhereMonotonicRunsOnTheTsc) {
  std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string name;
  f >> name;
#if defined(__x86_64__)
  const bool tsc_based =
      name == "tsc" || (name == "kvm-clock" && cpu_flag("constant_tsc") && cpu_flag("nonstop_tsc"));
  EXPECT_EQ(tsc_rate().ns_per_tick_q32 != 0, tsc_based) << "clocksource " << name;
  EXPECT_EQ(tsc_stamp_basis() != nullptr, tsc_based);
#else
  EXPECT_EQ(tsc_rate().ns_per_tick_q32, 0u);
#endif
}

void expect_on_the_clock(StampClock& c, int batches, std::chrono::microseconds pause) {
  uint64_t last = 0;
  for (int b = 0; b < batches; ++b) {
    const uint64_t before = now_ns();
    c.rebase();
    for (int i = 0; i < 64; ++i) {
      const uint64_t lo = now_ns();
      const uint64_t t = c.stamp();
      const uint64_t hi = now_ns();
      ASSERT_GE(t + kToleranceNs, lo) << "batch " << b << " packet " << i;
      ASSERT_LE(t, hi + kToleranceNs) << "batch " << b << " packet " << i;
      ASSERT_GE(t, last) << "stamps went backwards";
      ASSERT_GE(t + kToleranceNs, before);
      last = t;
    }
    if (pause.count()) std::this_thread::sleep_for(pause);
  }
}

TEST(StampClock, StampsLieBetweenClockReadsAroundThem) {
  StampClock c;
  expect_on_the_clock(c, 200, std::chrono::microseconds(0));
}

TEST(StampClock, StaysOnTheClockAcrossLongGapsBetweenRebases) {
  StampClock c;
  const bool interpolating = c.interpolating();
  expect_on_the_clock(c, 20, std::chrono::microseconds(5000));
  EXPECT_EQ(c.rate_breaks(), 0u) << "a correctly calibrated TSC was judged off the clock";
  EXPECT_EQ(c.interpolating(), interpolating);
}

TEST(StampClock, WithoutARateEveryStampIsAClockRead) {
  StampClock c{TscRate{}};
  EXPECT_FALSE(c.interpolating());
  const uint64_t lo = now_ns();
  const uint64_t t = c.stamp();
  EXPECT_GE(t, lo);
  EXPECT_LE(t, now_ns());
}

void spin_for_ns(uint64_t ns) {
  const uint64_t start = now_ns();
  while (now_ns() - start < ns) {
  }
}

// This machine's calibrated rate made `percent` % too fast: a TSC that no
// longer keeps CLOCK_MONOTONIC's pace (0 where there is no TSC interpolation).
TscRate rate_off_by(uint64_t percent) {
  const TscRate good = tsc_rate();
  return {good.ns_per_tick_q32 + good.ns_per_tick_q32 * percent / 100};
}

// A wrong rate must be caught by the bound check above: a rate 3% off drifts
// 2.4 us over 80 us (inside the 100 us extension bound) without a rebase.
// The 80 us must be 80 us: a spin the scheduler stretched past the bound
// (then stamp() rebases, as the next test wants) is spun again.
TEST(StampClock, AWrongRateIsVisibleToTheBoundCheck) {
  if (!tsc_rate().ns_per_tick_q32) GTEST_SKIP() << "no TSC interpolation on this machine";
  for (int attempt = 0; attempt < 50; ++attempt) {
    StampClock c{rate_off_by(3)};
    const uint64_t start = now_ns();
    c.rebase();
    spin_for_ns(80'000);
    const uint64_t hi = now_ns();
    const uint64_t t = c.stamp();
    if (now_ns() - start > 90'000) continue;  // preempted: the extension bound may have rebased
    EXPECT_GT(t, hi + kToleranceNs);
    return;
  }
  FAIL() << "50 spins of 80 us were each stretched past 90 us: no clean measurement";
}

// However wrong the rate, a stamp never extends the base by more than the
// bound (100 us): past it, the stamp rebases first. A 3% error over 1 ms
// would be 30 us.
TEST(StampClock, AnExtensionPastItsBoundRebasesFirst) {
  if (!tsc_rate().ns_per_tick_q32) GTEST_SKIP() << "no TSC interpolation on this machine";
  StampClock c{rate_off_by(3)};
  c.rebase();
  spin_for_ns(1'000'000);
  const uint64_t lo = now_ns();
  const uint64_t t = c.stamp();
  const uint64_t hi = now_ns();
  EXPECT_GE(t + kToleranceNs, lo);
  EXPECT_LE(t, hi + kToleranceNs);
}

// A TSC that stops keeping CLOCK_MONOTONIC's pace (here: a rate 1% off, as
// after a VM moved to a host with another TSC frequency) is found by a
// rebase at least 4 ms after the last check; from then on every stamp is a
// clock read.
TEST(StampClock, ATscOffThePaceStopsTheInterpolation) {
  if (!tsc_rate().ns_per_tick_q32) GTEST_SKIP() << "no TSC interpolation on this machine";
  StampClock c{rate_off_by(1)};
  for (int i = 0; i < 20 && c.interpolating(); ++i) {  // a stalled base pair defers the check: try again
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    c.rebase();
  }
  EXPECT_FALSE(c.interpolating());
  EXPECT_EQ(c.rate_breaks(), 1u);
  const uint64_t lo = now_ns();
  const uint64_t t = c.stamp();
  EXPECT_GE(t, lo);
  EXPECT_LE(t, now_ns());
}

}  // namespace
