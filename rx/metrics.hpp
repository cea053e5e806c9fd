// rx's Prometheus page (docs/metrics.md). While the run goes, it has what
// the reporter already has: each worker's latest snapshot (the numbers of
// the progress line and JSON progress record). At the end it is rendered
// from the same summary and ledger as the JSON result, so every value there
// equals the result's; per-sender, per-stream, latency and ledger series
// exist only then (the workers keep them in their stream tables, which
// nobody reads while they run).
#pragma once

#include <string>
#include <vector>

#include "engine/rx_loop.hpp"
#include "ledger/ledger.hpp"
#include "report/rx_summary.hpp"
#include "rx_config.hpp"
#include "setup.hpp"

namespace rateline::rx {

std::string live_metrics_page(const Config& cfg, const Run& run);

// `results`: the joined workers' results, in worker order.
std::string final_metrics_page(const Config& cfg, const Run& run, const std::vector<engine::RxResult>& results,
                               const report::RxSummary& summary, const ledger::Ledger& drops, double loss_pct);

}  // namespace rateline::rx
