// One-way latency histogram and RFC 3550 interarrival jitter.
//
// Latency = receiver's CLOCK_MONOTONIC at batch arrival - sender's stamp. It
// is only meaningful when both ends share a clock (same host, or namespaces
// of one host); negative samples (clocks apart) are counted, not recorded.
//
// Histogram: log-linear buckets, 8 sub-buckets per power of two, so any
// percentile is reported within 12.5% of the true value; 64 * 8 buckets
// cover 1 ns .. 2^63 ns with no allocation.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace rateline::stats {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 3;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kBuckets = 64 * kSub;

  void record(uint64_t ns) {
    ++buckets_[index(ns)];
    ++samples_;
    if (ns < min_) min_ = ns;
    if (ns > max_) max_ = ns;
    sum_ += ns;
  }
  void merge(const LatencyHistogram& o) {
    for (int i = 0; i < kBuckets; ++i) buckets_[i] += o.buckets_[i];
    samples_ += o.samples_;
    sum_ += o.sum_;
    if (o.min_ < min_) min_ = o.min_;
    if (o.max_ > max_) max_ = o.max_;
  }

  // Adds samples binned elsewhere with this index() (the XDP backend's
  // in-kernel histogram): `counts` has kBuckets entries.
  void merge_binned(const uint64_t* counts, uint64_t sum_ns, uint64_t min_ns, uint64_t max_ns) {
    uint64_t n = 0;
    for (int i = 0; i < kBuckets; ++i) {
      buckets_[i] += counts[i];
      n += counts[i];
    }
    if (!n) return;
    samples_ += n;
    sum_ += sum_ns;
    if (min_ns < min_) min_ = min_ns;
    if (max_ns > max_) max_ = max_ns;
  }

  uint64_t samples() const { return samples_; }
  uint64_t min() const { return samples_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  uint64_t sum_ns() const { return sum_; }
  uint64_t bucket(int i) const { return buckets_[static_cast<std::size_t>(i)]; }  // samples in bucket i (index())
  double mean() const { return samples_ ? static_cast<double>(sum_) / static_cast<double>(samples_) : 0.0; }

  // Upper bound of the bucket holding the q-quantile (0 < q <= 1), capped at max.
  uint64_t quantile(double q) const {
    if (!samples_) return 0;
    const auto rank = static_cast<uint64_t>(q * static_cast<double>(samples_) + 0.5);
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += buckets_[i];
      if (seen >= (rank ? rank : 1)) {
        const uint64_t hi = upper(i);
        return hi < max_ ? hi : max_;
      }
    }
    return max_;
  }

  static int index(uint64_t ns) {
    if (ns < kSub) return static_cast<int>(ns);
    const int msb = 63 - std::countl_zero(ns);
    const int shift = msb - kSubBits;
    const int sub = static_cast<int>((ns >> shift) & (kSub - 1));
    return (shift + 1) * kSub + sub;
  }
  static uint64_t upper(int idx) {
    if (idx < kSub) return static_cast<uint64_t>(idx);
    const int shift = idx / kSub - 1;
    const uint64_t sub = static_cast<uint64_t>(idx % kSub);
    const uint64_t base = (uint64_t{kSub} + sub) << shift;
    return base + ((uint64_t{1} << shift) - 1);
  }

 private:
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t samples_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = ~0ull;
  uint64_t max_ = 0;
};

// RFC 3550 6.4.1: D(i,j) = (Rj - Ri) - (Sj - Si); J += (|D| - J) / 16.
// Kept in ns as a double: the estimator is a running filter, not a count.
class JitterEstimator {
 public:
  void record(uint64_t tx_ns, uint64_t rx_ns) {
    if (have_prev_) {
      // Wrapping unsigned arithmetic, then |D| of the two's complement value:
      // a forged tx stamp must not overflow a signed subtraction.
      const uint64_t d = (rx_ns - prev_rx_) - (tx_ns - prev_tx_);
      const uint64_t abs_d = d >> 63 ? 0 - d : d;
      jitter_ns_ += (static_cast<double>(abs_d) - jitter_ns_) / 16.0;
    }
    prev_tx_ = tx_ns;
    prev_rx_ = rx_ns;
    have_prev_ = true;
  }
  double jitter_ns() const { return jitter_ns_; }
  // Takes a filter state computed elsewhere (the XDP backend keeps it in-kernel, in fixed point).
  void adopt(double jitter_ns) { jitter_ns_ = jitter_ns; }

 private:
  uint64_t prev_tx_ = 0;
  uint64_t prev_rx_ = 0;
  double jitter_ns_ = 0.0;
  bool have_prev_ = false;
};

}  // namespace rateline::stats
