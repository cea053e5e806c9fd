// The receiver agent: speaks the control protocol (protocol.hpp) and runs
// one rx per trial, the same binary and code path a user runs by hand.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "address.hpp"
#include "auth.hpp"
#include "limits.hpp"
#include "report/metrics_server.hpp"
#include "socket/udp_socket.hpp"

namespace rateline::ceiling {

class AgentMetrics;

struct ServeConfig {
  std::string listen;        // "[ADDR:]PORT" for TCP; "" = one session on stdin/stdout
  std::string rx_bind;       // rx --bind (default 0.0.0.0)
  std::string rx_bin;        // rx program
  std::string rx_dpdk_args;  // rx --dpdk-args for backend=dpdk: the receiver's own choice, never sent over the wire
  std::string dpdk_device;   // backend=dpdk runs rx --device this (set: TrialLimits::allow_dpdk)
  bool verbose = true;       // log sessions and trials to stderr
  // What one client may ask and hold. The stdio agent is the local lab's own: no limits.
  TrialLimits limits = TrialLimits::unlimited();
  uint64_t idle_ns = 0;      // drop a client silent this long while no trial runs; 0 = never
  uint64_t session_ns = 0;   // close a session this old; 0 = never
  // Clients must prove they hold this key (auth.hpp). Without one the agent
  // listens on a loopback address only (options.cpp refuses any other).
  std::optional<auth::Key> key;
  uint32_t max_clients = 8;  // connections held at once: handshakes in progress plus the session
  report::MetricsOptions metrics;    // --metrics / --metrics-textfile (TCP agent only)
  AgentMetrics* counts = nullptr;    // set by serve(): where the gate and the sessions count (null: no metrics)
};

// Runs until SIGINT/SIGTERM (TCP) or until stdin closes (stdio). Returns the exit code.
int serve(const ServeConfig& cfg);

}  // namespace rateline::ceiling
