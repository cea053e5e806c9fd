// rx's reporter loop: reads the workers' snapshots and stream events every
// 50 ms, prints progress once a second, and decides when the run is over
// (signal, end markers, count, idle, duration). Workers never wait for it.
#pragma once

#include <string>

#include "report/json_lines.hpp"
#include "report/metrics_server.hpp"
#include "rx_config.hpp"
#include "setup.hpp"

namespace rateline::rx {

// Returns why the run ended ("end markers", "count reached", "signal"...).
// Publishes a live metrics page each round when metrics are on.
std::string watch_until_end(const Config& cfg, Run& run, report::JsonLines& json, report::MetricsOutput& metrics);

}  // namespace rateline::rx
