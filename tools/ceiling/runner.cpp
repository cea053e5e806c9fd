#include "runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "report/rates.hpp"
#include "util/clock.hpp"
#include "util/stop_signal.hpp"
#include "util/units.hpp"

namespace rateline::ceiling {

namespace {

// Rate trials pace in bursts of about 1 ms of traffic: the sender then
// sleeps between bursts and keeps its schedule on a busy host (measured on a
// loaded 2-core VM: 5k pps in bursts of 1 achieved 70-80% of the rate, in
// bursts of 5 all of it). 1 at low rates (evenly spaced frames, as RFC 2544
// has it), at most 64; --burst N overrides.
constexpr double kAutoBurstPeriodS = 1e-3;
constexpr uint32_t kAutoBurstMax = 64;
constexpr uint32_t kUnpacedBurst = 64;
constexpr uint32_t kMaxConfirmRounds = 3;

uint32_t auto_burst(double rate_pps) {
  return static_cast<uint32_t>(std::clamp(std::lround(rate_pps * kAutoBurstPeriodS), 1L, static_cast<long>(kAutoBurstMax)));
}

double to_pps(const units::Rate& r, const net::FrameSizes& f, const std::string& layer) {
  if (r.unit == units::RateUnit::pps) return r.value;
  const uint32_t bytes = layer == "payload" ? f.payload : layer == "l2" ? f.l2 : f.l1;
  return r.value / (8.0 * bytes);
}

std::string size_label(const SizeResult& r) {
  char b[64];
  std::snprintf(b, sizeof b, "%u B payload (%u B frame)", r.plan.payload, r.frame.l2);
  return b;
}

// The trial that stands for a rate judged over its trials `ids` by `s`'s threshold and policy `p`: the first
// that passed when the verdict is pass, the first that lost when it is fail; nullopt while undecided.
std::optional<uint32_t> judged(const std::vector<uint32_t>& ids, const std::vector<TrialOutcome>& trials,
                               const RateSearch& s, const LoadPolicy& p) {
  uint32_t passes = 0, fails = 0;
  std::optional<uint32_t> first_pass, first_fail;
  for (const uint32_t i : ids) {
    if (s.passes(trials[i].point(i))) {
      ++passes;
      if (!first_pass) first_pass = i;
    } else {
      ++fails;
      if (!first_fail) first_fail = i;
    }
  }
  switch (load_verdict(passes, fails, p)) {
    case Verdict::pass: return first_pass;
    case Verdict::fail: return first_fail;
    case Verdict::undecided: break;
  }
  return std::nullopt;
}

}  // namespace

NdrFinding ndr_finding(const SizeResult& r) {
  NdrFinding f;
  f.payload = r.plan.payload;
  f.frame = r.frame;
  if (r.ndr.found()) f.ndr_pps = r.ndr.pps;
  f.state = !r.error.empty()    ? "error: " + r.error
            : !r.ran_throughput ? std::string("not measured")
                                : std::string(state_name(r.ndr.state));
  return f;
}

nlohmann::json rate_json(double pps, const net::FrameSizes& f, const report::LinkInfo& link) {
  const report::Rates r = report::rates_for(static_cast<uint64_t>(std::llround(pps * 1e6)), f, 1e6);
  const auto pct = report::line_rate_percent(r, link.speed_mbps);
  return {{"pps", pps},
          {"payload_mbps", r.payload_mbps},
          {"l2_mbps", r.l2_mbps},
          {"l1_mbps", r.l1_mbps},
          {"line_rate_pct", pct ? nlohmann::json(*pct) : nlohmann::json(nullptr)}};
}

Runner::Runner(TrialRunner& trials, const Config& cfg, const RunInfo& info, report::JsonLines& json)
    : trials_(trials), cfg_(cfg), info_(info), json_(json), tty_(isatty(STDOUT_FILENO) == 1) {}

uint32_t Runner::estimate_remaining(size_t from) const {
  // A typical search: ~8 rate trials + 2 confirmations for NDR and PDR; ~12 burst trials.
  const uint32_t per_size = (cfg_.throughput ? 10u : 0u) + (cfg_.back_to_back ? 12u : 0u);
  return static_cast<uint32_t>(cfg_.sizes.size() > from ? cfg_.sizes.size() - from : 0) * per_size;
}

void Runner::progress_start(const SizeResult& r, const TrialSpec& spec) {
  if (cfg_.quiet) return;
  uint32_t here = 0;
  if (live_) here = live_->remaining_estimate() + 1;
  if (live_burst_) here = live_burst_->remaining_estimate() + 1;
  estimate_ = std::max(done_ + 1, done_ + here + estimate_remaining(size_index_ + 1));
  char what[160];
  if (spec.kind == TrialKind::back_to_back)
    std::snprintf(what, sizeof what, "back-to-back burst of %u x%u", spec.burst, cfg_.b2b_repeats);
  else if (spec.rate_pps > 0)
    std::snprintf(what, sizeof what, "%s at %s pps", kind_name(spec.kind), units::si(spec.rate_pps, 2).c_str());
  else
    std::snprintf(what, sizeof what, "%s unpaced (the sender's maximum)", kind_name(spec.kind));
  std::printf("%strial %u of ~%u  %u B: %s%s%s%s", tty_ ? "\r\033[K" : "", done_ + 1, estimate_, r.plan.payload, what,
              last_result_.empty() ? "" : "  | last: ", last_result_.c_str(), tty_ ? "" : "\n");
  std::fflush(stdout);
}

void Runner::progress_done(const SizeResult&, const TrialOutcome& o) {
  ++done_;
  char b[256];
  if (!o.ok) std::snprintf(b, sizeof b, "failed: %s", o.error.c_str());
  else
    std::snprintf(b, sizeof b, "%s pps achieved, %" PRIu64 " of %" PRIu64 " lost (%.3f%%)%s%s", units::si(o.achieved_pps, 2).c_str(),
                  o.lost, o.sent, o.loss_ratio() * 100, o.lost ? ": " : "", o.lost ? ledger::brief(o.ledger).c_str() : "");
  last_result_ = b;
  if (!o.set_aside.empty()) last_result_ += " [set aside: the sender slipped; again]";
}

std::optional<TrialOutcome> Runner::rate_trial(SizeResult& r, const TrialSpec& spec, const RateSearch& s) {
  for (uint32_t aside = 0;; ++aside) {
    auto o = trial(r, spec, aside < kMaxSetAside ? &s : nullptr);
    if (!o || o->set_aside.empty()) return o;
    ++r.set_aside;
  }
}

std::optional<uint32_t> Runner::rate_load(SizeResult& r, const TrialSpec& spec, const RateSearch& s) {
  std::vector<uint32_t> ids;
  std::optional<uint32_t> standing;
  load_ = static_cast<int64_t>(r.loads.size());
  while (!standing) {
    if (!rate_trial(r, spec, s)) break;  // interrupted, or a trial could not run
    ids.push_back(static_cast<uint32_t>(r.trials.size() - 1));
    standing = judged(ids, r.trials, s, cfg_.load);
  }
  load_ = -1;
  if (standing) r.loads.push_back(std::move(ids));
  return standing;
}

std::optional<TrialOutcome> Runner::trial(SizeResult& r, const TrialSpec& spec, const RateSearch* judge) {
  if (stop_flag().load()) return std::nullopt;
  progress_start(r, spec);
  TrialOutcome o = trials_.run(spec);
  if (!o.ok && !stop_flag().load()) {
    // One more go: a trial can fail for reasons that pass (a binary being rebuilt, a port in TIME_WAIT).
    progress_done(r, o);
    progress_start(r, spec);
    o = trials_.run(spec);
  }
  if (o.ok && judge && set_aside_for_slips(judge->passes(o.point(0)), o.pace_slips))
    o.set_aside = "lost packets while the sender fell off its schedule (" + std::to_string(o.pace_slips) +
                  " pace slips): run again";
  progress_done(r, o);
  nlohmann::json j = {{"type", "trial"},
                      {"tool", "ceiling"},
                      {"k", o.k},
                      {"kind", kind_name(spec.kind)},
                      {"payload", spec.size},
                      {"frame", r.frame.l2},
                      {"asked_pps", spec.rate_pps > 0 ? nlohmann::json(spec.rate_pps) : nlohmann::json(nullptr)},
                      {"burst", spec.burst},
                      {"delay_ns", spec.delay_ns},
                      {"rate_load", load_ >= 0 ? nlohmann::json(load_) : nlohmann::json(nullptr)},
                      {"ok", o.ok}};
  if (!o.ok) j["error"] = o.error;
  else {
    j["achieved"] = rate_json(o.achieved_pps, r.frame, info_.link);
    j["rx_pps"] = o.rx_pps;
    j["sent"] = o.sent;
    j["received"] = o.received;
    j["lost"] = o.lost;
    j["loss_pct"] = o.loss_ratio() * 100;
    j["failed"] = o.failed;
    j["pace_slips"] = o.pace_slips;
    j["end_markers"] = {{"sent", o.end_markers_sent}, {"received", o.end_markers_received}};
    j["in_burst"] = {{"mean_pps", o.in_burst_pps}, {"peak_pps", o.in_burst_peak_pps}};
    j["set_aside"] = o.set_aside.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.set_aside);
    j["tx_backend"] = o.tx_backend;
    j["rx_backend"] = o.rx_backend;
    j["ledger"] = o.ledger_json;
  }
  json_.write(j);
  if (!o.ok) {
    r.error = o.error;
    return std::nullopt;
  }
  r.trials.push_back(o);
  return o;
}

TrialSpec Runner::paced(uint32_t size, double rate_pps, TrialKind kind) const {
  TrialSpec s;
  s.kind = kind;
  s.size = size;
  s.rate_pps = rate_pps;
  s.burst = cfg_.burst ? cfg_.burst : auto_burst(rate_pps);
  const double trial_s = static_cast<double>(cfg_.trial_ns) / 1e9;
  s.count = std::max<uint64_t>(s.burst, static_cast<uint64_t>(std::llround(rate_pps * trial_s)));
  s.duration_ns = 2 * cfg_.trial_ns + kNsPerSec;  // a sender that cannot keep up stops here; its rate is what it achieved
  return s;
}

void Runner::search(SizeResult& r, RateSearch& s, RateResult& out) {
  live_ = &s;
  uint32_t confirm_rounds = 0;
  std::optional<uint32_t> confirm_id;
  for (;;) {
    while (s.state() == SearchState::searching) {
      const double target = *s.next_target();
      const auto id = rate_load(r, paced(r.plan.payload, target, TrialKind::throughput), s);
      if (!id) {
        live_ = nullptr;
        return;
      }
      s.add(r.trials[*id].point(*id));
    }
    const auto lo = s.lo();
    if (!lo || s.state() == SearchState::sender_limited || confirm_rounds >= kMaxConfirmRounds) break;
    // Repeat the final (best passing) trial at the rate it stands for: a ceiling
    // that does not hold twice is not the ceiling.
    ++confirm_rounds;
    const double rate = lo->rate;
    const auto cid = rate_load(r, paced(r.plan.payload, rate, TrialKind::confirm), s);
    if (!cid) break;
    const TrialOutcome& c = r.trials[*cid];
    const RatePoint cp = c.point(*cid);
    s.add(cp);
    if (s.passes(cp) && c.achieved_pps >= rate * (1 - kSenderShortfall)) {
      out.confirmed = true;
      out.confirm = c;
      confirm_id = *cid;
      break;
    }
    // A pass where the sender fell short proves nothing about `rate`: repeat again.
    // A failure moved the bracket down: search on from there.
  }
  live_ = nullptr;
  out.state = s.state();
  out.trials = s.trials();
  if (const auto lo = s.lo()) {
    out.best = r.trials[lo->tag];
    out.asked_pps = out.best->spec.rate_pps;
    out.pps = lo->rate;
    out.achieved_pps = out.best->achieved_pps;
    if (out.confirmed && out.confirm) out.achieved_pps = std::min(out.achieved_pps, out.confirm->achieved_pps);
    for (const auto& ids : r.loads) {
      if (std::find(ids.begin(), ids.end(), lo->tag) == ids.end() &&
          (!confirm_id || std::find(ids.begin(), ids.end(), *confirm_id) == ids.end()))
        continue;
      out.trials_at_rate += static_cast<uint32_t>(ids.size());
      for (const uint32_t id : ids) out.lossy_at_rate += s.passes(r.trials[id].point(id)) ? 0 : 1;
    }
  }
  if (out.state == SearchState::sender_limited && !out.best) {
    // Everything passed: the fastest trial is the bound (the receiver took all the sender could offer).
    const auto it = std::max_element(r.trials.begin(), r.trials.end(),
                                     [](const TrialOutcome& a, const TrialOutcome& b) { return a.achieved_pps < b.achieved_pps; });
    if (it != r.trials.end()) {
      out.best = *it;
      out.pps = out.achieved_pps = it->achieved_pps;
      out.asked_pps = it->spec.rate_pps;
    }
  }
  if (const auto hi = s.hi()) out.first_fail = r.trials[hi->tag];
}

void Runner::throughput(SizeResult& r) {
  r.ran_throughput = true;
  RateSearch ndr({0.0, cfg_.resolution, cfg_.min_pps, cfg_.max_trials});
  // First trial: at --max-rate, or unpaced: the top of the range is what the sender can do.
  TrialSpec first;
  if (cfg_.max_rate) first = paced(r.plan.payload, to_pps(*cfg_.max_rate, r.frame, cfg_.rate_layer), TrialKind::throughput);
  else {
    first.kind = TrialKind::throughput;
    first.size = r.plan.payload;
    first.burst = cfg_.burst ? cfg_.burst : kUnpacedBurst;
    first.duration_ns = cfg_.trial_ns;
  }
  live_ = &ndr;
  const auto id = rate_load(r, first, ndr);
  if (!id) return;
  ndr.add(r.trials[*id].point(*id));
  search(r, ndr, r.ndr);
  if (stop_flag().load() || !r.error.empty()) return;

  RateSearch pdr({cfg_.pdr_threshold, cfg_.resolution, cfg_.min_pps, cfg_.max_trials});
  // NDR's rates, each judged again by the PDR's threshold (a rate still undecided there is left out).
  std::vector<RatePoint> history;
  for (const auto& ids : r.loads)
    if (const auto i = judged(ids, r.trials, pdr, cfg_.load)) history.push_back(r.trials[*i].point(*i));
  pdr.seed(history);
  search(r, pdr, r.pdr);
}

void Runner::back_to_back(SizeResult& r) {
  r.b2b.ran = true;
  BurstSearch bs(std::min<uint32_t>(16, cfg_.b2b_max), cfg_.b2b_max, 40);
  live_burst_ = &bs;
  while (const auto b = bs.next()) {
    TrialSpec s;
    s.kind = TrialKind::back_to_back;
    s.size = r.plan.payload;
    s.burst = *b;
    s.delay_ns = cfg_.b2b_gap_ns;
    s.count = uint64_t{*b} * cfg_.b2b_repeats;
    auto o = trial(r, s);
    if (!o) break;
    const bool pass = o->lost == 0;
    bs.add(*b, pass);
    if (!pass && (!r.b2b.first_fail || *b < r.b2b.first_fail->spec.burst)) r.b2b.first_fail = *o;
  }
  live_burst_ = nullptr;
  r.b2b.longest = bs.longest_pass();
  r.b2b.shortest_fail = bs.shortest_fail();
  r.b2b.at_max = bs.reached_max();
  r.b2b.trials = bs.trials();
}

std::vector<SizeResult> Runner::run() {
  std::vector<SizeResult> results;
  for (size_index_ = 0; size_index_ < cfg_.sizes.size() && !stop_flag().load(); ++size_index_) {
    SizeResult r;
    r.plan = cfg_.sizes[size_index_];
    r.frame = net::FrameSizes::for_payload(r.plan.payload, cfg_.ipv6);
    if (cfg_.throughput) throughput(r);
    if (cfg_.back_to_back && r.error.empty() && !stop_flag().load()) back_to_back(r);
    nlohmann::json j = {{"type", "result"}, {"tool", "ceiling"}, {"payload", r.plan.payload}, {"frame", r.frame.l2},
                        {"requested_frame", r.plan.rfc_frame ? nlohmann::json(*r.plan.rfc_frame) : nlohmann::json(nullptr)},
                        {"trials", r.trials.size()},
                        {"set_aside_trials", r.set_aside},
                        {"load_policy", {{"trials", cfg_.load.trials}, {"exceed_ratio", cfg_.load.exceed_ratio}}}};
    if (!r.error.empty()) j["error"] = r.error;
    auto rate_result = [&](const RateResult& x, double threshold) {
      nlohmann::json o = {{"state", state_name(x.state)}, {"loss_threshold_pct", threshold * 100},
                          {"confirmed", x.confirmed}, {"trials", x.trials},
                          {"trials_at_rate", x.trials_at_rate}, {"lossy_trials_at_rate", x.lossy_at_rate}};
      if (x.found()) {
        o["rate"] = rate_json(x.pps, r.frame, info_.link);
        o["asked_pps"] = x.asked_pps > 0 ? nlohmann::json(x.asked_pps) : nlohmann::json(nullptr);
        o["achieved"] = rate_json(x.achieved_pps, r.frame, info_.link);
        // The peak the queues saw while the NDR trials passed: the faster of the best trial and its repeat.
        double peak = x.best->in_burst_peak_pps;
        if (x.confirmed && x.confirm) peak = std::max(peak, x.confirm->in_burst_peak_pps);
        o["in_burst_peak_pps"] = peak > 0 ? nlohmann::json(peak) : nlohmann::json(nullptr);
      } else {
        o["rate"] = nullptr;
      }
      if (x.first_fail)
        o["first_fail"] = {{"asked_pps", x.first_fail->spec.rate_pps > 0 ? nlohmann::json(x.first_fail->spec.rate_pps) : nlohmann::json(nullptr)},
                           {"achieved_pps", x.first_fail->achieved_pps},
                           {"in_burst_peak_pps", x.first_fail->in_burst_peak_pps > 0 ? nlohmann::json(x.first_fail->in_burst_peak_pps) : nlohmann::json(nullptr)},
                           {"loss_pct", x.first_fail->loss_ratio() * 100},
                           {"drops", ledger::brief(x.first_fail->ledger)},
                           {"ledger", x.first_fail->ledger_json}};
      return o;
    };
    if (r.ran_throughput) {
      j["ndr"] = rate_result(r.ndr, 0);
      j["pdr"] = rate_result(r.pdr, cfg_.pdr_threshold);
    }
    if (cfg_.min_ndr) j["verdict"] = judge_size(ndr_finding(r), *cfg_.min_ndr).json();
    if (r.b2b.ran)
      j["back_to_back"] = {{"longest_burst", r.b2b.longest}, {"at_max", r.b2b.at_max}, {"max", cfg_.b2b_max},
                           {"repeats", cfg_.b2b_repeats}, {"gap_ns", cfg_.b2b_gap_ns}, {"trials", r.b2b.trials},
                           {"shortest_fail", r.b2b.shortest_fail ? nlohmann::json(*r.b2b.shortest_fail) : nlohmann::json(nullptr)},
                           {"first_fail_drops", r.b2b.first_fail ? nlohmann::json(ledger::brief(r.b2b.first_fail->ledger)) : nlohmann::json(nullptr)}};
    json_.write(j);
    if (!cfg_.quiet && tty_) {
      std::printf("\r\033[K");
      std::fflush(stdout);
    }
    if (!cfg_.quiet) {
      std::printf("%s: ", size_label(r).c_str());
      if (!r.error.empty()) std::printf("error: %s\n", r.error.c_str());
      else {
        if (r.ran_throughput)
          std::printf("NDR %s pps (%s), PDR %s pps (%s)", r.ndr.found() ? units::si(r.ndr.pps, 3).c_str() : "-",
                      state_name(r.ndr.state), r.pdr.found() ? units::si(r.pdr.pps, 3).c_str() : "-", state_name(r.pdr.state));
        if (r.b2b.ran) std::printf("%sback-to-back %u%s", r.ran_throughput ? "; " : "", r.b2b.longest, r.b2b.at_max ? "+" : "");
        std::printf("\n");
      }
      std::fflush(stdout);
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace rateline::ceiling
