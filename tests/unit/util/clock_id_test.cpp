// util/clock_id.hpp: one id per CLOCK_MONOTONIC, so that a receiver can tell
// a sender on its own clock from one that only reads close to it.
#include "util/clock_id.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace {

using rateline::clock_id_of;
using rateline::this_clock_id;

constexpr const char* kBoot = "057fd498-0247-454c-8cc7-e9f61995604b";

TEST(ClockId, EveryInputChangesIt) {
  const uint64_t base = clock_id_of(kBoot, 0);
  EXPECT_NE(base, 0u);
  EXPECT_EQ(clock_id_of(kBoot, 0), base) << "a function of its inputs only";
  EXPECT_NE(clock_id_of("057fd498-0247-454c-8cc7-e9f61995604c", 0), base) << "another boot";
  EXPECT_NE(clock_id_of(kBoot, 5'000'000), base) << "a time namespace 5 ms ahead";
  EXPECT_NE(clock_id_of(kBoot, -5'000'000), base) << "and 5 ms behind";
  EXPECT_NE(clock_id_of(kBoot, 1), base) << "1 ns is another clock too";
  EXPECT_NE(clock_id_of(kBoot, 5'000'000), clock_id_of(kBoot, -5'000'000));
}

// Outside a time namespace (as the unit tests run) the id is the boot id's
// with a zero offset; it is read once and never 0 where the boot id exists.
TEST(ClockId, ThisProcessIsItsBootIdAtItsOffset) {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string boot;
  if (!(f >> boot)) GTEST_SKIP() << "no /proc/sys/kernel/random/boot_id here";
  std::ifstream o("/proc/self/timens_offsets");
  std::string clock;
  long long secs = 0, nsecs = 0;
  while (o >> clock >> secs >> nsecs && clock != "monotonic") {
  }
  const long long offset = clock == "monotonic" ? secs * 1'000'000'000ll + nsecs : 0;
  EXPECT_EQ(this_clock_id(), clock_id_of(boot, offset));
  EXPECT_EQ(this_clock_id(), this_clock_id());
  EXPECT_NE(this_clock_id(), 0u);
}

}  // namespace
