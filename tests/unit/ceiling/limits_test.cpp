#include "tools/ceiling/limits.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace rateline::ceiling;

namespace {

proto::TrialRequest within_defaults() {
  proto::TrialRequest t;
  t.id = 1;
  t.size = 1400;
  t.port = 9000;
  t.max_ms = 15000;  // what a sender's default 2 s trial asks
  t.backend = "socket";
  return t;
}

// The refusal's code, and whether its text names `cap`.
::testing::AssertionResult refused(const proto::TrialRequest& t, const TrialLimits& l, const std::string& code,
                                   const std::string& cap) {
  const auto r = check_limits(t, l);
  if (!r) return ::testing::AssertionFailure() << "accepted";
  if (r->code != code) return ::testing::AssertionFailure() << "code " << r->code << ": " << r->text;
  if (r->text.find(cap) == std::string::npos) return ::testing::AssertionFailure() << "does not name " << cap << ": " << r->text;
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(Limits, ServeDefaultsAcceptWhatADefaultSenderAsks) {
  const TrialLimits l = TrialLimits::serve_defaults();
  EXPECT_EQ(l.max_threads, 4u);
  EXPECT_EQ(l.max_rcvbuf, 64 << 20);
  EXPECT_EQ(l.port_lo, 9000);
  EXPECT_EQ(l.port_hi, 9099);
  EXPECT_EQ(l.max_trial_ms, 60000u);
  EXPECT_FALSE(l.allow_test_aids);
  EXPECT_FALSE(l.allow_dpdk);
  EXPECT_FALSE(check_limits(within_defaults(), l));
  // Exactly at each cap is within it.
  proto::TrialRequest t = within_defaults();
  t.threads = 4;
  t.rcvbuf = 64 << 20;
  t.port = 9099;
  t.max_ms = 60000;
  EXPECT_FALSE(check_limits(t, l));
  t.port = 9000;
  EXPECT_FALSE(check_limits(t, l));
}

TEST(Limits, EachCapRefusedAndNamed) {
  const TrialLimits l = TrialLimits::serve_defaults();
  proto::TrialRequest t = within_defaults();
  t.threads = 5;
  EXPECT_TRUE(refused(t, l, "limit", "--max-threads 4"));
  t = within_defaults();
  t.rcvbuf = (64 << 20) + 1;
  EXPECT_TRUE(refused(t, l, "limit", "--max-rcvbuf 64M"));
  t.rcvbuf = 1 << 30;
  EXPECT_TRUE(refused(t, l, "limit", "rcvbuf=1073741824"));
  t = within_defaults();
  t.port = 8999;
  EXPECT_TRUE(refused(t, l, "limit", "--ports 9000-9099"));
  t.port = 9100;
  EXPECT_TRUE(refused(t, l, "limit", "--ports 9000-9099"));
  t = within_defaults();
  t.max_ms = 60001;
  EXPECT_TRUE(refused(t, l, "limit", "--max-trial 60s"));
  t.max_ms = 3'600'000;
  EXPECT_TRUE(refused(t, l, "limit", "max_ms=3600000"));
}

TEST(Limits, TestAidsAndDpdkOnlyWhenTheOperatorSaysSo) {
  TrialLimits l = TrialLimits::serve_defaults();
  proto::TrialRequest t = within_defaults();
  t.slow_us = 1;
  EXPECT_TRUE(refused(t, l, "refused", "--serve-allow-test-aids"));
  l.allow_test_aids = true;
  EXPECT_FALSE(check_limits(t, l));
  t = within_defaults();
  t.backend = "dpdk";
  EXPECT_TRUE(refused(t, l, "refused", "--serve-dpdk-device"));
  l.allow_dpdk = true;
  EXPECT_FALSE(check_limits(t, l));
}

TEST(Limits, TheWholeRemoteRequestFromTheBriefIsRefused) {
  // threads=64 rcvbuf=1G slow_us=1s max_ms=1h: over four caps at once; the first one is named.
  proto::TrialRequest t = within_defaults();
  t.threads = 64;
  t.rcvbuf = 1 << 30;
  t.slow_us = 1'000'000;
  t.max_ms = 3'600'000;
  EXPECT_TRUE(refused(t, TrialLimits::serve_defaults(), "limit", "--max-threads"));
}

TEST(Limits, UnlimitedTakesAllTheProtocolAllows) {
  // The local lab's agent (--serve-stdio): the protocol's own bounds are the only ones.
  proto::TrialRequest t = within_defaults();
  t.threads = 64;
  t.rcvbuf = 1 << 30;
  t.port = 1024;
  t.slow_us = 1'000'000;
  t.max_ms = 3'600'000;
  t.backend = "dpdk";
  EXPECT_FALSE(check_limits(t, TrialLimits::unlimited()));
  t.port = 65535;
  EXPECT_FALSE(check_limits(t, TrialLimits::unlimited()));
}
