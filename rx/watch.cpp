#include "watch.hpp"

#include <cinttypes>
#include <cstdio>
#include <ctime>

#include "metrics.hpp"
#include "run_end.hpp"
#include "util/clock.hpp"
#include "util/stop_signal.hpp"
#include "util/units.hpp"

namespace rateline::rx {
namespace {

// How long nothing must arrive before end markers may end the run: pktgen
// sends its copies milliseconds apart, and a stream still arriving is not over.
constexpr uint64_t kEndQuietNs = 200'000'000;

}  // namespace

std::string watch_until_end(const Config& cfg, Run& run, report::JsonLines& json, report::MetricsOutput& metrics) {
  const uint64_t t0 = now_ns();
  uint64_t last_print_ns = t0, last_data = 0;
  RunEnd run_end;
  for (;;) {
    timespec ts{0, 50'000'000};
    nanosleep(&ts, nullptr);
    for (auto& w : run.workers) {
      while (auto s = w->snapshots->try_pop()) w->latest = *s;
      while (auto e = w->events->try_pop()) run_end.add(*e);
    }
    stats::RxCounters sum;
    bool any_done = false;
    for (auto& w : run.workers) {
      const stats::RxCounters& c = w->latest.counters;
      sum.data += c.data;
      sum.lost_so_far += c.lost_so_far;
      sum.streams_seen += c.streams_seen;
      sum.streams_ended += c.streams_ended;
      sum.stream_count = std::max(sum.stream_count, c.stream_count);
      sum.corrupt += c.corrupt;
      sum.backend_drops += c.backend_drops;
      sum.last_ns = std::max(sum.last_ns, c.last_ns);
      sum.end_markers += c.end_markers;
      sum.events_lost += c.events_lost;
      any_done |= w->done.load(std::memory_order_acquire);
    }
    const uint64_t now = now_ns();
    if (metrics.enabled())
      if (const std::string e = metrics.publish(live_metrics_page(cfg, run), now, false); !e.empty())
        std::fprintf(stderr, "rx: %s\n", e.c_str());
    if (stop_flag().load()) return "signal";
    if (any_done) return "worker error";
    if (auto reason = run.backend->end_now(sum.data, now)) return *reason;
    // End markers are evidence: they end the run once every sender's
    // streams have believed ones and nothing has arrived for a moment.
    // (An in-kernel counter and an overflowed event ring leave only the
    // totals to go by.)
    const bool quiet = sum.last_ns == 0 || (now > sum.last_ns && now - sum.last_ns >= kEndQuietNs);
    const bool by_totals = run.backend->ends_by_totals() || sum.events_lost;
    const bool markers_done =
        by_totals ? sum.stream_count && sum.streams_ended >= sum.stream_count && sum.streams_ended >= sum.streams_seen
                  : run_end.all_ended(cfg.expect_senders);
    if (markers_done && quiet) return "end markers";
    if (cfg.expect && sum.data >= cfg.expect) return "count reached";
    // Idle counts only once something arrived: rx may be started long before the sender.
    if (cfg.idle_ns && sum.last_ns && now > sum.last_ns && now - sum.last_ns > cfg.idle_ns) return "idle timeout";
    if (cfg.duration_ns && now - t0 >= cfg.duration_ns) return "duration";
    if (!cfg.quiet && now - last_print_ns >= kNsPerSec) {
      const double dt = static_cast<double>(now - last_print_ns) / 1e9;
      std::printf("%7.1fs  received %-10" PRIu64 " %9s pps  lost %-8" PRIu64 " corrupt %-6" PRIu64
                  " socket drops %-8" PRIu64 " streams %" PRIu64 "/%" PRIu64 " ended\n",
                  static_cast<double>(now - t0) / 1e9, sum.data,
                  units::si(static_cast<double>(sum.data - last_data) / dt).c_str(), sum.lost_so_far, sum.corrupt,
                  sum.backend_drops, sum.streams_ended, sum.streams_seen);
      std::fflush(stdout);
      json.write({{"type", "progress"}, {"tool", "rx"}, {"t_s", static_cast<double>(now - t0) / 1e9},
                  {"received", sum.data}, {"pps", static_cast<double>(sum.data - last_data) / dt},
                  {"lost_so_far", sum.lost_so_far}, {"corrupt", sum.corrupt}, {"socket_drops", sum.backend_drops}});
      last_print_ns = now;
      last_data = sum.data;
    }
  }
}

}  // namespace rateline::rx
