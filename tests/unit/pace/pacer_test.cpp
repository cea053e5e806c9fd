// Burst pacing arithmetic (src/pace/pacer.hpp). No sleeping, no timing:
// next_start() is pure arithmetic on the times it is given.
#include "pace/pacer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>

namespace {

using rateline::pace::PacePlan;
using rateline::pace::Pacer;

TEST(PacePlan, DefaultIsUnpaced) {
  const PacePlan p;
  EXPECT_FALSE(p.paced());
  EXPECT_EQ(p.burst, 1u);
}

TEST(PacePlan, ForRateBurst10At1000ppsIs10msPeriod) {
  const PacePlan p = PacePlan::for_rate(10, 1000.0);
  EXPECT_EQ(p.burst, 10u);
  EXPECT_EQ(p.period_ns, 10'000'000.0);
  EXPECT_EQ(p.delay_ns, 0u);
  EXPECT_TRUE(p.paced());
}

TEST(PacePlan, ForRateFractionalPeriod) {
  EXPECT_DOUBLE_EQ(PacePlan::for_rate(1, 3.0).period_ns, 1e9 / 3.0);
  EXPECT_DOUBLE_EQ(PacePlan::for_rate(100, 85266.0).period_ns, 100e9 / 85266.0);
}

TEST(PacePlan, ForDelay) {
  const PacePlan p = PacePlan::for_delay(100, 1'500'000);
  EXPECT_EQ(p.burst, 100u);
  EXPECT_EQ(p.delay_ns, 1'500'000u);
  EXPECT_EQ(p.period_ns, 0.0);
  EXPECT_TRUE(p.paced());
  EXPECT_FALSE(PacePlan::for_delay(100, 0).paced());
}

TEST(Pacer, RateModeDeadlinesAreStartPlusKPeriods) {
  Pacer p(PacePlan::for_rate(10, 1000.0));
  const uint64_t start = 5'000'000'000ull;
  p.start(start);
  for (uint64_t k = 1; k <= 10'000; ++k) {
    // The burst ends somewhere inside its period: the deadline does not move with it.
    const uint64_t burst_end = start + (k - 1) * 10'000'000 + (k * 7919) % 9'000'000;
    ASSERT_EQ(p.next_start(burst_end), start + k * 10'000'000) << "k " << k;
  }
  EXPECT_EQ(p.slips(), 0u);
}

TEST(Pacer, RateModeDoesNotAccumulateRoundingError) {
  // Period 333,333,333.33 ns: deadline k is start + round(k * 1e9 / 3), never a sum of rounded periods.
  Pacer p(PacePlan::for_rate(1, 3.0));
  const uint64_t start = 1'000;
  p.start(start);
  for (uint64_t k = 1; k <= 30'000; ++k) {
    const uint64_t want = start + (k * 1'000'000'000ull + 1) / 3;  // round to nearest
    ASSERT_EQ(p.next_start(start), want) << "k " << k;
  }
  EXPECT_EQ(p.slips(), 0u);
}

TEST(Pacer, BehindByLessThanMaxLagCatchesUpWithoutRebase) {
  Pacer p(PacePlan::for_rate(10, 1000.0));  // 10 ms period
  p.start(0);
  // Ends 8 periods late exactly: not more than kMaxLagPeriods, so no slip.
  EXPECT_EQ(p.next_start(10'000'000 + 8 * 10'000'000), 10'000'000u);
  EXPECT_EQ(p.next_start(0), 20'000'000u);
  EXPECT_EQ(p.slips(), 0u);
}

TEST(Pacer, FallingBehindMoreThanMaxLagRebasesAndCountsSlip) {
  Pacer p(PacePlan::for_rate(10, 1000.0));  // 10 ms period
  p.start(0);
  EXPECT_EQ(p.next_start(5'000'000), 10'000'000u);
  // Deadline 2 is 20 ms; ending at 20 ms + 80 ms + 1 ns is more than 8 periods behind.
  const uint64_t late = 20'000'000 + Pacer::kMaxLagPeriods * 10'000'000 + 1;
  EXPECT_EQ(p.next_start(late), late) << "rebased: start now, no catch-up burst";
  EXPECT_EQ(p.slips(), 1u);
  // The schedule continues from the new base.
  EXPECT_EQ(p.next_start(late), late + 10'000'000);
  EXPECT_EQ(p.next_start(late), late + 20'000'000);
  EXPECT_EQ(p.slips(), 1u);
  const uint64_t later = late + 30'000'000 + 500'000'000;
  EXPECT_EQ(p.next_start(later), later);
  EXPECT_EQ(p.slips(), 2u);
}

TEST(Pacer, SlipNeedsMoreThanOneMillisecondOfLag) {
  // 1 us period: 8 periods is only 8 us, but lag must also exceed 1 ms.
  Pacer p(PacePlan::for_rate(1, 1e6));
  p.start(0);
  EXPECT_EQ(p.next_start(1'000 + 500'000), 1'000u) << "500 us behind: catch up";
  EXPECT_EQ(p.slips(), 0u);
  EXPECT_EQ(p.next_start(2'000 + 1'000'000), 2'000u) << "exactly 1 ms behind: catch up";
  EXPECT_EQ(p.slips(), 0u);
  const uint64_t late = 3'000 + 1'000'001;
  EXPECT_EQ(p.next_start(late), late);
  EXPECT_EQ(p.slips(), 1u);
}

TEST(Pacer, StartResetsTheSchedule) {
  Pacer p(PacePlan::for_rate(10, 1000.0));
  p.start(0);
  p.next_start(0);
  p.next_start(0);
  p.start(1'000'000);
  EXPECT_EQ(p.next_start(1'000'000), 11'000'000u);
}

TEST(Pacer, DelayModeIsBurstEndPlusDelay) {
  Pacer p(PacePlan::for_delay(100, 250'000));
  p.start(123);
  for (uint64_t end : {uint64_t{0}, uint64_t{1}, uint64_t{999'999'999}, uint64_t{5'000'000'000'000}})
    EXPECT_EQ(p.next_start(end), end + 250'000) << end;
  // However late a burst ends, delay mode never slips.
  EXPECT_EQ(p.next_start(uint64_t{1} << 60), (uint64_t{1} << 60) + 250'000);
  EXPECT_EQ(p.slips(), 0u);
}

TEST(Pacer, UnpacedNextStartIsNow) {
  Pacer p(PacePlan{});
  p.start(0);
  EXPECT_EQ(p.next_start(777), 777u);
}

TEST(Pacer, WaitReturnsAtOnceWhenUnpacedOrStopped) {
  // Not a timing test: unpaced never waits, and a set stop flag returns false before any wait.
  std::atomic<bool> stop{false};
  Pacer unpaced(PacePlan{});
  EXPECT_TRUE(unpaced.wait_for_next_burst(0, stop));
  stop = true;
  EXPECT_FALSE(unpaced.wait_for_next_burst(0, stop));
  Pacer paced(PacePlan::for_delay(1, 3'600'000'000'000ull));  // an hour
  paced.start(0);
  EXPECT_FALSE(paced.wait_for_next_burst(0, stop));
  EXPECT_FALSE(rateline::pace::wait_until(~uint64_t{0}, stop));
}

}  // namespace
