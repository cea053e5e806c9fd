// --metrics, --metrics-textfile and --metrics-linger, the same on pktgen and
// rx: declared on the program's CLI11 app, checked once after parsing (bad
// input is a usage error, exit 2, before any socket exists). Header only:
// the programs link CLI11, the engine library does not.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "report/metrics_server.hpp"
#include "util/cli.hpp"
#include "util/clock.hpp"
#include "util/units.hpp"

namespace rateline::report {

class MetricsOptionParser {
 public:
  void add_to(CLI::App& app) {
    app.add_option("--metrics", listen_,
                   "serve Prometheus metrics on [ADDR:]PORT at /metrics (default address 127.0.0.1; port 0 = pick a "
                   "free one, printed at start)");
    app.add_option("--metrics-textfile", textfile_,
                   "write the metrics page to this file each second and at the end, whole (written beside it, then "
                   "renamed): for node_exporter's textfile collector (name it *.prom)");
    app.add_option("--metrics-linger", linger_,
                   "with --metrics: keep serving the final page this long after the run (s by default), so a "
                   "scraper sees the end; a signal ends it early");
  }

  // Throws cli::UsageError.
  MetricsOptions parse() const {
    MetricsOptions m;
    if (!listen_.empty()) m.endpoint = cli::convert("--metrics", [&] { return parse_metrics_endpoint(listen_); });
    m.textfile = textfile_;
    if (!linger_.empty()) {
      if (!m.endpoint) throw cli::UsageError("--metrics-linger keeps the --metrics server up: give --metrics too");
      m.linger_ns = cli::in_range<uint64_t>(
          "--metrics-linger", cli::convert("--metrics-linger", [&] { return units::parse_duration_ns(linger_, kNsPerSec); }),
          0, 3600 * kNsPerSec);
    }
    return m;
  }

 private:
  std::string listen_, textfile_, linger_;
};

}  // namespace rateline::report
