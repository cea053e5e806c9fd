// pktgen's Prometheus page (docs/metrics.md): rendered by the reporter from
// the workers' latest snapshots while they run, and from their joined
// results at the end, so the final page holds the JSON result's numbers.
#pragma once

#include <string>

#include "pktgen_config.hpp"
#include "setup.hpp"

namespace rateline::pktgen {

// `final`: the workers are joined and their results are the numbers.
std::string metrics_page(const Config& cfg, const Run& run, bool final);

}  // namespace rateline::pktgen
