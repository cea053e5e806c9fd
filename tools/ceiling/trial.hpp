// One trial, from the sender's side: ask the receiver to start rx, snapshot
// this side's counters, run pktgen, snapshot again, collect rx's result,
// reconcile the two into a drop ledger.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "config.hpp"
#include "ledger/ledger.hpp"
#include "link.hpp"
#include "search.hpp"

namespace rateline::ceiling {

enum class TrialKind { throughput, confirm, back_to_back };
const char* kind_name(TrialKind k);

struct TrialSpec {
  TrialKind kind = TrialKind::throughput;
  uint32_t size = 1400;      // UDP payload
  double rate_pps = 0;       // 0 = unpaced
  uint32_t burst = 1;
  uint64_t delay_ns = 0;     // back-to-back: the gap between bursts
  uint64_t count = 0;        // 0 = until duration_ns
  uint64_t duration_ns = 0;  // pktgen --duration (a cap when count is set)
};

struct TrialOutcome {
  uint32_t k = 0;  // trial number in this run
  TrialSpec spec;
  bool ok = false;
  std::string error;
  double achieved_pps = 0, rx_pps = 0, tx_seconds = 0;
  double in_burst_pps = 0, in_burst_peak_pps = 0;  // the sender's rate inside its bursts: mean, fastest (0 = not reported)
  uint64_t sent = 0, failed = 0, received = 0, lost = 0, pace_slips = 0;
  // End-of-stream markers (not in sent/received): the interface counters carry them, so a check against those needs them.
  uint64_t end_markers_sent = 0, end_markers_received = 0;
  std::string set_aside;  // non-empty: not counted by the search (search.hpp, set_aside_for_slips), and why
  std::string rx_backend, tx_backend;
  ledger::Ledger ledger;
  nlohmann::json ledger_json;

  double loss_ratio() const { return sent ? static_cast<double>(lost) / static_cast<double>(sent) : 0.0; }
  RatePoint point(uint32_t tag) const { return {0, spec.rate_pps, achieved_pps, rx_pps, sent, lost, tag}; }
};

class TrialRunner {
 public:
  TrialRunner(ReceiverLink& link, const Config& cfg, std::string sender_device);
  TrialOutcome run(const TrialSpec& spec);
  const std::string& sender_device() const { return device_; }

 private:
  ReceiverLink& link_;
  const Config& cfg_;
  std::string device_;
  uint64_t next_id_ = 1;
  uint32_t k_ = 0;
};

}  // namespace rateline::ceiling
