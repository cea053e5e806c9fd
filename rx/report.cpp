#include "report.hpp"

#include <cinttypes>
#include <cstdio>
#include <optional>

#include "metrics.hpp"
#include "pcap_out.hpp"
#include "report/rx_summary.hpp"
#include "util/clock.hpp"
#include "util/clock_id.hpp"
#include "util/privileges.hpp"
#include "util/stop_signal.hpp"

namespace rateline::rx {

void report_start(const Config& cfg, const Run& run, report::JsonLines& json) {
  const CapabilityDrop main_caps = keep_only_capabilities(run.choice.backend->capabilities());
  const drivers::RxWorkerInfo& first = run.workers.front()->info;
  std::printf("rx: listening on %s%s, backend %s, %u worker(s); placement: %s\n", run.bind.text().c_str(),
              run.choice.backend->frames ? (" (tapping " + run.iface_name + ")").c_str() : "",
              run.choice.note.c_str(), cfg.threads, run.placement.text.c_str());
  for (const std::string& line : run.backend->buffer_lines(first)) std::printf("rx: %s\n", line.c_str());
  std::printf("rx: stream state: at most %u sender x stream pairs per worker, %" PRIu64
              " MiB for all workers at most, taken as streams appear\n",
              cfg.max_streams, (cfg.stream_state_bytes + (1 << 20) - 1) >> 20);
  for (const std::string& line : run.backend->start_lines()) std::printf("rx: %s\n", line.c_str());
  report_capabilities("rx", main_caps, run.workers);
  std::fflush(stdout);
  json.write({{"type", "start"}, {"tool", "rx"}, {"bind", run.bind.text()},
              {"backend", run.choice.backend->name}, {"backend_note", run.choice.note},
              {"threads", cfg.threads}, {"rcvbuf_bytes", first.socket.rcvbuf_bytes},
              {"rcvbuf_forced", first.socket.rcvbuf_forced}, {"placement", run.placement.text}, {"expect", cfg.expect}});
}

int report_result(const Config& cfg, Run& run, const std::string& ended_by, report::JsonLines& json,
                  report::MetricsOutput& metrics) {
  std::vector<engine::RxResult> results;
  uint64_t ring_empty = 0;
  std::string errors;
  for (auto& w : run.workers) {
    if (!w->error.empty()) errors += (errors.empty() ? "" : "; ") + w->error;
    results.push_back(std::move(w->result));
    ring_empty += w->info.buffer_ring_empty;
  }
  run.backend->finish(results);
  report::RxSummary summary = report::summarize(results, cfg.expect, this_clock_id());
  summary.receive_stamps = run.backend->receive_stamps();
  summary.reflect_every = cfg.reflect_every;
  const bool ring = run.backend->has_buffer_ring();
  if (!cfg.port_device.empty()) std::printf("\nport %s:", cfg.port_device.c_str());
  std::printf("\n%s", report::format_table(summary, cfg.ipv6).c_str());
  std::printf("ended by: %s%s\n", ended_by.c_str(),
              ring ? (", io_uring buffer ring ran dry " + std::to_string(ring_empty) + " times").c_str() : "");
  ledger::Path drop_path;
  drop_path.missing = summary.lost;
  drop_path.sent = summary.unique + summary.lost;
  drop_path.received = summary.unique;
  drop_path.corrupt = summary.totals.corrupt;
  drop_path.socket_drops = summary.totals.backend_drops;
  drop_path.bad_udp_checksum = summary.totals.bad_udp_checksum;
  drop_path.fragments = summary.totals.fragments;
  drop_path.raw_receiver = run.backend->workers_see_frames();
  drop_path.receiver_backend = run.choice.backend->name;
  drop_path.receiver_drops_in_xdp = run.choice.backend->rx_drops_in_xdp;
  drop_path.receiver = ledger::delta(run.ledger_start, ledger::read_counters(run.ledger_scope));
  const ledger::Ledger drops = ledger::reconcile(drop_path);
  std::printf("%s", ledger::format(drops).c_str());
  std::printf("%s", run.backend->end_text(summary).c_str());
  // The verdict a CI job reads from the exit code.
  const uint64_t loss_base = summary.all_ended ? summary.sent_by_markers : report::sat_add(summary.unique, summary.lost);
  const double loss_pct = loss_base ? 100.0 * static_cast<double>(summary.lost) / static_cast<double>(loss_base) : 0.0;
  std::string verdict_failed;
  if ((cfg.expect || cfg.expect_senders) && summary.unique == 0)
    verdict_failed = "nothing arrived (" + std::string(cfg.expect ? "--count" : "--expect-senders") + " was given)";
  else if (cfg.expect_senders && summary.senders.size() < cfg.expect_senders)
    verdict_failed = std::to_string(summary.senders.size()) + " sender(s) heard, --expect-senders " +
                     std::to_string(cfg.expect_senders);
  else if (cfg.max_loss_pct >= 0 && loss_pct > cfg.max_loss_pct)
    verdict_failed = "loss " + std::to_string(loss_pct) + "% exceeds --max-loss " + std::to_string(cfg.max_loss_pct) + "%";
  if (!verdict_failed.empty()) std::printf("verdict: FAILED: %s\n", verdict_failed.c_str());
  else if (cfg.max_loss_pct >= 0 || cfg.expect_senders) std::printf("verdict: passed\n");
  if (!errors.empty()) std::fprintf(stderr, "rx: %s\n", errors.c_str());
  std::fflush(stdout);
  nlohmann::json record = report::to_json(summary, cfg.ipv6);
  record["verdict"] = {{"max_loss_pct", cfg.max_loss_pct >= 0 ? nlohmann::json(cfg.max_loss_pct) : nlohmann::json(nullptr)},
                       {"expect_senders", cfg.expect_senders}, {"loss_pct", loss_pct},
                       {"passed", verdict_failed.empty()}, {"reason", verdict_failed}};
  record["ledger"] = ledger::to_json(drops, std::nullopt, drop_path.receiver);
  record["ended_by"] = ended_by;
  record["interrupted"] = stop_signal_number() != 0;
  record["backend"] = run.choice.backend->name;
  record["buffer_ring_empty"] = ring_empty;
  record["rcvbuf_bytes"] = run.workers.front()->info.socket.rcvbuf_bytes;
  record["errors"] = errors;
  if (!cfg.pcap_out.empty()) {
    std::vector<const engine::FrameKeeper*> keepers;
    for (auto& w : run.workers) keepers.push_back(w->keeper.get());
    const KeptFrames kept = write_kept_frames(cfg.pcap_out, keepers, cfg.pcap_max, run.bind);
    if (!kept.error.empty()) {
      std::fprintf(stderr, "rx: %s\n", kept.error.c_str());
      errors += (errors.empty() ? "" : "; ") + kept.error;
      record["errors"] = errors;
    } else {
      std::printf("pcap: %zu frame(s) in %s: the first %zu received, %zu bad one(s) after them%s\n", kept.first + kept.bad,
                  cfg.pcap_out.c_str(), kept.first, kept.bad,
                  kept.bad_not_kept ? (", " + std::to_string(kept.bad_not_kept) + " more bad ones not kept (--pcap-max)").c_str() : "");
      std::fflush(stdout);
    }
    record["pcap"] = kept.to_json(cfg.pcap_out);
  }
  run.backend->add_to_result(record, summary);
  json.write(record);
  run.result = record;
  // From the very numbers the JSON result was just written from.
  if (metrics.enabled())
    if (const std::string e = metrics.publish(final_metrics_page(cfg, run, results, summary, drops, loss_pct), now_ns(), true);
        !e.empty())
      std::fprintf(stderr, "rx: %s\n", e.c_str());
  if (!errors.empty()) return 1;
  return verdict_failed.empty() ? 0 : kExitVerdict;
}

void report_port_totals(const std::vector<Config>& ports, const std::vector<Run>& runs, report::JsonLines& json) {
  uint64_t received = 0, lost = 0, corrupt = 0, duplicated = 0, payload_bytes = 0;
  nlohmann::json devices = nlohmann::json::array();
  for (size_t i = 0; i < runs.size(); ++i) {
    const nlohmann::json& r = runs[i].result;
    received += r.value("received", uint64_t{0});
    lost += r.value("lost", uint64_t{0});
    corrupt += r.value("corrupt", uint64_t{0});
    duplicated += r.value("duplicated", uint64_t{0});
    payload_bytes += r.value("payload_bytes", uint64_t{0});
    devices.push_back(ports[i].port_device);
  }
  std::printf("\nall %zu ports: received %" PRIu64 ", lost %" PRIu64 ", corrupt %" PRIu64 ", duplicated %" PRIu64
              ", %" PRIu64 " payload bytes\n", runs.size(), received, lost, corrupt, duplicated, payload_bytes);
  std::fflush(stdout);
  json.write({{"type", "ports"}, {"tool", "rx"}, {"devices", devices}, {"received", received}, {"lost", lost},
              {"corrupt", corrupt}, {"duplicated", duplicated}, {"payload_bytes", payload_bytes}});
}

}  // namespace rateline::rx
