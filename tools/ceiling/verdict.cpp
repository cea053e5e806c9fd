#include "verdict.hpp"

namespace rateline::ceiling {

double MinNdr::pps_at(const net::FrameSizes& f) const {
  if (rate.unit == units::RateUnit::pps) return rate.value;
  const uint32_t bytes = layer == "payload" ? f.payload : layer == "l2" ? f.l2 : f.l1;
  return rate.value / (8.0 * bytes);
}

nlohmann::json SizeVerdict::json() const {
  return {{"payload", payload}, {"frame", frame}, {"min_ndr_pps", min_pps},
          {"ndr_pps", ndr_pps ? nlohmann::json(*ndr_pps) : nlohmann::json(nullptr)}, {"passed", passed},
          {"reason", passed ? nlohmann::json(nullptr) : nlohmann::json(reason)}};
}

SizeVerdict judge_size(const NdrFinding& f, const MinNdr& min) {
  SizeVerdict v;
  v.payload = f.payload;
  v.frame = f.frame.l2;
  v.min_pps = min.pps_at(f.frame);
  v.ndr_pps = f.ndr_pps;
  const std::string size = std::to_string(f.payload) + " B payload (" + std::to_string(f.frame.l2) + " B frame)";
  const std::string wanted = "--min-ndr " + min.text +
                             (min.rate.unit == units::RateUnit::pps ? std::string()
                                                                    : " (" + units::si(v.min_pps, 3) + " pps here)");
  if (!f.ndr_pps) {
    v.reason = size + ": no NDR (" + (f.state.empty() ? "not measured" : f.state) + "), " + wanted + " asked";
  } else if (*f.ndr_pps < v.min_pps) {
    // Sender-limited: the receiver took all that was offered, so its NDR is at least this, but that is not proof
    // of the rate asked.
    const bool at_least = f.state == "sender_limited";
    v.reason = size + ": NDR " + (at_least ? ">=" : "") + units::si(*f.ndr_pps, 3) + " pps" +
               (at_least ? " (sender-limited: the receiver took all the sender offered)" : "") + " is below " + wanted;
  } else {
    v.passed = true;
  }
  return v;
}

RunVerdict judge_run(const std::vector<NdrFinding>& findings, const MinNdr& min) {
  RunVerdict r;
  for (const NdrFinding& f : findings) {
    r.sizes.push_back(judge_size(f, min));
    r.passed &= r.sizes.back().passed;
  }
  return r;
}

std::string RunVerdict::reasons() const {
  std::string s;
  for (const SizeVerdict& v : sizes)
    if (!v.passed) s += (s.empty() ? "" : "; ") + v.reason;
  return s;
}

std::string RunVerdict::line() const { return passed ? "verdict: passed" : "verdict: FAILED: " + reasons(); }

nlohmann::json RunVerdict::json(const MinNdr& min) const {
  nlohmann::json per = nlohmann::json::array();
  for (const SizeVerdict& v : sizes) per.push_back(v.json());
  return {{"type", "verdict"},
          {"tool", "ceiling"},
          {"min_ndr", {{"value", min.rate.value},
                       {"unit", min.rate.unit == units::RateUnit::pps ? "pps" : "bit/s"},
                       {"layer", min.layer}}},
          {"passed", passed},
          {"reason", passed ? nlohmann::json(nullptr) : nlohmann::json(reasons())},
          {"sizes", per}};
}

}  // namespace rateline::ceiling
