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

TEST(StampClock, InterpolatesWhereTheKernelUsesTheTsc) {
  std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string name;
  f >> name;
#if defined(__x86_64__)
  EXPECT_EQ(tsc_rate().ns_per_tick_q32 != 0, name == "tsc") << "clocksource " << name;
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
  expect_on_the_clock(c, 20, std::chrono::microseconds(5000));
}

TEST(StampClock, WithoutARateEveryStampIsAClockRead) {
  StampClock c{TscRate{}};
  EXPECT_FALSE(c.interpolating());
  const uint64_t lo = now_ns();
  const uint64_t t = c.stamp();
  EXPECT_GE(t, lo);
  EXPECT_LE(t, now_ns());
}

// A wrong rate must be caught by the bound check above: a rate 1% off drifts
// 10 us over 1 ms without a rebase, far past the tolerance.
TEST(StampClock, AWrongRateIsVisibleToTheBoundCheck) {
  const TscRate good = tsc_rate();
  if (!good.ns_per_tick_q32) GTEST_SKIP() << "no TSC interpolation on this machine";
  StampClock c{TscRate{good.ns_per_tick_q32 + good.ns_per_tick_q32 / 100}};
  c.rebase();
  const uint64_t start = now_ns();
  while (now_ns() - start < 1'000'000) {
  }
  const uint64_t hi = now_ns();
  EXPECT_GT(c.stamp(), hi + kToleranceNs);
}

}  // namespace
