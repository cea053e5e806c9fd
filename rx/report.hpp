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

// From the joined workers; returns the exit code. Publishes the final
// metrics page; keeps the result record in run.result. The caller ends the
// JSON (json.finish()) after the last port.
int report_result(const Config& cfg, Run& run, const std::string& ended_by, report::JsonLines& json,
                  report::MetricsOutput& metrics);

// A port set's sum over its ports' results, after their own tables: one
// line and a "ports" JSON record.
void report_port_totals(const std::vector<Config>& ports, const std::vector<Run>& runs, report::JsonLines& json);

}  // namespace rateline::rx
