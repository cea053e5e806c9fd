// The results: a table per size for the terminal, CSV (per size and per
// trial) and the SVG plot of loss against offered rate.
#pragma once

#include <string>
#include <vector>

#include "config.hpp"
#include "runner.hpp"

namespace rateline::ceiling {

std::string format_table(const std::vector<SizeResult>& results, const Config& cfg, const RunInfo& info);
std::string summary_csv(const std::vector<SizeResult>& results, const RunInfo& info);
std::string trials_csv(const std::vector<SizeResult>& results, const Config& cfg);
// A standalone SVG 1.1 document: one panel per size, loss (log scale, 0 at
// the bottom) against the achieved rate, NDR and PDR marked.
std::string loss_svg(const std::vector<SizeResult>& results, const Config& cfg, const RunInfo& info);

}  // namespace rateline::ceiling
