// ceiling --min-ndr: does every size's NDR reach a rate the user names?
// Pure: fed the search's findings, it says pass or fail and why, one line for
// the terminal and one record for the JSON (tested alone).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/frame.hpp"
#include "util/units.hpp"

namespace rateline::ceiling {

// One size's throughput finding, as the verdict sees it.
struct NdrFinding {
  uint32_t payload = 0;
  net::FrameSizes frame;
  std::optional<double> ndr_pps;  // the NDR found; nullopt: none (below --min-rate, out of trials, an error, not run)
  std::string state;              // the search's end state (search.hpp state_name), or why it has none
};

struct MinNdr {
  units::Rate rate;            // as given: pps, or bit/s counted at `layer`
  std::string text;            // as given, for messages
  std::string layer = "l1";    // --rate-layer: payload, l2, l1

  // The rate in packets/s at this frame size.
  double pps_at(const net::FrameSizes& f) const;
};

struct SizeVerdict {
  uint32_t payload = 0, frame = 0;
  double min_pps = 0;
  std::optional<double> ndr_pps;
  bool passed = false;
  std::string reason;  // "" when passed
  nlohmann::json json() const;  // {payload, frame, min_ndr_pps, ndr_pps, passed, reason}
};

struct RunVerdict {
  bool passed = true;
  std::vector<SizeVerdict> sizes;
  std::string reasons() const;  // each failing size's reason, "; "-separated
  std::string line() const;     // "verdict: passed" or "verdict: FAILED: <reasons>"
  nlohmann::json json(const MinNdr& min) const;  // the closing `verdict` record
};

SizeVerdict judge_size(const NdrFinding& f, const MinNdr& min);
// Every size the run was asked for: one without a finding has no NDR and fails.
RunVerdict judge_run(const std::vector<NdrFinding>& findings, const MinNdr& min);

}  // namespace rateline::ceiling
