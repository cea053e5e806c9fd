#include "agent_metrics.hpp"

#include <cstdio>

#include "report/prometheus_text.hpp"
#include "util/clock.hpp"

namespace rateline::ceiling {

using report::PrometheusText;

AgentMetrics::AgentMetrics(const report::MetricsOptions& asked, std::map<std::string, std::string> facts)
    : out_(asked), facts_(std::move(facts)) {}

void AgentMetrics::session(bool active) {
  if (active) ++counts_.sessions;
  counts_.session_active = active;
  changed_ = true;
}

void AgentMetrics::trial_ended(const nlohmann::json* result) {
  AgentCounts& c = counts_;
  c.trial_running = false;
  changed_ = true;
  if (!result) {
    ++c.trials_failed;
    return;
  }
  ++c.trials_with_result;
  const auto get = [&](const char* key) { return result->value(key, uint64_t{0}); };
  c.received += get("received");
  c.lost += get("lost");
  c.payload_bytes += get("payload_bytes");
  c.corrupt += get("corrupt");
  c.duplicated += get("duplicated");
  c.reordered += get("reordered");
  c.socket_drops += get("socket_drops");
  c.last_payload_len = get("payload_len");
  c.last_received = get("received");
  c.last_lost = get("lost");
}

std::string AgentMetrics::page() const {
  const AgentCounts& c = counts_;
  PrometheusText p;
  using T = PrometheusText::Type;
  p.family("rateline_ceiling_agent_info", T::gauge, "The receiver agent's settings (value 1; the labels are the facts)");
  report::Labels facts;
  for (const auto& [k, v] : facts_) facts.push_back({k, v});
  p.sample(facts, 1);
  p.family("rateline_ceiling_agent_connections_total", T::counter, "TCP connections the agent accepted");
  p.sample({}, c.connections);
  p.family("rateline_ceiling_agent_sessions_total", T::counter, "Sessions opened (clients past the gate)");
  p.sample({}, c.sessions);
  p.family("rateline_ceiling_agent_session_active", T::gauge, "1 while a session runs");
  p.sample({}, c.session_active ? 1 : 0);
  p.family("rateline_ceiling_agent_err_replies_total", T::counter,
           "ERR replies by protocol code: refused or dropped clients and requests (each logged, within the log's "
           "limits), failed trials");
  for (const auto& [code, n] : c.err_replies) p.sample({{"code", code}}, n);
  p.family("rateline_ceiling_agent_trials_total", T::counter,
           "Trials ended: outcome=result (rx's RESULT sent) or failed (rx failed or was cut short)");
  p.sample({{"outcome", "result"}}, c.trials_with_result);
  p.sample({{"outcome", "failed"}}, c.trials_failed);
  p.family("rateline_ceiling_agent_trial_running", T::gauge, "1 while a trial's rx runs");
  p.sample({}, c.trial_running ? 1 : 0);
  const auto sum = [&](const char* name, const char* help, uint64_t v) {
    p.family(name, T::counter, help);
    p.sample({}, v);
  };
  sum("rateline_ceiling_agent_trial_received_packets_total", "Test packets rx received, summed over every RESULT sent", c.received);
  sum("rateline_ceiling_agent_trial_lost_packets_total", "Test packets rx counted lost, summed over every RESULT sent", c.lost);
  sum("rateline_ceiling_agent_trial_received_bytes_total", "UDP payload bytes rx received, summed over every RESULT sent",
      c.payload_bytes);
  sum("rateline_ceiling_agent_trial_corrupt_packets_total", "Corrupt test packets, summed over every RESULT sent", c.corrupt);
  sum("rateline_ceiling_agent_trial_duplicated_packets_total", "Duplicated test packets, summed over every RESULT sent",
      c.duplicated);
  sum("rateline_ceiling_agent_trial_reordered_packets_total", "Reordered test packets, summed over every RESULT sent",
      c.reordered);
  sum("rateline_ceiling_agent_trial_socket_drops_total", "Datagrams the kernel dropped at rx's sockets, summed over every RESULT sent",
      c.socket_drops);
  p.family("rateline_ceiling_agent_last_trial_payload_size_bytes", T::gauge, "The last RESULT's UDP payload size");
  p.sample({}, c.last_payload_len);
  p.family("rateline_ceiling_agent_last_trial_received_packets", T::gauge, "The last RESULT's received test packets");
  p.sample({}, c.last_received);
  p.family("rateline_ceiling_agent_last_trial_lost_packets", T::gauge, "The last RESULT's lost test packets");
  p.sample({}, c.last_lost);
  return p.take();
}

void AgentMetrics::tick(bool final) {
  const uint64_t now = now_ns();
  // Also once a second unchanged: the textfile is rewritten at most once a second, so a change it skipped
  // reaches it on the next second's page.
  if (!out_.enabled() || (!changed_ && !final && now - published_ns_ < kNsPerSec)) return;
  const std::string error = out_.publish(page(), now, final);
  if (!error.empty()) std::fprintf(stderr, "ceiling serve: %s\n", error.c_str());
  changed_ = false;
  published_ns_ = now;
}

}  // namespace rateline::ceiling
