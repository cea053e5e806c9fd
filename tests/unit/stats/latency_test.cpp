// Latency histogram and RFC 3550 jitter (src/stats/latency.hpp).
#include "stats/latency.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

using rateline::stats::JitterEstimator;
using rateline::stats::LatencyHistogram;

std::vector<uint64_t> log_uniform(size_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(std::log(lo), std::log(hi));
  std::vector<uint64_t> v(n);
  for (auto& x : v) x = static_cast<uint64_t>(std::exp(u(rng)));
  return v;
}

// Nearest-rank percentile: the smallest value with at least q*n samples at or below it.
uint64_t exact_quantile(std::vector<uint64_t> sorted, double q) {
  std::sort(sorted.begin(), sorted.end());
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

TEST(LatencyHistogram, EmptyReportsZeros) {
  LatencyHistogram h;
  EXPECT_EQ(h.samples(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.quantile(0.5), 0u);
}

TEST(LatencyHistogram, SmallValuesAreExact) {
  LatencyHistogram h;
  for (uint64_t v = 0; v < 8; ++v) h.record(v);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 7u);
  EXPECT_DOUBLE_EQ(h.mean(), 3.5);
  EXPECT_EQ(h.quantile(0.125), 0u);
  EXPECT_EQ(h.quantile(0.5), 3u);
  EXPECT_EQ(h.quantile(1.0), 7u);
}

TEST(LatencyHistogram, SingleSampleQuantilesAreThatSample) {
  LatencyHistogram h;
  h.record(123'456);
  for (double q : {0.001, 0.5, 0.99, 1.0}) EXPECT_EQ(h.quantile(q), 123'456u) << q;  // capped at max
  EXPECT_EQ(h.min(), 123'456u);
  EXPECT_EQ(h.max(), 123'456u);
}

TEST(LatencyHistogram, QuantilesWithinOneEighthOfExactOnRandomData) {
  struct Case {
    double lo, hi;
    uint64_t seed;
  };
  for (const Case c : {Case{1, 1e10, 1}, Case{1000, 2000, 2}, Case{5e4, 5e6, 3}, Case{1, 64, 4}}) {
    const auto data = log_uniform(100'000, c.lo, c.hi, c.seed);
    LatencyHistogram h;
    for (uint64_t x : data) h.record(x);
    ASSERT_EQ(h.samples(), data.size());
    for (double q : {0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1.0}) {
      const double exact = static_cast<double>(exact_quantile(data, q));
      const double got = static_cast<double>(h.quantile(q));
      EXPECT_LE(std::fabs(got - exact), 0.125 * exact + 1.0) << "range " << c.lo << ".." << c.hi << " q " << q
                                                          << " exact " << exact << " got " << got;
    }
    EXPECT_EQ(h.quantile(1.0), *std::max_element(data.begin(), data.end()));
  }
}

TEST(LatencyHistogram, QuantileIsUpperBoundOfTheRankedSampleBucket) {
  // n = 1024 and q = k/1024: q*n is exact, so the ranked sample is unambiguous.
  // The result is never below it and at most 12.5% above it.
  const auto data = log_uniform(1024, 1, 1e12, 8);
  auto sorted = data;
  std::sort(sorted.begin(), sorted.end());
  LatencyHistogram h;
  for (uint64_t x : data) h.record(x);
  for (int k = 1; k <= 1024; ++k) {
    const uint64_t exact = sorted[k - 1];
    const uint64_t got = h.quantile(k / 1024.0);
    ASSERT_GE(got, exact) << "k " << k;
    ASSERT_LE(got - exact, exact / 8) << "k " << k;
  }
}

TEST(LatencyHistogram, MinMaxMeanAreExact) {
  const auto data = log_uniform(10'000, 10, 1e9, 5);
  LatencyHistogram h;
  long double sum = 0;
  for (uint64_t x : data) {
    h.record(x);
    sum += x;
  }
  EXPECT_EQ(h.min(), *std::min_element(data.begin(), data.end()));
  EXPECT_EQ(h.max(), *std::max_element(data.begin(), data.end()));
  EXPECT_NEAR(h.mean(), static_cast<double>(sum / data.size()), 1e-6 * h.mean());
}

TEST(LatencyHistogram, UpperIsStrictlyIncreasingAndCoversAllValues) {
  EXPECT_EQ(LatencyHistogram::upper(0), 0u);
  for (int i = 1; i < LatencyHistogram::kBuckets; ++i) {
    const uint64_t hi = LatencyHistogram::upper(i);
    const uint64_t prev = LatencyHistogram::upper(i - 1);
    ASSERT_GT(hi, prev) << "bucket " << i;
    // Buckets tile the number line: the one after the previous upper bound starts here.
    ASSERT_EQ(LatencyHistogram::index(prev + 1), i) << "bucket " << i;
    ASSERT_EQ(LatencyHistogram::index(hi), i) << "bucket " << i;
    if (hi == ~uint64_t{0}) break;
  }
  EXPECT_EQ(LatencyHistogram::upper(LatencyHistogram::index(~uint64_t{0})), ~uint64_t{0});
  EXPECT_LT(LatencyHistogram::index(~uint64_t{0}), LatencyHistogram::kBuckets);
}

TEST(LatencyHistogram, IndexMonotonicAndUpperBoundsValueAcrossMagnitudes) {
  std::vector<uint64_t> xs;
  for (int b = 0; b < 64; ++b) {
    const uint64_t p = uint64_t{1} << b;
    for (uint64_t d : {uint64_t{0}, uint64_t{1}, uint64_t{2}, p / 3, p / 2, p - 1}) {
      xs.push_back(p + d);
      xs.push_back(p - 1 - std::min(d, p - 1));
    }
  }
  std::mt19937_64 rng(6);
  for (int i = 0; i < 100'000; ++i) xs.push_back(rng() >> (rng() % 64));
  xs.push_back(~uint64_t{0});
  std::sort(xs.begin(), xs.end());
  int prev_idx = -1;
  for (uint64_t x : xs) {
    const int idx = LatencyHistogram::index(x);
    ASSERT_GE(idx, 0);
    ASSERT_LT(idx, LatencyHistogram::kBuckets);
    ASSERT_GE(idx, prev_idx) << "index not monotonic at " << x;
    prev_idx = idx;
    const uint64_t hi = LatencyHistogram::upper(idx);
    ASSERT_GE(hi, x) << "upper(index(x)) < x for x = " << x;
    ASSERT_LE(hi - x, x / 8) << "bucket wider than 12.5% at x = " << x;
  }
}

TEST(LatencyHistogram, MergeEqualsRecordingEverything) {
  const auto data = log_uniform(50'000, 100, 1e8, 7);
  LatencyHistogram all, a, b;
  for (size_t i = 0; i < data.size(); ++i) {
    all.record(data[i]);
    (i % 3 == 0 ? a : b).record(data[i]);
  }
  LatencyHistogram merged;
  merged.merge(a);
  merged.merge(b);
  EXPECT_EQ(merged.samples(), all.samples());
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.max(), all.max());
  EXPECT_DOUBLE_EQ(merged.mean(), all.mean());
  for (double q : {0.01, 0.5, 0.9, 0.99, 0.999, 1.0}) EXPECT_EQ(merged.quantile(q), all.quantile(q)) << q;
}

TEST(LatencyHistogram, MergingEmptyChangesNothing) {
  LatencyHistogram h, empty;
  h.record(500);
  h.record(9000);
  h.merge(empty);
  EXPECT_EQ(h.samples(), 2u);
  EXPECT_EQ(h.min(), 500u);
  EXPECT_EQ(h.max(), 9000u);
  LatencyHistogram e2;
  e2.merge(h);
  EXPECT_EQ(e2.min(), 500u);
  EXPECT_EQ(e2.quantile(1.0), 9000u);
}

TEST(JitterEstimator, MatchesHandComputedRfc3550) {
  // tx: 0, 1000, 2000, 3000; rx: 500, 1600, 2450, 3700
  // D = 100, -150, 250;  J1 = 100/16 = 6.25
  // J2 = 6.25 + (150 - 6.25)/16 = 15.234375
  // J3 = 15.234375 + (250 - 15.234375)/16 = 29.9072265625
  JitterEstimator j;
  j.record(0, 500);
  EXPECT_EQ(j.jitter_ns(), 0.0);
  j.record(1000, 1600);
  EXPECT_DOUBLE_EQ(j.jitter_ns(), 6.25);
  j.record(2000, 2450);
  EXPECT_DOUBLE_EQ(j.jitter_ns(), 15.234375);
  j.record(3000, 3700);
  EXPECT_DOUBLE_EQ(j.jitter_ns(), 29.9072265625);
}

TEST(JitterEstimator, ConstantDelayHasZeroJitter) {
  JitterEstimator j;
  for (uint64_t i = 0; i < 1000; ++i) j.record(i * 10'000, i * 10'000 + 42'000);
  EXPECT_EQ(j.jitter_ns(), 0.0);
}

TEST(JitterEstimator, ConvergesToConstantAbsoluteDifference) {
  // Alternating delay 0 / 800 ns: |D| = 800 every time, J -> 800.
  JitterEstimator j;
  for (uint64_t i = 0; i < 2000; ++i) j.record(i * 10'000, i * 10'000 + (i % 2 ? 800 : 0));
  EXPECT_NEAR(j.jitter_ns(), 800.0, 1e-6);
}

TEST(JitterEstimator, ForgedStampsWrapInsteadOfOverflowing) {
  // D = (0 - 0) - (2^64 - 1 - 0) wraps to 1 in 64-bit two's complement: |D| = 1.
  JitterEstimator j;
  j.record(0, 0);
  j.record(~uint64_t{0}, 0);
  EXPECT_DOUBLE_EQ(j.jitter_ns(), 1.0 / 16.0);
}

}  // namespace
