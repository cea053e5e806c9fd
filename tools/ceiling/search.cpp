#include "search.hpp"

#include <algorithm>
#include <cmath>

namespace rateline::ceiling {

const char* state_name(SearchState s) {
  switch (s) {
    case SearchState::searching: return "searching";
    case SearchState::converged: return "converged";
    case SearchState::sender_limited: return "sender_limited";
    case SearchState::below_min: return "below_min";
    case SearchState::out_of_trials: return "out_of_trials";
  }
  return "?";
}

double trial_rate(double asked_pps, double achieved_pps, bool passed) {
  if (asked_pps <= 0) return achieved_pps;
  if (passed && achieved_pps < asked_pps * (1 - kSenderShortfall)) return achieved_pps;
  return asked_pps;
}

Verdict load_verdict(uint32_t passes, uint32_t fails, const LoadPolicy& p) {
  const double n = p.trials < 1 ? 1.0 : static_cast<double>(p.trials);
  const double allowed = p.exceed_ratio * n + 1e-9;  // lossy trials a passing rate may hold
  if (static_cast<double>(fails) > allowed) return Verdict::fail;
  if (n - static_cast<double>(passes) <= allowed) return Verdict::pass;
  return Verdict::undecided;
}

void RateSearch::add(RatePoint t) {
  t.rate = trial_rate(t.asked_pps, t.achieved_pps, passes(t));
  points_.push_back(t);
  ++own_trials_;
  last_passed_ = passes(t);
  if (last_passed_) {
    ++passes_in_a_row_;
    fails_in_a_row_ = 0;
  } else {
    ++fails_in_a_row_;
    passes_in_a_row_ = 0;
  }
}

void RateSearch::seed(const std::vector<RatePoint>& earlier) {
  for (RatePoint t : earlier) {
    t.rate = trial_rate(t.asked_pps, t.achieved_pps, passes(t));
    points_.push_back(t);
  }
  if (!earlier.empty()) last_passed_ = passes(earlier.back());
}

std::optional<RatePoint> RateSearch::hi() const {
  std::optional<RatePoint> h;
  for (const auto& t : points_)
    if (!passes(t) && (!h || t.rate < h->rate)) h = t;
  return h;
}

std::optional<RatePoint> RateSearch::lo() const {
  // A pass above a failure is not trusted (the result was not monotonic): the bound stays below hi.
  const auto h = hi();
  std::optional<RatePoint> l;
  for (const auto& t : points_)
    if (passes(t) && (!h || t.rate < h->rate) && (!l || t.rate > l->rate)) l = t;
  return l;
}

SearchState RateSearch::state() const {
  const auto h = hi();
  const auto l = lo();
  if (!points_.empty() && !h) return SearchState::sender_limited;
  if (h && l && h->rate - l->rate <= p_.resolution * h->rate) return SearchState::converged;
  if (h && !l && h->rate <= p_.min_pps * (1 + p_.resolution)) return SearchState::below_min;
  if (own_trials_ >= p_.max_trials) return SearchState::out_of_trials;
  return SearchState::searching;
}

std::optional<double> RateSearch::next_target() const {
  if (points_.empty() || state() != SearchState::searching) return std::nullopt;
  const RatePoint h = *hi();
  const auto l = lo();
  const double res = p_.resolution;
  const RatePoint& last = points_.back();
  double t;
  if (!l) {
    if (last.rx_pps <= 0) {
      t = h.rate / 2;
    } else {
      // A failure that still carried nearly all of it (a few packets lost near the ceiling, or to a host stall)
      // says little about how far down the pass is: step down one resolution step, doubling with each further
      // failure up to halving. Halving at once threw a noisy search down to half the ceiling, and ten trials
      // could not climb back (seen in CI: 872 pps NDR under a 1734 pps shaper).
      const double step = std::min(0.5, res * std::pow(2.0, std::max<int>(0, static_cast<int>(fails_in_a_row_) - 1)));
      t = std::min(last.rx_pps * (1 - res / 2), h.rate * (1 - step));
    }
    return std::max(t, p_.min_pps);
  }
  const double lo_pps = l->rate, hi_pps = h.rate;
  const double mid = (lo_pps + hi_pps) / 2;
  if (last_passed_) {
    const double step = res * std::pow(2.0, std::max<int>(0, static_cast<int>(passes_in_a_row_) - 1));
    t = std::min(lo_pps * (1 + step), mid);
  } else {
    const double est = last.rx_pps * (1 - res / 2);
    const double margin = res * hi_pps / 2;
    t = est > lo_pps + margin && est < hi_pps - margin ? est : mid;
  }
  return t;
}

uint32_t RateSearch::remaining_estimate() const {
  if (state() != SearchState::searching) return 0;
  const auto h = hi();
  const auto l = lo();
  if (!h) return 1;
  const double width = l ? (h->rate - l->rate) / h->rate : 1.0;
  const double steps = std::ceil(std::log2(std::max(1.0, width / p_.resolution)));
  return std::min<uint32_t>(static_cast<uint32_t>(steps) + (l ? 0 : 1), p_.max_trials - std::min(p_.max_trials, own_trials_));
}

void BurstSearch::add(uint32_t burst, bool passed) {
  ++trials_;
  if (passed) lo_ = std::max(lo_, burst);
  else if (!hi_ || burst < hi_) hi_ = burst;
  if (hi_ && lo_ >= hi_) lo_ = hi_ - 1;  // not monotonic: trust the failure
  if (!hi_) next_ = std::min<uint64_t>(max_, uint64_t{std::max<uint32_t>(lo_, 1)} * 2);
  else next_ = lo_ + (hi_ - lo_) / 2;
}

std::optional<uint32_t> BurstSearch::next() const {
  if (trials_ >= max_trials_) return std::nullopt;
  if (hi_ && hi_ - lo_ <= 1) return std::nullopt;
  if (!hi_ && lo_ >= max_) return std::nullopt;
  if (trials_ == 0) return next_;
  if (hi_ && next_ <= lo_) return std::nullopt;
  return std::max<uint32_t>(next_, 1);
}

uint32_t BurstSearch::remaining_estimate() const {
  if (!next()) return 0;
  if (!hi_) return static_cast<uint32_t>(std::ceil(std::log2(static_cast<double>(max_) / std::max<uint32_t>(lo_, 1)))) + 4;
  return static_cast<uint32_t>(std::ceil(std::log2(static_cast<double>(hi_ - lo_))));
}

}  // namespace rateline::ceiling
