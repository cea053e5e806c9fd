// pktgen's report: start-up lines, live progress, the final table and JSON.
#pragma once

#include <cstdint>

#include "pktgen_config.hpp"
#include "report/json_lines.hpp"
#include "setup.hpp"

namespace rateline::pktgen {

void report_start(const Config& cfg, const Run& run, report::JsonLines& json);

// One progress line per second from the workers' latest snapshots.
class Progress {
 public:
  explicit Progress(uint64_t t0_ns) : t0_ns_(t0_ns), last_ns_(t0_ns) {}
  void maybe_report(const Config& cfg, const Run& run, uint64_t now_ns, report::JsonLines& json);

 private:
  uint64_t t0_ns_, last_ns_;
  uint64_t last_sent_ = 0, last_bytes_ = 0;
};

// The final table and JSON record from the joined workers; returns the exit
// code. The caller ends the JSON (json.finish()) after the last port.
int report_result(const Config& cfg, const Run& run, report::JsonLines& json);

// A port set's sum over its ports, after their own tables: one line and a
// "ports" JSON record.
void report_port_totals(const std::vector<Config>& ports, const std::vector<Run>& runs, report::JsonLines& json);

}  // namespace rateline::pktgen
