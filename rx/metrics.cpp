#include "metrics.hpp"

#include <algorithm>

#include "report/prometheus_text.hpp"

namespace rateline::rx {
namespace {

// Label sets are capped so that a flood of senders or streams (a forged
// one, or --src-port with 4096 flows) cannot make a scrape huge; the
// *_omitted gauges say how many were left out. Workers are at most 64 (--threads).
constexpr size_t kMaxSenderSeries = 64;
constexpr size_t kMaxStreamSeries = 64;

using report::Labels;
using Type = report::PrometheusText::Type;

void run_info(report::PrometheusText& page, const Config& cfg, const Run& run, bool final) {
  page.family("rateline_run_info", Type::gauge, "The run's settings as labels (value always 1).");
  page.sample({{"tool", "rx"},
               {"bind", run.bind.text()},
               {"backend", run.choice.backend->name},
               {"threads", std::to_string(cfg.threads)},
               {"expect", std::to_string(cfg.expect)},
               {"max_streams", std::to_string(cfg.max_streams)},
               {"rcvbuf_bytes", std::to_string(run.workers.front()->info.socket.rcvbuf_bytes)}},
              1);
  page.family("rateline_rx_run_ended", Type::gauge,
              "1 once the run is over and every series holds the JSON result's value; 0 while it runs.");
  page.sample({}, final ? 1 : 0);
}

// The per-worker counters: `counters(i)` is worker i's snapshot or result.
template <class CountersOf>
void per_worker(report::PrometheusText& page, size_t workers, bool reflecting, CountersOf counters) {
  const auto family = [&](const char* name, const char* help, uint64_t stats::RxCounters::*field) {
    page.family(name, Type::counter, help);
    for (size_t i = 0; i < workers; ++i) page.sample({{"worker", std::to_string(i)}}, counters(i).*field);
  };
  family("rateline_rx_worker_frames_total", "Everything the backend delivered to the worker (JSON: frames).",
         &stats::RxCounters::frames);
  family("rateline_rx_worker_data_packets_total",
         "Our data packets with a good checksum, duplicates included (JSON: arrivals, summed over workers).",
         &stats::RxCounters::data);
  family("rateline_rx_received_payload_bytes_total", "UDP payload bytes of those (JSON: payload_bytes).",
         &stats::RxCounters::payload_bytes);
  family("rateline_rx_corrupt_packets_total", "Our packets whose payload checksum failed (JSON: corrupt).",
         &stats::RxCounters::corrupt);
  family("rateline_rx_malformed_packets_total", "Our magic, inconsistent header or length (JSON: malformed).",
         &stats::RxCounters::malformed);
  family("rateline_rx_foreign_packets_total", "Frames that were not ours (JSON: foreign).", &stats::RxCounters::foreign);
  family("rateline_rx_unauthenticated_packets_total", "rx --key-file: datagrams without the key's tag, not decoded "
         "(JSON: unauthenticated).", &stats::RxCounters::unauthenticated);
  family("rateline_rx_socket_drops_total",
         "Drops the backend itself reports: socket overflow (SO_RXQ_OVFL), ring full (JSON: socket_drops).",
         &stats::RxCounters::backend_drops);
  family("rateline_rx_end_markers_total", "End markers that passed the checksum (JSON: end_markers).",
         &stats::RxCounters::end_markers);
  if (reflecting) {
    family("rateline_rx_reflected_packets_total", "rx --reflect: data packets sent back to their senders (JSON: reflected).",
           &stats::RxCounters::reflected);
    family("rateline_rx_reflect_dropped_packets_total",
           "rx --reflect: replies the socket or TX ring had no room for or the driver failed to send, dropped without waiting (JSON: reflect_failed).",
           &stats::RxCounters::reflect_failed);
  }
}

const char* kReceivedHelp =
    "Distinct data packets received (JSON: received). While the run goes: the distinct packets of the streams so "
    "far, which only grows and ends at the result's value.";
const char* kLostHelp =
    "Packets missing: a gauge, not a counter, since a late packet fills a gap. While the run goes: sequence gaps "
    "so far (progress lost_so_far); at the end: the JSON result's lost.";

}  // namespace

std::string live_metrics_page(const Config& cfg, const Run& run) {
  report::PrometheusText page;
  run_info(page, cfg, run, false);
  per_worker(page, run.workers.size(), cfg.reflect_every != 0, [&](size_t i) -> const stats::RxCounters& { return run.workers[i]->latest.counters; });
  uint64_t received = 0, lost = 0;
  for (const auto& w : run.workers) {
    received += w->latest.counters.unique_so_far;
    lost += w->latest.counters.lost_so_far;
  }
  page.family("rateline_rx_received_packets_total", Type::counter, kReceivedHelp);
  page.sample({}, received);
  page.family("rateline_rx_lost_packets", Type::gauge, kLostHelp);
  page.sample({}, lost);
  return page.take();
}

std::string final_metrics_page(const Config& cfg, const Run& run, const std::vector<engine::RxResult>& results,
                               const report::RxSummary& s, const ledger::Ledger& drops, double loss_pct) {
  report::PrometheusText page;
  run_info(page, cfg, run, true);
  per_worker(page, results.size(), cfg.reflect_every != 0, [&](size_t i) -> const stats::RxCounters& { return results[i].counters; });
  page.family("rateline_rx_received_packets_total", Type::counter, kReceivedHelp);
  page.sample({}, s.unique);
  page.family("rateline_rx_lost_packets", Type::gauge, kLostHelp);
  page.sample({}, s.lost);
  page.family("rateline_rx_loss_ratio", Type::gauge, "lost / sent at the end of the run (JSON verdict.loss_pct / 100).");
  page.sample_double({}, loss_pct / 100.0);
  page.family("rateline_rx_reordered_packets_total", Type::counter, "Packets that arrived after a later one (JSON: reordered).");
  page.sample({}, s.reordered);
  page.family("rateline_rx_duplicated_packets_total", Type::counter, "Second and later copies of a packet (JSON: duplicated).");
  page.sample({}, s.duplicates);
  page.family("rateline_rx_stale_packets_total", Type::counter, "Packets too far behind the sequence window to place (JSON: stale).");
  page.sample({}, s.stale);
  if (s.all_ended) {
    page.family("rateline_rx_sent_packets", Type::gauge, "Packets sent, by the senders' end markers (JSON: sent; absent when not every stream ended).");
    page.sample({}, s.sent_by_markers);
  }
  page.family("rateline_rx_latency_seconds", Type::histogram,
              "One-way latency of every data packet on rx's clock (receive stamp - send stamp; streams whose stamps "
              "are on another host's or time namespace's clock are left out). Buckets at 2^k ns.");
  page.histogram({}, report::latency_seconds(s.latency));
  page.family("rateline_rx_jitter_seconds", Type::gauge, "RFC 3550 interarrival jitter of the busiest stream (JSON: jitter_ns).");
  page.sample_double({}, s.jitter_ns / 1e9);

  const auto sender_labels = [](const report::SenderRow& g) -> Labels {
    return {{"address", g.address}, {"sender_id", std::to_string(g.sender_id)}};
  };
  const size_t senders = std::min(s.senders.size(), kMaxSenderSeries);
  const auto per_sender = [&](const char* name, Type type, const char* help, uint64_t report::SenderRow::*field) {
    page.family(name, type, help);
    for (size_t i = 0; i < senders; ++i) page.sample(sender_labels(s.senders[i]), s.senders[i].*field);
  };
  per_sender("rateline_rx_sender_received_packets_total", Type::counter,
             "Per sender (source address, sender id: one pktgen run), at most 64 (JSON: senders[].received).",
             &report::SenderRow::received);
  per_sender("rateline_rx_sender_lost_packets", Type::gauge, "Per sender (JSON: senders[].lost).", &report::SenderRow::lost);
  per_sender("rateline_rx_sender_duplicated_packets_total", Type::counter, "Per sender (JSON: senders[].duplicated).",
             &report::SenderRow::duplicates);
  per_sender("rateline_rx_sender_corrupt_packets_total", Type::counter, "Per sender (JSON: senders[].corrupt).",
             &report::SenderRow::corrupt);
  page.family("rateline_rx_senders_omitted", Type::gauge, "Senders left out of the per-sender series (cap 64).");
  page.sample({}, s.senders.size() - senders);

  const size_t streams = std::min(s.streams.size(), kMaxStreamSeries);
  const auto per_stream = [&](const char* name, Type type, const char* help, uint64_t report::StreamRow::*field) {
    page.family(name, type, help);
    for (size_t i = 0; i < streams; ++i) {
      const report::StreamRow& r = s.streams[i];
      page.sample({{"from", r.key.from.text()}, {"sender_id", std::to_string(r.key.sender)}, {"stream", std::to_string(r.stream)}},
                  r.*field);
    }
  };
  per_stream("rateline_rx_stream_received_packets_total", Type::counter,
             "Per stream (source address:port, sender id, stream id), at most 64 (JSON: streams[].received).",
             &report::StreamRow::unique);
  per_stream("rateline_rx_stream_lost_packets", Type::gauge, "Per stream (JSON: streams[].lost).", &report::StreamRow::lost);
  per_stream("rateline_rx_stream_reordered_packets_total", Type::counter, "Per stream (JSON: streams[].reordered).",
             &report::StreamRow::reordered);
  per_stream("rateline_rx_stream_duplicated_packets_total", Type::counter, "Per stream (JSON: streams[].duplicated).",
             &report::StreamRow::duplicates);
  page.family("rateline_rx_streams_omitted", Type::gauge, "Streams left out of the per-stream series (cap 64).");
  page.sample({}, s.streams.size() - streams);

  // The drop ledger: where the missing packets went, layer by layer (JSON: ledger.lines).
  page.family("rateline_rx_ledger_attributed_packets", Type::gauge,
              "Missing packets the drop ledger attributes to a layer (JSON: ledger.lines[].attributed).");
  for (const ledger::Line& l : drops.lines) page.sample({{"layer", l.layer}}, l.attributed);
  page.family("rateline_rx_ledger_counted_packets", Type::gauge,
              "What that layer's own counters moved during the run (JSON: ledger.lines[].counted).");
  for (const ledger::Line& l : drops.lines) page.sample({{"layer", l.layer}}, l.counted);
  page.family("rateline_rx_ledger_unattributed_packets", Type::gauge, "Missing packets no layer's counters explain (JSON: ledger.unattributed).");
  page.sample({}, drops.unattributed);
  return page.take();
}

}  // namespace rateline::rx
