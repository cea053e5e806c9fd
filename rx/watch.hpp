// rx's reporter loop: reads the workers' snapshots and stream events every
// 50 ms, prints progress once a second, and decides when the run is over
// (signal, end markers, count, idle, duration). Workers never wait for it.
#pragma once

#include <string>
#include <vector>

#include "report/json_lines.hpp"
#include "report/metrics_server.hpp"
#include "rx_config.hpp"
#include "setup.hpp"

namespace rateline::rx {

// Returns why each port's run ended ("end markers", "count reached",
// "signal"...), once every one has; a port set's ports end on their own
// evidence, a signal ends them all. Publishes a live metrics page each
// round when metrics are on (one run only).
std::vector<std::string> watch_until_end(const std::vector<Config>& ports, std::vector<Run>& runs, report::JsonLines& json,
                                         report::MetricsOutput& metrics);

}  // namespace rateline::rx
