#include "watch.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdint>
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

// One port's watch: its workers' latest counts, its stream ends, its progress line.
class PortWatch {
 public:
  PortWatch(const Config& cfg, Run& run, uint64_t t0) : cfg_(cfg), run_(run), t0_(t0), last_print_ns_(t0) {}

  // Why this port's run is over, or "" while it goes on (the signal is the caller's).
  std::string step(uint64_t now, report::JsonLines& json) {
    for (auto& w : run_.workers) {
      while (auto s = w->snapshots->try_pop()) w->latest = *s;
      while (auto e = w->events->try_pop()) run_end_.add(*e);
    }
    stats::RxCounters sum;
    bool any_done = false;
    // Up to when every worker had emptied its queue. Quiet and idle are
    // judged from the last arrival to here, never to now: a worker kept off
    // the CPU, or still reading a backlog (whose kernel stamps are old), has
    // packets waiting that the watch cannot see, and ending then would leave
    // them unread in the queue, counted nowhere.
    uint64_t seen_ns = UINT64_MAX;
    for (auto& w : run_.workers) {
      const stats::RxCounters& c = w->latest.counters;
      seen_ns = std::min(seen_ns, c.drained_ns);
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
    if (any_done) return "worker error";
    if (auto reason = run_.backend->end_now(sum.data, now)) return *reason;
    // End markers are evidence: they end the run once every sender's
    // streams have believed ones and nothing has arrived for a moment.
    // (An in-kernel counter and an overflowed event ring leave only the
    // totals to go by.)
    const bool quiet = sum.last_ns == 0 || (seen_ns > sum.last_ns && seen_ns - sum.last_ns >= kEndQuietNs);
    const bool by_totals = run_.backend->ends_by_totals() || sum.events_lost;
    const bool markers_done =
        by_totals ? sum.stream_count && sum.streams_ended >= sum.stream_count && sum.streams_ended >= sum.streams_seen
                  : run_end_.all_ended(cfg_.expect_senders);
    if (markers_done && quiet) return "end markers";
    if (cfg_.expect && sum.data >= cfg_.expect) return "count reached";
    // Idle counts only once something arrived: rx may be started long before the sender.
    if (cfg_.idle_ns && sum.last_ns && seen_ns > sum.last_ns && seen_ns - sum.last_ns > cfg_.idle_ns) return "idle timeout";
    if (cfg_.duration_ns && now - t0_ >= cfg_.duration_ns) return "duration";
    if (!cfg_.quiet && now - last_print_ns_ >= kNsPerSec) {
      const double dt = static_cast<double>(now - last_print_ns_) / 1e9;
      if (!cfg_.port_device.empty()) std::printf("%-8s ", cfg_.port_device.c_str());  // a port set: which port
      std::printf("%7.1fs  received %-10" PRIu64 " %9s pps  lost %-8" PRIu64 " corrupt %-6" PRIu64
                  " socket drops %-8" PRIu64 " streams %" PRIu64 "/%" PRIu64 " ended\n",
                  static_cast<double>(now - t0_) / 1e9, sum.data,
                  units::si(static_cast<double>(sum.data - last_data_) / dt).c_str(), sum.lost_so_far, sum.corrupt,
                  sum.backend_drops, sum.streams_ended, sum.streams_seen);
      std::fflush(stdout);
      nlohmann::json record = {{"type", "progress"}, {"tool", "rx"}, {"t_s", static_cast<double>(now - t0_) / 1e9},
                               {"received", sum.data}, {"pps", static_cast<double>(sum.data - last_data_) / dt},
                               {"lost_so_far", sum.lost_so_far}, {"corrupt", sum.corrupt}, {"socket_drops", sum.backend_drops}};
      if (!cfg_.port_device.empty()) record["device"] = cfg_.port_device;
      json.write(record);
      last_print_ns_ = now;
      last_data_ = sum.data;
    }
    return {};
  }

 private:
  const Config& cfg_;
  Run& run_;
  const uint64_t t0_;
  uint64_t last_print_ns_, last_data_ = 0;
  RunEnd run_end_;
};

}  // namespace

std::vector<std::string> watch_until_end(const std::vector<Config>& ports, std::vector<Run>& runs, report::JsonLines& json,
                                         report::MetricsOutput& metrics) {
  const uint64_t t0 = now_ns();
  std::vector<PortWatch> watches;
  for (size_t i = 0; i < runs.size(); ++i) watches.emplace_back(ports[i], runs[i], t0);
  std::vector<std::string> ended_by(runs.size());
  for (;;) {
    timespec ts{0, 50'000'000};
    nanosleep(&ts, nullptr);
    const uint64_t now = now_ns();
    const bool stop = stop_flag().load();
    bool all_over = true;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (ended_by[i].empty()) ended_by[i] = stop ? "signal" : watches[i].step(now, json);
      all_over &= !ended_by[i].empty();
    }
    if (metrics.enabled())  // one run only: a port set has no page (options.cpp)
      if (const std::string e = metrics.publish(live_metrics_page(ports[0], runs[0]), now, false); !e.empty())
        std::fprintf(stderr, "rx: %s\n", e.c_str());
    if (all_over) return ended_by;
  }
}

}  // namespace rateline::rx
