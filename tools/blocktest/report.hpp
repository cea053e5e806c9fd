// Output formats: the seed's tables (text), CSV, JSON-lines records, SVG.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results.hpp"

namespace rateline::blocktest {

// The seed's layout: block-size rows, one column per filesystem, MiB/s;
// with --compare-dd each filesystem gets a dd column and a ratio column.
std::string result_table(const std::vector<FsOutcome>& fss, bool write, const RunDescription& run, bool with_dd);
// Per-block completion latency, p50 / p99 / p99.9 / max in us, per size and filesystem, of one phase.
std::string latency_table(const std::vector<FsOutcome>& fss, bool write);
// Share of requests handed to io-wq workers, per size, write | read.
std::string worker_table(const std::vector<FsOutcome>& fss, bool exact);
// Device requests per block, per size and filesystem; "" when no device was counted.
std::string device_table(const std::vector<FsOutcome>& fss);
// Filesystems that were unsupported or failed, and every phase that did not end ok.
std::string problem_lines(const std::vector<FsOutcome>& fss);
// One line per phase: bytes, seconds, enters, punts, worker and submitter CPU.
std::string detail_line(const std::string& fs, const SizeOutcome& s, bool write);

std::string csv(const std::vector<FsOutcome>& fss, const RunDescription& run);
nlohmann::json phase_record(const std::string& fs, const SizeOutcome& s, bool write);
nlohmann::json run_record(const RunDescription& run);

// A self-contained SVG: MiB/s against block size, both axes logarithmic,
// one colour per filesystem, write solid, read dashed (svg_plot.cpp).
std::string svg_plot(const std::vector<FsOutcome>& fss, const std::string& title);

std::string mib_text(double mib_s);  // "  23.7 MiB/s"
// The block sizes of every filesystem's results, ascending, each once.
std::vector<uint64_t> all_sizes(const std::vector<FsOutcome>& fss);

}  // namespace rateline::blocktest
