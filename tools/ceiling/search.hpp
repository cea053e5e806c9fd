// The searches, as pure arithmetic over trial results (no I/O: tested alone).
//
// Rate search (RFC 2544 26.1 throughput; NDR and PDR): a trial at an offered
// rate passes when its loss ratio is at most the threshold (0 for NDR). Each
// trial has one `rate`, the offered rate it stands for (trial_rate()): the
// rate pktgen was asked for, which is what queues see while the sender keeps
// its schedule -- except for a pass where the sender fell more than
// kSenderShortfall short of it: that pass proves only the achieved rate. The
// highest passing rate below the lowest failing one is the lower bound `lo`,
// the lowest failing one the upper bound `hi`; the search ends when
// hi - lo <= resolution * hi. Next rate to try:
//   - no pass yet: just under the receive rate of the last failure (what the
//     receiver carried is the best estimate of what it can carry), and
//     at least `step` under hi, where step is one resolution step, doubling
//     with each further failure in a row up to one half (hi / 2 when the
//     receiver reported no rate);
//   - after a pass: lo * (1 + step), the step doubling with each further pass
//     (one resolution step first, so a good estimate closes in one trial);
//   - after a failure: its receive rate if that falls inside (lo, hi) by a
//     margin, else the midpoint.
// Never above the midpoint of (lo, hi) once both are known.
//
// Back-to-back (RFC 2544 26.4): the longest burst at --delay 0 with no loss;
// doubling until a failure, then bisection on the integer burst length.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace rateline::ceiling {

struct RatePoint {
  double rate = 0;          // the offered rate this trial stands for: set by RateSearch (trial_rate())
  double asked_pps = 0;     // 0 = unpaced (as fast as the sender goes)
  double achieved_pps = 0;  // the sender's measured rate
  double rx_pps = 0;        // what the receiver measured (received / its first-to-last time)
  uint64_t sent = 0, lost = 0;
  uint32_t tag = 0;         // the caller's index of the trial
  double loss_ratio() const { return sent ? static_cast<double>(lost) / static_cast<double>(sent) : 0.0; }
};

// A sender more than this far below the asked rate did not offer it.
inline constexpr double kSenderShortfall = 0.05;

// A trial that lost packets while the sender fell off its schedule (pace
// slips: stalled for more than 8 burst periods, then rebased) did not offer
// the asked load as asked, and a stall that long on this host stalls the
// queues on the path too (measured on this VM: every lossy trial below a
// tbf's rate had slips). It is set aside -- kept in the log, not counted --
// and run again, at most kMaxSetAside times for one rate; after that the
// loss stands. A pass stands as it is: a pause cannot add load.
inline constexpr uint32_t kMaxSetAside = 2;
inline bool set_aside_for_slips(bool passed, uint64_t pace_slips) { return !passed && pace_slips > 0; }

// How one offered rate is judged: over up to `trials` trials, with a goal
// exceed ratio (MLRsearch, draft-ietf-bmwg-mlrsearch). The rate fails as soon
// as more than exceed_ratio * trials of its trials lost (above the search's
// threshold), whatever the others would show; it passes as soon as that could
// no longer happen with the trials not yet run counted as losing; until then
// it gets another trial. trials 1, exceed ratio 0 is RFC 2544 26.1: one
// trial, any loss fails (the default). On a host that stalls now and then
// (this VM: a vCPU away for longer than a shaper's queue drops a few packets
// well under its rate), 2 trials at ratio 0.5 keep one stall from setting the
// upper bound under the ceiling, and a rate above it costs a second trial.
// Every lossy trial stays in the log, and the result says how many stand
// inside the rate it reports.
struct LoadPolicy {
  uint32_t trials = 1;
  double exceed_ratio = 0;
  bool strict() const { return trials <= 1 || exceed_ratio <= 0; }
};
enum class Verdict { pass, fail, undecided };
Verdict load_verdict(uint32_t passes, uint32_t fails, const LoadPolicy& p);
// The rate a trial stands for: asked, or achieved when unpaced or when a pass fell short.
double trial_rate(double asked_pps, double achieved_pps, bool passed);

enum class SearchState {
  searching,
  converged,       // hi - lo within the resolution
  sender_limited,  // the fastest trial passed: the ceiling is at or above what the sender can offer
  below_min,       // even the lowest rate tried (min rate) lost packets
  out_of_trials,   // trial budget spent before converging
};

const char* state_name(SearchState s);

class RateSearch {
 public:
  struct Params {
    double threshold = 0.0;    // loss ratio that still passes (0 = NDR)
    double resolution = 0.01;  // relative width of the final bracket
    double min_pps = 10.0;     // lowest rate worth trying
    uint32_t max_trials = 20;
  };
  explicit RateSearch(Params p) : p_(p) {}

  bool passes(const RatePoint& t) const { return p_.threshold <= 0 ? t.lost == 0 : t.loss_ratio() <= p_.threshold; }
  void add(RatePoint t);  // sets t.rate
  // Starts from another search's trials (PDR from NDR's): they count as history, not as this search's budget.
  void seed(const std::vector<RatePoint>& earlier);

  SearchState state() const;
  // The next rate to offer; nullopt when state() != searching.
  std::optional<double> next_target() const;

  std::optional<RatePoint> lo() const;  // best pass below hi
  std::optional<RatePoint> hi() const;  // lowest failure
  uint32_t trials() const { return own_trials_; }
  // Rough number of trials still to run (for the progress line).
  uint32_t remaining_estimate() const;
  const Params& params() const { return p_; }

 private:
  Params p_;
  std::vector<RatePoint> points_;
  uint32_t own_trials_ = 0;
  uint32_t passes_in_a_row_ = 0, fails_in_a_row_ = 0;
  bool last_passed_ = false;
};

class BurstSearch {
 public:
  BurstSearch(uint32_t start, uint32_t max_burst, uint32_t max_trials)
      : next_(start < 1 ? 1 : start), max_(max_burst), max_trials_(max_trials) {}
  void add(uint32_t burst, bool passed);
  std::optional<uint32_t> next() const;  // nullopt when done
  uint32_t longest_pass() const { return lo_; }   // 0 = even a burst of 1 lost packets... or none tried
  std::optional<uint32_t> shortest_fail() const { return hi_ ? std::optional<uint32_t>(hi_) : std::nullopt; }
  bool reached_max() const { return lo_ >= max_; }
  uint32_t trials() const { return trials_; }
  uint32_t remaining_estimate() const;

 private:
  uint32_t next_;
  uint32_t max_;
  uint32_t max_trials_;
  uint32_t lo_ = 0, hi_ = 0;  // hi_ 0 = no failure yet
  uint32_t trials_ = 0;
};

}  // namespace rateline::ceiling
