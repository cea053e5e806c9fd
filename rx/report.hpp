// rx's report: start-up lines, and at the end the table, the drop ledger,
// the verdict and the JSON result.
#pragma once

#include <string>

#include "report/json_lines.hpp"
#include "report/metrics_server.hpp"
#include "rx_config.hpp"
#include "setup.hpp"

namespace rateline::rx {

void report_start(const Config& cfg, const Run& run, report::JsonLines& json);

// From the joined workers; returns the exit code. Publishes the final metrics page.
int report_result(const Config& cfg, Run& run, const std::string& ended_by, report::JsonLines& json,
                  report::MetricsOutput& metrics);

}  // namespace rateline::rx
