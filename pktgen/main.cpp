// pktgen: options, setup, workers, live progress, the final report. The
// per-packet loop is engine::run_tx (src/engine/tx_loop.hpp), run by the
// backend the table chose (drivers/backend.hpp); nothing here runs per packet.
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

int main(int argc, char** argv) {
  pktgen::Config cfg;
  if (const int rc = pktgen::parse_options(argc, argv, cfg); rc >= 0) return rc;
  install_stop_signals();
  try {
    report::JsonLines json(cfg.json_path, cfg.csv_path);
    // Before set-up: a metrics port already taken stops the run before anything is opened or sent.
    report::MetricsOutput metrics(cfg.metrics);
    pktgen::Run run = pktgen::set_up(cfg);
    pktgen::report_start(cfg, run, json);
    if (const std::string line = metrics.start_line(); !line.empty()) std::printf("pktgen: %s\n", line.c_str());
    // The page is rendered here, from the snapshots below; workers never see it.
    const auto publish_metrics = [&](bool final) {
      if (!metrics.enabled()) return;
      const std::string error = metrics.publish(pktgen::metrics_page(cfg, run, final), now_ns(), final);
      if (!error.empty()) std::fprintf(stderr, "pktgen: %s\n", error.c_str());
    };
    publish_metrics(false);

    const std::vector<int> keep = run.choice.backend->capabilities();
    if (run.placement.main_cpu >= 0) topo::pin_current_thread(run.placement.main_cpu);
    engine::start_workers(run.workers, keep, [&run](pktgen::Worker& w, const std::function<void()>& ready) {
      w.result = run.backend->run(w.queue, w.plan, *w.snapshots, stop_flag(), ready);
    });
    if (run.replies) run.replies->start();  // every worker's sockets are adopted by now
    report_capabilities("pktgen", keep_only_capabilities(keep), run.workers);
    metrics.start();  // after the drop: its thread copies this thread's capabilities, and drops them all

    // Live progress: the reporter sleeps, workers never wait for it.
    pktgen::Progress progress(now_ns());
    while (!engine::all_done(run.workers)) {
      timespec ts{0, 100'000'000};
      nanosleep(&ts, nullptr);
      for (auto& w : run.workers)
        while (auto s = w->snapshots->try_pop()) w->latest = *s;
      progress.maybe_report(cfg, run, now_ns(), json);
      publish_metrics(false);
    }
    for (auto& w : run.workers) w->thread.join();
    if (run.replies) {
      // The last packets' replies are still on their way: a round trip's worth of grace, not a guess at loss.
      timespec grace{0, static_cast<long>(pktgen::kReplyGraceNs)};
      nanosleep(&grace, nullptr);
      run.replies->stop();
    }
    const int rc = pktgen::report_result(cfg, run, json);
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
