// Runs the tests per size: the throughput search (NDR, then PDR from the
// same trials, each confirmed by repeating its final trial) and the
// back-to-back burst search. Writes a JSON record per trial as it goes and
// keeps a live progress line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config.hpp"
#include "net/frame.hpp"
#include "report/json_lines.hpp"
#include "report/link.hpp"
#include "trial.hpp"
#include "verdict.hpp"

namespace rateline::ceiling {

struct RateResult {
  SearchState state = SearchState::searching;
  std::optional<TrialOutcome> best;        // the highest passing trial (the bracket's lower end)
  std::optional<TrialOutcome> confirm;     // the same trial repeated
  bool confirmed = false;
  std::optional<TrialOutcome> first_fail;  // the lowest failing trial (the bracket's upper end)
  double pps = 0;           // the offered rate found (what the best passing trial stands for)
  double asked_pps = 0;     // what pktgen was asked for it (0 = unpaced)
  double achieved_pps = 0;  // what the sender measured: the lower of best and confirm
  uint32_t trials = 0;      // rates tried
  // The trials that judged the reported rate (its own and its repeat's, LoadPolicy) and how many of them lost:
  // 0 lossy under the default policy; under an exceed ratio, the losses a passing rate was allowed.
  uint32_t trials_at_rate = 0, lossy_at_rate = 0;
  bool found() const { return best.has_value(); }
};

struct BurstResult {
  bool ran = false;
  uint32_t longest = 0;                    // longest burst that arrived whole, every repeat
  bool at_max = false;                     // --b2b-max passed: the real limit is higher
  std::optional<uint32_t> shortest_fail;
  std::optional<TrialOutcome> first_fail;  // the trial at the shortest failing burst
  uint32_t trials = 0;
};

struct SizeResult {
  SizePlan plan;
  net::FrameSizes frame;
  bool ran_throughput = false;
  RateResult ndr, pdr;
  BurstResult b2b;
  std::vector<TrialOutcome> trials;
  std::vector<std::vector<uint32_t>> loads;  // each rate the searches judged: its trials (indices; set-aside ones not among them)
  uint32_t set_aside = 0;  // rate trials not counted: lost packets while the sender slipped (run again)
  std::string error;
};

struct RunInfo {
  std::string mode;        // "local lab" / "remote"
  std::string sender_device;
  report::LinkInfo link;
  std::string shape;       // the lab's qdisc, when shaped
};

class Runner {
 public:
  Runner(TrialRunner& trials, const Config& cfg, const RunInfo& info, report::JsonLines& json);
  std::vector<SizeResult> run();

 private:
  void throughput(SizeResult& r);
  void search(SizeResult& r, RateSearch& s, RateResult& out);
  void back_to_back(SizeResult& r);
  // One trial; with `judge`, a failure while the sender slipped is marked set aside.
  std::optional<TrialOutcome> trial(SizeResult& r, const TrialSpec& spec, const RateSearch* judge = nullptr);
  // A rate trial for search `s`, run again while it is set aside (at most kMaxSetAside times).
  std::optional<TrialOutcome> rate_trial(SizeResult& r, const TrialSpec& spec, const RateSearch& s);
  // One rate judged by cfg_.load: rate trials until load_verdict() decides. Returns the index of the trial that
  // stands for the rate (the first that passed, or the first that lost).
  std::optional<uint32_t> rate_load(SizeResult& r, const TrialSpec& spec, const RateSearch& s);
  TrialSpec paced(uint32_t size, double rate_pps, TrialKind kind) const;
  void progress_start(const SizeResult& r, const TrialSpec& spec);
  void progress_done(const SizeResult& r, const TrialOutcome& o);
  uint32_t estimate_remaining(size_t size_index) const;

  TrialRunner& trials_;
  const Config& cfg_;
  const RunInfo& info_;
  report::JsonLines& json_;
  bool tty_ = false;
  uint32_t done_ = 0, estimate_ = 0;
  size_t size_index_ = 0;
  int64_t load_ = -1;  // the rate (index into SizeResult::loads) the running trial belongs to; -1: none
  const RateSearch* live_ = nullptr;
  const BurstSearch* live_burst_ = nullptr;
  std::string last_result_;
};

// What the --min-ndr verdict needs of one size's result.
NdrFinding ndr_finding(const SizeResult& r);

// Rates of `pps` packets/s of `f` frames, for tables and JSON.
nlohmann::json rate_json(double pps, const net::FrameSizes& f, const report::LinkInfo& link);

}  // namespace rateline::ceiling
