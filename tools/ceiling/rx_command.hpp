// The rx the agent runs for one trial: the request's settings, the agent's
// own (bind address, EAL arguments, the one DPDK device), and nothing else
// from the wire.
#pragma once

#include <string>
#include <vector>

#include "protocol.hpp"
#include "server.hpp"

namespace rateline::ceiling {

// argv for rx: JSON lines on fd 3, no progress, the trial's limits.
std::vector<std::string> rx_command(const proto::TrialRequest& req, const ServeConfig& cfg);

}  // namespace rateline::ceiling
