// blocktest's per-block completion latency: the summary (p50/p99/p99.9/max,
// results.hpp) against known distributions, and the engine's samples.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tools/blocktest/engine.hpp"
#include "tools/blocktest/results.hpp"
#include "tools/blocktest/target.hpp"
#include "util/errors.hpp"

using namespace rateline;
using namespace rateline::blocktest;
using stats::LatencyHistogram;

namespace {

// The definition, by counting: the smallest sample x with at least
// permille/1000 of all samples <= x (compared in integers, no rounding).
uint64_t nearest_rank(std::vector<uint64_t> v, uint64_t permille) {
  std::sort(v.begin(), v.end());
  const uint64_t n = v.size();
  for (uint64_t i = 0; i < n; ++i)
    if ((i + 1) * 1000 >= permille * n) return v[i];
  return v.back();
}

LatencySummary summarize(const std::vector<uint64_t>& v) {
  LatencyHistogram h;
  for (uint64_t x : v) h.record(x);
  return summarize_latency(h);
}

// Reported percentile against the true one: never below, at most
// kLatencyRelError above (the bucket's width over its lower bound).
void expect_within_bound(const std::vector<uint64_t>& v, const std::string& what) {
  const LatencySummary l = summarize(v);
  EXPECT_EQ(l.samples, v.size()) << what;
  EXPECT_EQ(l.max_ns, *std::max_element(v.begin(), v.end())) << what << ": max is exact";
  const std::pair<uint64_t, uint64_t> got[] = {{500, l.p50_ns}, {990, l.p99_ns}, {999, l.p99_9_ns}};
  for (const auto& [permille, reported] : got) {
    const uint64_t exact = nearest_rank(v, permille);
    EXPECT_GE(reported, exact) << what << " p" << permille / 10.0;
    EXPECT_LE(static_cast<double>(reported - exact), kLatencyRelError * static_cast<double>(exact))
        << what << " p" << permille / 10.0 << ": exact " << exact << " reported " << reported;
  }
  EXPECT_LE(l.p50_ns, l.p99_ns) << what;
  EXPECT_LE(l.p99_ns, l.p99_9_ns) << what;
  EXPECT_LE(l.p99_9_ns, l.max_ns) << what;
}

TEST(LatencySummary, NoSamplesIsAllZero) {
  const LatencySummary l = summarize({});
  EXPECT_EQ(l.samples, 0u);
  EXPECT_EQ(l.p50_ns + l.p99_ns + l.p99_9_ns + l.max_ns, 0u);
}

TEST(LatencySummary, OneSampleIsEveryPercentile) {
  const LatencySummary l = summarize({123'456});
  EXPECT_EQ(l.p50_ns, 123'456u);
  EXPECT_EQ(l.p99_ns, 123'456u);
  EXPECT_EQ(l.p99_9_ns, 123'456u);
  EXPECT_EQ(l.max_ns, 123'456u);
}

TEST(LatencySummary, StatedBoundIsTheHistogramsBucketWidth) {
  EXPECT_DOUBLE_EQ(kLatencyRelError, 0.125);
  // The widest bucket relative to its smallest value: [8 << s, 9 << s).
  for (int s = 1; s < 50; ++s) {
    const uint64_t lo = uint64_t{8} << s;
    EXPECT_EQ(LatencyHistogram::upper(LatencyHistogram::index(lo)), (uint64_t{9} << s) - 1);
  }
}

// Values on bucket (upper) bounds come back exactly, whatever the spread:
// 1000 samples over 250 bounds from ~100 ns to ~1 s, four of each.
TEST(LatencySummary, ExactOnBucketBounds) {
  std::vector<uint64_t> v;
  const int first = LatencyHistogram::index(100);
  for (int j = 0; j < 1000; ++j) v.push_back(LatencyHistogram::upper(first + j / 4));
  std::shuffle(v.begin(), v.end(), std::mt19937_64(1));
  const LatencySummary l = summarize(v);
  EXPECT_EQ(l.p50_ns, nearest_rank(v, 500));
  EXPECT_EQ(l.p99_ns, nearest_rank(v, 990));
  EXPECT_EQ(l.p99_9_ns, nearest_rank(v, 999));
  EXPECT_EQ(l.max_ns, LatencyHistogram::upper(first + 249));
  // Hand-checked ranks: p50 = 500th sample (bound 124), p99 = 990th (247), p99.9 = 999th (249).
  EXPECT_EQ(l.p50_ns, LatencyHistogram::upper(first + 124));
  EXPECT_EQ(l.p99_ns, LatencyHistogram::upper(first + 247));
  EXPECT_EQ(l.p99_9_ns, LatencyHistogram::upper(first + 249));
}

// Nearest rank exactly, for every sample count up to 2500: n - m samples of a
// fast bound and m of a slow one, with m around each percentile's tail size.
// (0.999 * n in floating point lands on either side of whole numbers.)
TEST(LatencySummary, NearestRankForEveryCount) {
  const uint64_t fast = LatencyHistogram::upper(LatencyHistogram::index(20'000));
  const uint64_t slow = LatencyHistogram::upper(LatencyHistogram::index(3'000'000));
  for (uint64_t n = 1; n <= 2500; ++n) {
    for (uint64_t tail : {n / 2, n / 100, n / 1000}) {
      for (uint64_t m : {tail, tail + 1}) {
        if (m > n) continue;
        LatencyHistogram h;
        for (uint64_t i = 0; i < n; ++i) h.record(i < n - m ? fast : slow);
        const LatencySummary l = summarize_latency(h);
        // At least permille/1000 of n at or below `fast` <=> (n - m) * 1000 >= permille * n.
        auto want = [&](uint64_t permille) { return (n - m) * 1000 >= permille * n ? fast : slow; };
        ASSERT_EQ(l.p50_ns, want(500)) << "n " << n << " m " << m;
        ASSERT_EQ(l.p99_ns, want(990)) << "n " << n << " m " << m;
        ASSERT_EQ(l.p99_9_ns, want(999)) << "n " << n << " m " << m;
      }
    }
  }
}

// Shapes disk latencies take, in ns: within the stated bound everywhere.
TEST(LatencySummary, WithinTheBoundOnKnownDistributions) {
  std::mt19937_64 rng(42);
  const size_t n = 200'000;
  std::vector<uint64_t> v(n);

  std::uniform_int_distribution<uint64_t> uni(50'000, 150'000);  // a device at 100 us +- 50
  for (auto& x : v) x = uni(rng);
  expect_within_bound(v, "uniform 50..150 us");

  std::exponential_distribution<double> ex(1.0 / 80'000);  // queueing: mean 80 us
  for (auto& x : v) x = 1 + static_cast<uint64_t>(ex(rng));
  expect_within_bound(v, "exponential mean 80 us");

  std::lognormal_distribution<double> ln(std::log(30'000.0), 1.0);  // long tail around 30 us
  for (auto& x : v) x = 1 + static_cast<uint64_t>(ln(rng));
  expect_within_bound(v, "log-normal median 30 us");

  // Bimodal: 98.5% page-cache hits at ~2 us, 1.5% device reads at ~5 ms,
  // so p50 is a hit and p99, p99.9 are device reads.
  std::bernoulli_distribution miss(0.015);
  std::normal_distribution<double> hit(2'000, 200), dev(5'000'000, 500'000);
  for (auto& x : v) x = static_cast<uint64_t>(std::max(1.0, miss(rng) ? dev(rng) : hit(rng)));
  expect_within_bound(v, "bimodal 2 us / 5 ms");
  const LatencySummary l = summarize(v);
  EXPECT_LT(l.p50_ns, 10'000u);
  EXPECT_GT(l.p99_ns, 1'000'000u);

  for (uint64_t i = 0; i < 16; ++i) v[i] = i;  // exact below 16 ns
  v.resize(16);
  const LatencySummary small = summarize(v);
  EXPECT_EQ(small.p50_ns, 7u);
  EXPECT_EQ(small.p99_ns, 15u);
  EXPECT_EQ(small.max_ns, 15u);
}

// The engine: one sample per block that completed, each no longer than the
// phase, none zero (a submission and its completion are two clock reads).
TEST(LatencyEngine, OneSamplePerBlockInsideThePhase) {
  EngineOptions o;
  o.qd = 8;
  o.max_slot_bytes = 4096;
  o.placement = Placement::none;  // tests do not pin or change scheduling
  std::unique_ptr<Engine> e;
  try {
    e = std::make_unique<Engine>(o);
  } catch (const BackendUnavailable&) {
    GTEST_SKIP() << "io_uring unavailable";
  }
  const char* base = std::getenv("TMPDIR");
  std::string dir = std::string(base && *base ? base : "/tmp") + "/blocktest-lat-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  {
    TestFile f(dir, "lat", false);
    e->attach(f.fd());
    std::atomic<uint64_t> done{0};
    std::atomic<bool> stop{false};
    for (bool write : {true, false}) {
      PhasePlan p;
      p.write = write;
      p.block_bytes = 4096;
      p.blocks = 200;
      p.qd = 8;
      p.wait_batch = 2;
      const PhaseResult r = e->run(p, done, stop);
      EXPECT_EQ(r.error, 0);
      EXPECT_EQ(r.blocks_ok, 200u);
      EXPECT_EQ(r.completion_ns.samples(), r.blocks_ok) << (write ? "write" : "read");
      EXPECT_GT(r.completion_ns.min(), 0u);
      EXPECT_LE(r.completion_ns.max(), r.end_ns - r.start_ns);
    }
    e->detach();
  }  // the file goes with its TestFile
  rmdir(dir.c_str());
}

}  // namespace
