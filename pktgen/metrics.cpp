#include "metrics.hpp"

#include "report/prometheus_text.hpp"
#include "report/rates.hpp"

namespace rateline::pktgen {
namespace {

// Per-stream series only at the end, and at most this many: a --src-port
// range of 4096 flows must not make 4096 series per scrape.
constexpr size_t kMaxStreamSeries = 64;

using report::Labels;
using Type = report::PrometheusText::Type;

}  // namespace

std::string metrics_page(const Config& cfg, const Run& run, bool final) {
  report::PrometheusText page;
  page.family("rateline_run_info", Type::gauge, "The run's settings as labels (value always 1).");
  page.sample({{"tool", "pktgen"},
               {"settings", report::settings_text(cfg.burst, cfg.delay_ns, cfg.count, cfg.size)},
               {"dst", run.dst.text()},
               {"backend", run.choice.backend->name},
               {"burst", std::to_string(cfg.burst)},
               {"delay_ns", std::to_string(cfg.delay_ns)},
               {"count", std::to_string(cfg.count)},
               {"size", std::to_string(cfg.size)},
               {"threads", std::to_string(cfg.threads)},
               {"streams", std::to_string(run.streams)},
               {"sender_id", std::to_string(run.sender_id)},
               {"rate_pps_asked", run.asked_pps ? report::prom_double(*run.asked_pps) : ""}},
              1);
  page.family("rateline_pktgen_run_ended", Type::gauge,
              "1 once the run is over and every series holds the JSON result's value; 0 while it runs.");
  page.sample({}, final ? 1 : 0);

  // Per worker: from the snapshot ring while running, the joined result at the end.
  const auto counters = [&](const Worker& w) -> const stats::TxCounters& {
    return final ? w.result.counters : w.latest.counters;
  };
  const auto per_worker = [&](const char* name, const char* help, uint64_t stats::TxCounters::*field) {
    page.family(name, Type::counter, help);
    for (size_t i = 0; i < run.workers.size(); ++i)
      page.sample({{"worker", std::to_string(i)}}, counters(*run.workers[i]).*field);
  };
  per_worker("rateline_pktgen_sent_packets_total", "Data packets the backend took (JSON result: sent).",
             &stats::TxCounters::packets);
  per_worker("rateline_pktgen_sent_payload_bytes_total", "UDP payload bytes of those packets (JSON: payload_bytes).",
             &stats::TxCounters::payload_bytes);
  per_worker("rateline_pktgen_failed_packets_total",
             "Of the sent packets, those the OS refused for good (JSON: failed).", &stats::TxCounters::failed);
  per_worker("rateline_pktgen_backend_retries_total", "Commits that took nothing: device or socket full (JSON: retries).",
             &stats::TxCounters::retries);
  per_worker("rateline_pktgen_end_markers_total", "End markers sent (JSON: end_markers).",
             &stats::TxCounters::end_markers);
  per_worker("rateline_pktgen_pace_slips_total",
             "Times the rate-paced schedule fell more than 8 periods behind and was rebased (JSON: pace_slips).",
             &stats::TxCounters::pace_slips);

  if (run.replies) {
    const drivers::RttSnapshot rtt = run.replies->snapshot();
    page.family("rateline_pktgen_rtt_replies_total", Type::counter,
                "pktgen --rtt: replies timed, one round trip each (JSON: rtt.replies).");
    page.sample({}, rtt.counts.replies);
    page.family("rateline_pktgen_rtt_not_counted_total", Type::counter,
                "pktgen --rtt: what reached the reply sockets and was not timed, by reason (JSON: rtt.other_sender, "
                "rtt.implausible, rtt.not_ours, rtt.unauthenticated, rtt.socket_drops).");
    page.sample({{"reason", "other_sender"}}, rtt.counts.other_sender);
    page.sample({{"reason", "implausible"}}, rtt.counts.implausible);
    page.sample({{"reason", "not_ours"}}, rtt.counts.not_ours);
    page.sample({{"reason", "unauthenticated"}}, rtt.counts.unauthenticated);
    page.sample({{"reason", "socket_drop"}}, rtt.counts.socket_drops);
    page.family("rateline_pktgen_rtt_seconds", Type::histogram,
                "pktgen --rtt: round trip of each reply on pktgen's clock (reply's kernel receive stamp - the "
                "packet's send stamp). Buckets at 2^k ns.");
    page.histogram({}, report::latency_seconds(rtt.rtt));
    page.family("rateline_pktgen_rtt_jitter_seconds", Type::gauge, "pktgen --rtt: RFC 3550 jitter of the replies (JSON: rtt.jitter_ns).");
    page.sample_double({}, rtt.jitter_ns / 1e9);
  }

  if (final) {
    page.family("rateline_pktgen_stream_sent_packets_total", Type::counter,
                "Per stream (one per source port or worker), at the end of the run only; at most 64 streams "
                "(rateline_pktgen_streams_omitted says how many more).");
    size_t shown = 0, omitted = 0;
    for (const auto& w : run.workers)
      for (const auto& f : w->result.flows) {
        if (shown == kMaxStreamSeries) {
          ++omitted;
          continue;
        }
        page.sample({{"stream", std::to_string(f.stream)}}, f.next_seq);
        ++shown;
      }
    page.family("rateline_pktgen_streams_omitted", Type::gauge, "Streams left out of the per-stream series (cap 64).");
    page.sample({}, omitted);
  }
  return page.take();
}

}  // namespace rateline::pktgen
