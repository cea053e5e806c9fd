// rx: options, setup, workers, the reporter loop, the final report. The
// per-packet loop is engine::run_rx (src/engine/rx_loop.hpp), run by the
// backend the table chose (drivers/backend.hpp); nothing here runs per packet.
// A port set (--device a,b) is one run per port, side by side: each port's
// lines and JSON records name its device.
#include <algorithm>
#include <atomic>
#include <cstdio>

#include "backend.hpp"
#include "report.hpp"
#include "rx_config.hpp"
#include "setup.hpp"
#include "util/stop_signal.hpp"
#include "watch.hpp"

using namespace rateline;

namespace {

// Workers stop on this, not on the signal flag directly: the reporter
// decides when the run is over (signal, end markers, count, idle).
std::atomic<bool> g_workers_stop{false};

// rx --xdp-cleanup IFACE: every backend that can leave something on an interface removes it.
int clean_up(const std::string& iface) {
  bool cleaned_by_any = false, all_ok = true;
  for (const drivers::BackendDescriptor* b : drivers::backends()) {
    if (!b->cleanup) continue;
    bool ok = false;
    std::printf("rx: %s\n", b->cleanup(iface, ok).c_str());
    cleaned_by_any = true;
    all_ok &= ok;
  }
  if (!cleaned_by_any)
    std::fprintf(stderr, "rx: built without AF_XDP support: use `ip link set dev %s xdp off`\n", iface.c_str());
  return cleaned_by_any && all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  rx::Config cfg;
  if (const int rc = rx::parse_options(argc, argv, cfg); rc >= 0) return rc;
  install_stop_signals();
  if (!cfg.xdp_cleanup.empty()) return clean_up(cfg.xdp_cleanup);
  try {
    report::JsonLines json(cfg.json_path, cfg.csv_path);
    // Before set-up: a metrics port already taken stops the run before any socket or program exists.
    report::MetricsOutput metrics(cfg.metrics);
    const std::vector<rx::Config> ports = rx::port_configs(cfg);
    std::vector<rx::Run> runs;
    runs.reserve(ports.size());
    for (const rx::Config& port : ports) runs.push_back(rx::set_up(port));
    if (runs[0].placement.main_cpu >= 0) topo::pin_current_thread(runs[0].placement.main_cpu);
    const auto join_all = [&] {
      g_workers_stop.store(true, std::memory_order_relaxed);
      for (rx::Run& run : runs)
        for (auto& w : run.workers)
          if (w->thread.joinable()) w->thread.join();
    };
    try {
      for (rx::Run& run : runs) rx::start(run, g_workers_stop);
    } catch (const std::exception&) {
      join_all();  // the ports that did start
      throw;
    }
    // Each port's report, its JSON records tagged with its device.
    const auto each_port = [&](const auto& report_port) {
      for (size_t i = 0; i < runs.size(); ++i) {
        if (!ports[i].port_device.empty()) json.set_context("device", ports[i].port_device);
        report_port(ports[i], runs[i], i);
      }
      json.clear_context();
    };
    each_port([&](const rx::Config& port, const rx::Run& run, size_t) { rx::report_start(port, run, json); });
    if (const std::string line = metrics.start_line(); !line.empty()) {
      std::printf("rx: %s\n", line.c_str());
      std::fflush(stdout);
    }
    metrics.start();  // after report_start dropped this thread's capabilities: its thread copies them, and drops all
    const std::vector<std::string> ended_by = rx::watch_until_end(ports, runs, json, metrics);
    join_all();
    int rc = 0;
    each_port([&](const rx::Config& port, rx::Run& run, size_t i) {
      const int port_rc = rx::report_result(port, run, ended_by[i], json, metrics);
      rc = rc == 1 || port_rc == 1 ? 1 : std::max(rc, port_rc);  // an error outweighs a verdict
    });
    if (runs.size() > 1) rx::report_port_totals(ports, runs, json);
    // After the report: a full disk costs the JSON, never the numbers on the terminal.
    if (const std::string e = json.finish(); !e.empty()) {
      std::fprintf(stderr, "rx: %s\n", e.c_str());
      rc = 1;
    }
    metrics.linger();
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rx: %s\n", e.what());
    return 1;
  }
}
