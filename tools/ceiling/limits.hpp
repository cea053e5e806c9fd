// What a receiver agent lets a client ask for in one TRIAL, beyond the
// protocol's own bounds (protocol.hpp). `ceiling --serve` sets these from its
// command line; the local lab's agent (--serve-stdio) runs for the same user
// who started the search and takes anything the protocol allows.
//
// A cap bounds what one client can hold on the receiver: CPUs (threads),
// memory (rcvbuf), which UDP ports rx binds (ports), for how long one rx runs
// (max_trial_ms: the trial's max_ms, rx's hard limit). Test aids make rx slow
// on purpose, and the dpdk backend takes a NIC away from the kernel: both are
// off unless the agent's operator turned them on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol.hpp"

namespace rateline::ceiling {

struct TrialLimits {
  uint32_t max_threads = 64;
  int64_t max_rcvbuf = int64_t{1} << 30;
  uint16_t port_lo = 1024, port_hi = 65535;
  uint32_t max_trial_ms = 3'600'000;
  bool allow_test_aids = true;
  bool allow_dpdk = true;

  static TrialLimits unlimited() { return {}; }
  // `ceiling --serve`'s defaults: 4 threads, 64 MiB, ports 9000-9099, 60 s, no test aids, no dpdk.
  static TrialLimits serve_defaults() {
    return {4, int64_t{64} << 20, 9000, 9099, 60'000, false, false};
  }
};

struct Refusal {
  std::string code;  // the ERR code: "limit" (a cap) or "refused" (not offered here)
  std::string text;  // names the field, the cap and the agent option that sets it
};

// nullopt when `t` is within `limits`; else why not (the first cap it is over).
std::optional<Refusal> check_limits(const proto::TrialRequest& t, const TrialLimits& limits);

}  // namespace rateline::ceiling
