// rx: options, setup, workers, the reporter loop, the final report. The
// per-packet loop is engine::run_rx (src/engine/rx_loop.hpp), run by the
// backend the table chose (drivers/backend.hpp); nothing here runs per packet.
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
    rx::Run run = rx::set_up(cfg);
    if (run.placement.main_cpu >= 0) topo::pin_current_thread(run.placement.main_cpu);
    rx::start(run, g_workers_stop);
    rx::report_start(cfg, run, json);
    if (const std::string line = metrics.start_line(); !line.empty()) {
      std::printf("rx: %s\n", line.c_str());
      std::fflush(stdout);
    }
    metrics.start();  // after report_start dropped this thread's capabilities: its thread copies them, and drops all
    const std::string ended_by = rx::watch_until_end(cfg, run, json, metrics);
    g_workers_stop.store(true, std::memory_order_relaxed);
    for (auto& w : run.workers) w->thread.join();
    const int rc = rx::report_result(cfg, run, ended_by, json, metrics);
    metrics.linger();
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rx: %s\n", e.what());
    return 1;
  }
}
