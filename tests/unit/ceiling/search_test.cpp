#include "tools/ceiling/search.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace rateline::ceiling;

namespace {

// A receiver that drops whatever exceeds `ceiling` pps (a shaped link): loss grows with the excess.
RatePoint trial_at(double asked, double ceiling, double achieved_ratio = 1.0, double rx_cap = 0) {
  RatePoint p;
  p.asked_pps = asked;
  p.achieved_pps = asked > 0 ? asked * achieved_ratio : 5 * ceiling;  // unpaced: the sender's maximum
  const double offered = asked > 0 ? asked : p.achieved_pps;
  p.sent = 100000;
  p.lost = offered > ceiling ? static_cast<uint64_t>(std::ceil((offered - ceiling) / offered * 100000)) : 0;
  p.rx_pps = std::min(offered, rx_cap > 0 ? rx_cap : ceiling);
  return p;
}

double run(RateSearch& s, double ceiling, int* trials = nullptr) {
  s.add(trial_at(0, ceiling));
  int n = 1;
  while (auto t = s.next_target()) {
    s.add(trial_at(*t, ceiling));
    ++n;
  }
  if (trials) *trials = n;
  return s.lo() ? s.lo()->rate : 0;
}

}  // namespace

TEST(RateSearch, FindsAShapedCeilingWithinTheResolution) {
  for (double ceiling : {1733.7, 4921.3, 33784.0, 812345.0}) {
    RateSearch s({0.0, 0.01, 10, 30});
    int trials = 0;
    const double ndr = run(s, ceiling, &trials);
    EXPECT_EQ(s.state(), SearchState::converged) << ceiling;
    EXPECT_LE(ndr, ceiling);
    EXPECT_GE(ndr, ceiling * 0.99) << ceiling;
    EXPECT_LE(trials, 8) << "the receive-rate estimate should close the bracket fast";
  }
}

TEST(RateSearch, ConvergesWithoutAUsefulEstimate) {
  // The receiver reports nothing useful (rx rate 0): plain halving and bisection still get there.
  RateSearch s({0.0, 0.01, 10, 40});
  RatePoint first = trial_at(0, 1000);
  first.rx_pps = 0;
  s.add(first);
  while (auto t = s.next_target()) {
    RatePoint p = trial_at(*t, 1000);
    p.rx_pps = 0;
    s.add(p);
  }
  ASSERT_EQ(s.state(), SearchState::converged);
  EXPECT_GE(s.lo()->rate, 990);
  EXPECT_LE(s.lo()->rate, 1000);
}

TEST(RateSearch, PassAtTheSendersMaximumIsSenderLimited) {
  RateSearch s({0.0, 0.01, 10, 20});
  RatePoint p;  // unpaced, nothing lost
  p.achieved_pps = p.rx_pps = 250000;
  p.sent = 250000;
  s.add(p);
  EXPECT_EQ(s.state(), SearchState::sender_limited);
  EXPECT_FALSE(s.next_target());
}

TEST(RateSearch, LossEvenAtTheMinimumRate) {
  RateSearch s({0.0, 0.01, 100, 40});
  s.add(trial_at(0, 1));
  while (auto t = s.next_target()) s.add(trial_at(*t, 1));
  EXPECT_EQ(s.state(), SearchState::below_min);
  EXPECT_FALSE(s.lo());
}

TEST(RateSearch, AShortPassCountsAtTheAchievedRate) {
  RateSearch s({0.0, 0.01, 10, 20});
  s.add(trial_at(0, 1000));
  RatePoint p = trial_at(990, 1000, 0.80);  // the sender reached only 792 pps
  s.add(p);
  ASSERT_TRUE(s.lo());
  EXPECT_DOUBLE_EQ(s.lo()->rate, 990 * 0.80);
  RatePoint q = trial_at(990, 1000, 0.97);  // within the 5% allowance: counts as asked
  s.add(q);
  EXPECT_DOUBLE_EQ(s.lo()->rate, 990);
}

TEST(RateSearch, APassAboveAFailureIsNotTrusted) {
  RateSearch s({0.0, 0.01, 10, 20});
  RatePoint fail;
  fail.asked_pps = fail.achieved_pps = 1000;
  fail.sent = 1000;
  fail.lost = 5;
  RatePoint pass;
  pass.asked_pps = pass.achieved_pps = 1100;
  pass.sent = 1100;
  s.add(fail);
  s.add(pass);
  EXPECT_FALSE(s.lo());
  EXPECT_DOUBLE_EQ(s.hi()->rate, 1000);
}

TEST(RateSearch, PdrThresholdAndSeed) {
  RateSearch ndr({0.0, 0.01, 10, 20});
  RateSearch pdr({0.005, 0.01, 10, 20});
  RatePoint p;
  p.asked_pps = p.achieved_pps = 1000;
  p.sent = 1000;
  p.lost = 4;  // 0.4%: fails NDR, passes PDR
  ndr.add(p);
  pdr.seed({p});
  EXPECT_FALSE(ndr.lo());
  ASSERT_TRUE(pdr.lo());
  EXPECT_EQ(pdr.trials(), 0u);  // seeded trials are history, not this search's budget
}

TEST(RateSearch, AFewNoisyFailuresUnderTheCeilingDoNotHalveIt) {
  // A 1734 pps shaper on a host that stalls: the three trials after the first lose a few packets below the
  // ceiling (the queue overflowed during a stall). With ten trials the NDR must still land near the ceiling
  // (halving after three failures left it at 0.87x in this case).
  const double ceiling = 1734;
  RateSearch s({0.0, 0.01, 10, 10});
  s.add(trial_at(ceiling * 1.15, ceiling));
  for (int noisy = 0; noisy < 3; ++noisy) {
    auto t = s.next_target();
    ASSERT_TRUE(t);
    EXPECT_LT(*t, ceiling);
    RatePoint p = trial_at(*t, ceiling);
    p.lost = 12;
    s.add(p);
  }
  while (auto t = s.next_target()) s.add(trial_at(*t, ceiling));
  ASSERT_TRUE(s.lo());
  EXPECT_LE(s.lo()->rate, ceiling);
  EXPECT_GE(s.lo()->rate, ceiling * 0.9);
}

TEST(RateSearch, StopsAtTheTrialBudget) {
  RateSearch s({0.0, 0.0001, 10, 3});
  s.add(trial_at(0, 1000, 1.0, 1));
  while (auto t = s.next_target()) s.add(trial_at(*t, 1000, 1.0, 1));
  EXPECT_EQ(s.state(), SearchState::out_of_trials);
  EXPECT_EQ(s.trials(), 3u);
}

TEST(BurstSearch, FindsTheLongestLosslessBurst) {
  for (uint32_t limit : {1u, 7u, 16u, 23u, 65u, 1000u}) {
    BurstSearch b(16, 65536, 60);
    while (auto n = b.next()) b.add(*n, *n <= limit);
    EXPECT_EQ(b.longest_pass(), limit);
    EXPECT_EQ(b.shortest_fail(), limit + 1);
  }
}

TEST(BurstSearch, StopsAtTheMaximum) {
  BurstSearch b(16, 100, 60);
  while (auto n = b.next()) b.add(*n, true);
  EXPECT_EQ(b.longest_pass(), 100u);
  EXPECT_TRUE(b.reached_max());
}

TEST(BurstSearch, EvenOnePacketLost) {
  BurstSearch b(16, 100, 60);
  while (auto n = b.next()) b.add(*n, false);
  EXPECT_EQ(b.longest_pass(), 0u);
}

// Only a loss with the sender off its schedule is set aside; a pass stands, and so does a loss on schedule.
TEST(SetAside, OnlyLossesWhileTheSenderSlipped) {
  EXPECT_TRUE(set_aside_for_slips(false, 1));
  EXPECT_FALSE(set_aside_for_slips(false, 0));
  EXPECT_FALSE(set_aside_for_slips(true, 5));
  EXPECT_FALSE(set_aside_for_slips(true, 0));
  EXPECT_GE(kMaxSetAside, 1u);
}

TEST(LoadVerdict, OneTrialAtRatioZeroIsRfc2544) {
  const LoadPolicy rfc;
  EXPECT_EQ(load_verdict(1, 0, rfc), Verdict::pass);
  EXPECT_EQ(load_verdict(0, 1, rfc), Verdict::fail);
  EXPECT_EQ(load_verdict(0, 0, rfc), Verdict::undecided);
}

TEST(LoadVerdict, TwoTrialsAtHalfTakeTwoLossesToFail) {
  const LoadPolicy p{2, 0.5};
  EXPECT_EQ(load_verdict(1, 0, p), Verdict::pass);       // a clean first trial decides
  EXPECT_EQ(load_verdict(0, 1, p), Verdict::undecided);  // one loss: run it again
  EXPECT_EQ(load_verdict(1, 1, p), Verdict::pass);       // one stall in two trials
  EXPECT_EQ(load_verdict(0, 2, p), Verdict::fail);
}

TEST(LoadVerdict, ThreeTrialsAtHalfIsAMajority) {
  const LoadPolicy p{3, 0.5};
  EXPECT_EQ(load_verdict(1, 0, p), Verdict::undecided);
  EXPECT_EQ(load_verdict(2, 0, p), Verdict::pass);
  EXPECT_EQ(load_verdict(1, 1, p), Verdict::undecided);
  EXPECT_EQ(load_verdict(0, 2, p), Verdict::fail);
  EXPECT_EQ(load_verdict(2, 1, p), Verdict::pass);
  EXPECT_EQ(load_verdict(1, 2, p), Verdict::fail);
}

TEST(LoadVerdict, EveryPolicyDecidesWithinItsTrials) {
  for (uint32_t n = 1; n <= 8; ++n)
    for (double x : {0.0, 0.1, 0.25, 0.5, 0.75, 0.9})
      for (uint32_t f = 0; f <= n; ++f)
        EXPECT_NE(load_verdict(n - f, f, LoadPolicy{n, x}), Verdict::undecided) << n << " trials, ratio " << x << ", " << f << " lossy";
}
