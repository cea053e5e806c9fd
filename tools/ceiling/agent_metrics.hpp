// The agent's Prometheus page (`ceiling --serve --metrics`): who knocked,
// who was refused and why, and what the trials it ran counted.
//
// Single-threaded like the rest of the agent: the gate and the session bump
// AgentCounts in their poll loop, and tick() renders the page there when
// something changed; the metrics server thread only copies finished pages
// (report/metrics_server.hpp). The trial sums are the RESULT lines' own
// numbers (rx's JSON result), added as each RESULT is sent, so a sender's
// per-trial results sum to exactly what the page says.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "report/metrics_server.hpp"

namespace rateline::ceiling {

struct AgentCounts {
  uint64_t connections = 0;                 // TCP connections accepted
  uint64_t sessions = 0;                    // sessions opened (past the gate)
  std::map<std::string, uint64_t> err_replies;  // ERR replies by protocol code (busy, auth, timeout, rx-failed, ...)
  uint64_t trials_with_result = 0, trials_failed = 0;
  bool session_active = false, trial_running = false;
  // Sums over every RESULT sent.
  uint64_t received = 0, lost = 0, payload_bytes = 0, corrupt = 0, duplicated = 0, reordered = 0, socket_drops = 0;
  // The last RESULT's.
  uint64_t last_payload_len = 0, last_received = 0, last_lost = 0;
};

class AgentMetrics {
 public:
  // Listens now (a taken port fails before the agent serves). `facts`: the
  // info metric's labels (listen, auth, rx_bind).
  AgentMetrics(const report::MetricsOptions& asked, std::map<std::string, std::string> facts);

  bool enabled() const { return out_.enabled(); }
  void start() { out_.start(); }
  std::string start_line() const { return out_.start_line(); }

  void err_reply(const std::string& code) { ++counts_.err_replies[code]; changed_ = true; }
  void connection() { ++counts_.connections; changed_ = true; }
  void session(bool active);
  void trial_started() { counts_.trial_running = true; changed_ = true; }
  // The RESULT's JSON as sent (null: the trial ended without one).
  void trial_ended(const nlohmann::json* result);

  // Publishes a fresh page when something changed, else once a second (the
  // textfile is rewritten at most once a second); always when `final`.
  void tick(bool final = false);
  const AgentCounts& counts() const { return counts_; }

 private:
  std::string page() const;
  report::MetricsOutput out_;
  std::map<std::string, std::string> facts_;
  AgentCounts counts_;
  bool changed_ = true;
  uint64_t published_ns_ = 0;
};

}  // namespace rateline::ceiling
