// pktgen: options, setup, workers, live progress, the final report. The
// per-packet loop is engine::run_tx (src/engine/tx_loop.hpp), run by the
// backend the table chose (drivers/backend.hpp); nothing here runs per packet.
// A port set (--device a,b) is one run per port, side by side: each port's
// lines and JSON records name its device.
#include <cstdio>
#include <ctime>

#include "metrics.hpp"
#include "pktgen_config.hpp"
#include "report.hpp"
#include "setup.hpp"
#include "util/cli.hpp"
#include "util/clock.hpp"
#include "util/privileges.hpp"
#include "util/stop_signal.hpp"

using namespace rateline;

namespace {

// 1 (an error) outweighs 3 (a verdict), which outweighs 0.
int worse(int a, int b) { return a == 1 || b == 1 ? 1 : std::max(a, b); }

}  // namespace

int main(int argc, char** argv) {
  pktgen::Config cfg;
  if (const int rc = pktgen::parse_options(argc, argv, cfg); rc >= 0) return rc;
  install_stop_signals();
  try {
    report::JsonLines json(cfg.json_path, cfg.csv_path);
    // Before set-up: a metrics port already taken stops the run before anything is opened or sent.
    report::MetricsOutput metrics(cfg.metrics);
    const std::vector<pktgen::Config> ports = pktgen::port_configs(cfg);
    std::vector<pktgen::Run> runs;
    runs.reserve(ports.size());
    for (const pktgen::Config& port : ports) runs.push_back(pktgen::set_up(port));
    // Each port's report, its JSON records tagged with its device.
    const auto each_port = [&](const auto& report_port) {
      for (size_t i = 0; i < runs.size(); ++i) {
        if (!ports[i].port_device.empty()) json.set_context("device", ports[i].port_device);
        report_port(ports[i], runs[i]);
      }
      json.clear_context();
    };
    each_port([&](const pktgen::Config& port, const pktgen::Run& run) { pktgen::report_start(port, run, json); });
    if (const std::string line = metrics.start_line(); !line.empty()) std::printf("pktgen: %s\n", line.c_str());
    // The page is rendered here, from the snapshots below; workers never see it. (A port set has no page.)
    const auto publish_metrics = [&](bool final) {
      if (!metrics.enabled()) return;
      const std::string error = metrics.publish(pktgen::metrics_page(ports[0], runs[0], final), now_ns(), final);
      if (!error.empty()) std::fprintf(stderr, "pktgen: %s\n", error.c_str());
    };
    publish_metrics(false);

    if (runs[0].placement.main_cpu >= 0) topo::pin_current_thread(runs[0].placement.main_cpu);
    std::vector<int> keep;
    std::vector<const pktgen::Worker*> all_workers;
    for (pktgen::Run& run : runs) {
      const std::vector<int> run_keep = run.choice.backend->capabilities();
      keep.insert(keep.end(), run_keep.begin(), run_keep.end());
      engine::start_workers(run.workers, run_keep, [&run](pktgen::Worker& w, const std::function<void()>& ready) {
        w.result = run.backend->run(w.queue, w.plan, *w.snapshots, stop_flag(), ready);
      });
      for (const auto& w : run.workers) all_workers.push_back(w.get());
    }
    for (pktgen::Run& run : runs)
      if (run.replies) run.replies->start();  // every worker's sockets are adopted by now
    report_capabilities("pktgen", keep_only_capabilities(keep), all_workers);
    metrics.start();  // after the drop: its thread copies this thread's capabilities, and drops them all

    // Live progress: the reporter sleeps, workers never wait for it.
    std::vector<pktgen::Progress> progress(runs.size(), pktgen::Progress(now_ns()));
    const auto all_done = [&] {
      for (const pktgen::Run& run : runs)
        if (!engine::all_done(run.workers)) return false;
      return true;
    };
    while (!all_done()) {
      timespec ts{0, 100'000'000};
      nanosleep(&ts, nullptr);
      for (pktgen::Run& run : runs)
        for (auto& w : run.workers)
          while (auto s = w->snapshots->try_pop()) w->latest = *s;
      size_t i = 0;
      each_port([&](const pktgen::Config& port, const pktgen::Run& run) { progress[i++].maybe_report(port, run, now_ns(), json); });
      publish_metrics(false);
    }
    bool replies = false;
    for (pktgen::Run& run : runs) {
      for (auto& w : run.workers) w->thread.join();
      replies |= run.replies != nullptr;
    }
    if (replies) {
      // The last packets' replies are still on their way: a round trip's worth of grace, not a guess at loss.
      timespec grace{0, static_cast<long>(pktgen::kReplyGraceNs)};
      nanosleep(&grace, nullptr);
      for (pktgen::Run& run : runs)
        if (run.replies) run.replies->stop();
    }
    int rc = 0;
    each_port([&](const pktgen::Config& port, const pktgen::Run& run) { rc = worse(rc, pktgen::report_result(port, run, json)); });
    if (runs.size() > 1) pktgen::report_port_totals(ports, runs, json);
    // After the report: a full disk costs the JSON, never the numbers on the terminal.
    if (const std::string e = json.finish(); !e.empty()) {
      std::fprintf(stderr, "pktgen: %s\n", e.c_str());
      rc = 1;
    }
    publish_metrics(true);
    metrics.linger();
    return rc;
  } catch (const cli::UsageError& e) {  // found only at set-up (a size beyond the path MTU)
    std::fprintf(stderr, "pktgen: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pktgen: %s\n", e.what());
    return 1;
  }
}
