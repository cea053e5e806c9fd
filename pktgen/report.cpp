#include "report.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "net/iface.hpp"
#include "report/rates.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "util/stop_signal.hpp"

namespace rateline::pktgen {
namespace {

// Exit codes (README "Exit codes").
constexpr int kExitVerdict = 3;  // the OS refused packets (sender errors)

const char* layer_name(RateLayer l) { return l == RateLayer::l1 ? "L1" : l == RateLayer::l2 ? "L2" : "payload"; }

std::string settings_of(const Config& cfg) {
  return report::settings_text(cfg.burst, cfg.delay_ns, cfg.count, cfg.mix_sizes.empty() ? cfg.size : 0);
}

// A size mix as "64/594/1518 B L2 frames (18/548/1472 B payload), weights 7:4:1".
std::string mix_text(const Config& cfg) {
  std::string l2, payload, weights;
  for (size_t i = 0; i < cfg.mix_sizes.size(); ++i) {
    const char* sep = i ? "/" : "";
    l2 += sep + std::to_string(cfg.frame_sizes(cfg.mix_sizes[i]).l2);
    payload += sep + std::to_string(cfg.mix_sizes[i]);
    weights += (i ? ":" : "") + std::to_string(cfg.mix_weights[i]);
  }
  return l2 + " B L2 frames (" + payload + " B payload), weights " + weights;
}

// --vlan as said at start: "802.1Q VLAN 100 PCP 5" or "QinQ: S-VLAN 200, C-VLAN 100 PCP 5".
std::string vlan_text(const Config& cfg) {
  const auto tag = [](uint16_t tci) {
    return std::to_string(tci & 0x0fff) + ((tci >> 13) ? " PCP " + std::to_string(tci >> 13) : "");
  };
  if (cfg.vlan_tci.size() == 1) return "802.1Q VLAN " + tag(cfg.vlan_tci[0]);
  return "QinQ: S-VLAN " + tag(cfg.vlan_tci[0]) + " (802.1ad), C-VLAN " + tag(cfg.vlan_tci[1]);
}

nlohmann::json vlan_json(const Config& cfg) {
  if (cfg.vlan_tci.empty()) return nullptr;
  nlohmann::json tags = nlohmann::json::array();
  for (uint16_t tci : cfg.vlan_tci) tags.push_back({{"id", tci & 0x0fff}, {"pcp", tci >> 13}});
  return tags;
}

// A size mix's sizes (null for one size), with what was sent of each when `sent` is given.
nlohmann::json mix_json(const Config& cfg, const std::vector<uint64_t>* sent) {
  if (cfg.mix_sizes.empty()) return nullptr;
  nlohmann::json sizes = nlohmann::json::array();
  for (size_t i = 0; i < cfg.mix_sizes.size(); ++i) {
    nlohmann::json one = {{"payload", cfg.mix_sizes[i]}, {"l2", cfg.frame_sizes(cfg.mix_sizes[i]).l2},
                          {"weight", cfg.mix_weights[i]}};
    if (sent) {
      one["sent"] = (*sent)[i];
      one["payload_bytes"] = (*sent)[i] * cfg.mix_sizes[i];
    }
    sizes.push_back(one);
  }
  return sizes;
}

// The run's rates: a size mix's from the payload bytes actually sent (each
// packet its own size), one size's from its packets.
// "source ports 5000-5003 x source 10.0.0.1-10.0.0.2 x destination 10.0.1.1".
std::string flows_text(const Config& cfg) {
  std::string t;
  if (cfg.src_ports)
    t += "source ports " + std::to_string(cfg.src_ports->first) +
         (cfg.src_ports->count() > 1 ? "-" + std::to_string(cfg.src_ports->last) : "") + " x ";
  if (cfg.src_range) t += "source " + cfg.src_range->text() + " x ";
  if (cfg.dst_ports) t += "destination ports " + std::to_string(cfg.dst_ports->first) + "-" + std::to_string(cfg.dst_ports->last) + " x ";
  t += "destination " + cfg.dst_range.text();
  if (cfg.dst_mac_range)
    t += " x MAC " + net::mac_text(cfg.dst_mac_range->first) + "-" +
         net::mac_text(cfg.dst_mac_range->at(cfg.dst_mac_range->count - 1));
  return t;
}

nlohmann::json flows_json(const Config& cfg) {
  return {{"count", cfg.has_flow_ranges() ? cfg.flow_count() : cfg.threads},
          {"src_ports", cfg.src_ports ? nlohmann::json({cfg.src_ports->first, cfg.src_ports->last}) : nlohmann::json(nullptr)},
          {"src_ips", cfg.src_range ? nlohmann::json(cfg.src_range->text()) : nlohmann::json(nullptr)},
          {"dst_ports", cfg.dst_ports ? nlohmann::json({cfg.dst_ports->first, cfg.dst_ports->last}) : nlohmann::json(nullptr)},
          {"dst_ips", cfg.dst_range.count > 1 ? nlohmann::json(cfg.dst_range.text()) : nlohmann::json(nullptr)},
          {"dst_macs", cfg.dst_mac_range ? nlohmann::json({net::mac_text(cfg.dst_mac_range->first),
                                                           net::mac_text(cfg.dst_mac_range->at(cfg.dst_mac_range->count - 1))})
                                         : nlohmann::json(nullptr)}};
}

// --rtt: the replies' round trips, and what reached the listener that was not one.
std::string rtt_text(const drivers::ReplyListener& l, uint64_t sent) {
  const drivers::RttCounts& c = l.counts();
  const stats::LatencyHistogram& h = l.rtt();
  char line[640];
  int n = std::snprintf(line, sizeof line, "rtt: %" PRIu64 " replies to %" PRIu64 " sent (%.2f%%), receive stamps: %s\n",
                        c.replies, sent, sent ? 100.0 * static_cast<double>(c.replies) / static_cast<double>(sent) : 0.0,
                        l.kernel_stamps() ? "the kernel's, per datagram" : "one clock read per batch");
  if (h.samples())
    n += std::snprintf(line + n, sizeof line - n, "rtt: min %.1f us, p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us; "
                       "jitter (RFC 3550) %.1f us\n", h.min() / 1e3, h.quantile(0.5) / 1e3, h.quantile(0.99) / 1e3,
                       h.quantile(0.999) / 1e3, h.max() / 1e3, l.jitter_ns() / 1e3);
  if (c.other_sender || c.implausible || c.not_ours || c.unauthenticated || c.socket_drops)
    std::snprintf(line + n, sizeof line - n, "rtt: not counted: %" PRIu64 " from another sender id, %" PRIu64
                  " with an implausible stamp, %" PRIu64 " not replies of ours, %" PRIu64
                  " without the key's tag; %" PRIu64 " dropped by a full socket\n",
                  c.other_sender, c.implausible, c.not_ours, c.unauthenticated, c.socket_drops);
  return line;
}

nlohmann::json rtt_json(const drivers::ReplyListener& l) {
  const drivers::RttCounts& c = l.counts();
  const stats::LatencyHistogram& h = l.rtt();
  nlohmann::json ns = nullptr;
  if (h.samples())
    ns = {{"min", h.min()}, {"p50", h.quantile(0.5)}, {"p99", h.quantile(0.99)}, {"p999", h.quantile(0.999)},
          {"max", h.max()}, {"mean", h.sum_ns() / h.samples()}};
  return {{"replies", c.replies}, {"other_sender", c.other_sender}, {"implausible", c.implausible},
          {"not_ours", c.not_ours}, {"unauthenticated", c.unauthenticated}, {"socket_drops", c.socket_drops}, {"rtt_ns", ns}, {"jitter_ns", l.jitter_ns()},
          {"receive_stamps", l.kernel_stamps() ? "kernel" : "batch"}};
}

report::Rates rates_of(const Config& cfg, const Run& run, uint64_t packets, uint64_t payload_bytes, double seconds) {
  if (cfg.mix_sizes.empty()) return report::rates_for(packets, run.sizes, seconds);
  return report::rates_for_bytes(packets, payload_bytes, run.sizes, seconds);
}

}  // namespace

void report_start(const Config& cfg, const Run& run, report::JsonLines& json) {
  const std::string settings = settings_of(cfg);
  const std::string sizes = cfg.mix_sizes.empty()
                                ? std::to_string(cfg.size) + " B payload (" + std::to_string(run.sizes.l2) + " B L2 frame)"
                                : "size mix: " + mix_text(cfg);
  std::printf("pktgen: %s -> %s, %s, backend %s; sender id %u\n", settings.c_str(), run.dst.text().c_str(),
              sizes.c_str(), run.choice.note.c_str(), run.sender_id);
  std::printf("pktgen: link %s; placement: %s\n", run.link.text().c_str(), run.placement.text.c_str());
  if (cfg.replay)
    std::printf("pktgen: replay: %zu frames of %s, byte for byte (mean %u B, longest %u B); %s\n", cfg.replay->size(),
                cfg.replay_path.c_str(), run.sizes.payload, cfg.replay->max_len,
                cfg.count ? "--count frames, looping over the file" : cfg.duration_ns ? "looping until --duration" : "the file once");
  for (const std::string& line : run.backend->start_lines()) std::printf("pktgen: %s\n", line.c_str());
  if (!cfg.vlan_tci.empty())
    std::printf("pktgen: tagged %s: frames %u B longer than untagged (L2 sizes and rates include the tags)\n", vlan_text(cfg).c_str(),
                static_cast<unsigned>(cfg.vlan_tci.size() * net::kVlanTagBytes));
  if (cfg.has_flow_ranges())
    std::printf("pktgen: %llu flows, one stream each: %s\n", static_cast<unsigned long long>(cfg.flow_count()), flows_text(cfg).c_str());
  std::printf("pktgen: send stamps: %s\n", run.stamps.c_str());
  if (run.asked_pps) {
    const double pps = *run.asked_pps;
    std::printf("pktgen: rate asked %s %s = %.0f pps (%.2f Mbit/s payload, %.2f L2, %.2f L1)\n",
                units::si(cfg.rate->value, 2).c_str(),
                cfg.rate->unit == units::RateUnit::pps ? "pps" : (std::string("bit/s ") + layer_name(cfg.rate_layer)).c_str(),
                pps, pps * run.mean.payload * 8 / 1e6, pps * run.mean.l2 * 8 / 1e6, pps * run.mean.l1 * 8 / 1e6);
  }
  std::fflush(stdout);
  json.write({{"type", "start"}, {"tool", "pktgen"}, {"settings", settings}, {"dst", run.dst.text()},
              {"backend", run.choice.backend->name}, {"backend_note", run.choice.note},
              {"burst", cfg.burst}, {"delay_ns", cfg.delay_ns}, {"count", cfg.count},
              {"size", cfg.mix_sizes.empty() ? nlohmann::json(cfg.size) : nlohmann::json(nullptr)},
              {"sizes", mix_json(cfg, nullptr)}, {"vlan", vlan_json(cfg)},
              {"threads", cfg.threads}, {"streams", run.streams}, {"sender_id", run.sender_id},
              {"flows", flows_json(cfg)},
              {"flows_random_seed", cfg.flows_random_seed ? nlohmann::json(*cfg.flows_random_seed) : nlohmann::json(nullptr)},
              {"placement", run.placement.text}, {"stamps", run.stamps},
              {"rate_pps_asked", run.asked_pps ? nlohmann::json(*run.asked_pps) : nlohmann::json(nullptr)}});
}

void Progress::maybe_report(const Config& cfg, const Run& run, uint64_t now, report::JsonLines& json) {
  if (cfg.quiet || now - last_ns_ < kNsPerSec) return;
  uint64_t sent = 0, bytes = 0;
  for (const auto& w : run.workers) {
    sent += w->latest.counters.packets;
    bytes += w->latest.counters.payload_bytes;
  }
  const double dt = static_cast<double>(now - last_ns_) / 1e9;
  const report::Rates r = rates_of(cfg, run, sent - last_sent_, bytes - last_bytes_, dt);
  const auto pct = report::line_rate_percent(r, run.link.speed_mbps);
  const std::string pct_text = pct ? (std::to_string(static_cast<int>(*pct + 0.5)) + "% of " + run.link.device +
                                      (run.link.nominal ? " (nominal)" : ""))
                                   : "line rate n/a";
  const double t_s = static_cast<double>(now - t0_ns_) / 1e9;
  if (!cfg.port_device.empty()) std::printf("%-8s ", cfg.port_device.c_str());  // a port set: which port
  std::printf("%7.1fs  sent %-10" PRIu64 " %9s pps  %9.2f Mbit/s payload  %9.2f L2  %9.2f L1  %s\n", t_s, sent,
              units::si(r.pps).c_str(), r.payload_mbps, r.l2_mbps, r.l1_mbps, pct_text.c_str());
  std::fflush(stdout);
  json.write({{"type", "progress"}, {"tool", "pktgen"}, {"t_s", t_s}, {"sent", sent}, {"pps", r.pps},
              {"payload_mbps", r.payload_mbps}, {"l2_mbps", r.l2_mbps}, {"l1_mbps", r.l1_mbps}});
  last_ns_ = now;
  last_sent_ = sent;
  last_bytes_ = bytes;
}

int report_result(const Config& cfg, const Run& run, report::JsonLines& json) {
  stats::TxCounters total;
  stats::InBurstRate in_burst;
  uint64_t first = ~0ull, last = 0;
  std::string errors;
  bool stalled = false;
  uint32_t stamp_clock_breaks = 0;
  uint64_t stamp_lead_max_ns = 0, stamp_lead_sum_ns = 0, stamped_batches = 0;
  nlohmann::json streams = nlohmann::json::array();
  std::vector<uint64_t> mix_sent(cfg.mix_sizes.size(), 0);
  for (const auto& w : run.workers) {
    if (!w->error.empty()) errors += (errors.empty() ? "" : "; ") + w->error;
    const stats::TxCounters& c = w->result.counters;
    total.packets += c.packets;
    total.payload_bytes += c.payload_bytes;
    total.failed += c.failed;
    total.retries += c.retries;
    total.end_markers += c.end_markers;
    total.pace_slips += c.pace_slips;
    // Workers send at the same time: their in-burst rates add up.
    const stats::InBurstRate ib = stats::in_burst_rate(c);
    in_burst.mean_pps += ib.mean_pps;
    in_burst.peak_pps += ib.peak_pps;
    if (c.last_error) total.last_error = c.last_error;
    if (c.packets) {
      first = std::min(first, c.first_ns);
      last = std::max(last, c.last_ns);
    }
    stalled |= w->result.stalled;
    stamp_clock_breaks += w->result.stamp_clock_breaks;
    stamp_lead_max_ns = std::max(stamp_lead_max_ns, w->result.stamp_lead_max_ns);
    stamp_lead_sum_ns += w->result.stamp_lead_sum_ns;
    stamped_batches += w->result.stamped_batches;
    for (const auto& f : w->result.flows) streams.push_back({{"stream", f.stream}, {"sent", f.next_seq}});
    for (size_t k = 0; k < w->result.mix_packets.size() && k < mix_sent.size(); ++k) mix_sent[k] += w->result.mix_packets[k];
  }
  const double seconds = last > first ? static_cast<double>(last - first) / 1e9 : 0.0;
  const report::Rates r = rates_of(cfg, run, total.packets, total.payload_bytes, seconds);
  const auto pct = report::line_rate_percent(r, run.link.speed_mbps);
  const bool interrupted = stop_signal_number() != 0;
  const std::string settings = settings_of(cfg);

  if (!cfg.port_device.empty()) std::printf("\nport %s -> %s:", cfg.port_device.c_str(), run.dst.text().c_str());
  std::printf("\n%-22s %10s %12s %20s %12s %12s %12s\n", "Settings(b,t,n,s)", "Time", "Sent", "Speed(Mbit/s data)",
              "pps", "L2 Mbit/s", "L1 Mbit/s");
  std::printf("%-22s %9.3fs %12" PRIu64 " %20.2f %12.0f %12.2f %12.2f\n", settings.c_str(), seconds, total.packets,
              r.payload_mbps, r.pps, r.l2_mbps, r.l1_mbps);
  for (size_t k = 0; k < mix_sent.size(); ++k)
    std::printf("size %5u B L2 (%5u B payload), weight %u: sent %" PRIu64 " (%.2f%%), %" PRIu64 " payload bytes\n",
                cfg.frame_sizes(cfg.mix_sizes[k]).l2, cfg.mix_sizes[k], cfg.mix_weights[k],
                mix_sent[k], total.packets ? 100.0 * static_cast<double>(mix_sent[k]) / static_cast<double>(total.packets) : 0.0,
                mix_sent[k] * cfg.mix_sizes[k]);
  if (pct) std::printf("line rate: %.1f%% of %s (L1 bits)%s\n", *pct, run.link.text().c_str(), run.link.nominal ? ", nominal speed" : "");
  if (run.asked_pps)
    std::printf("rate: asked %.0f pps, achieved %.0f pps (%.1f%%)\n", *run.asked_pps, r.pps,
                *run.asked_pps > 0 ? r.pps * 100 / *run.asked_pps : 0.0);
  if (in_burst.peak_pps > 0)
    std::printf("in-burst rate: %.0f pps over whole bursts, peak %.0f pps (the fastest burst)\n", in_burst.mean_pps,
                in_burst.peak_pps);
  if (total.failed)
    std::printf("sender errors: %" PRIu64 " packets refused by the OS (%s); they count as lost at the receiver\n",
                total.failed, errno_text(total.last_error).c_str());
  std::printf("end markers: %" PRIu64 " sent; backend retries: %" PRIu64 "; pace slips: %" PRIu64 "%s\n",
              total.end_markers, total.retries, total.pace_slips, interrupted ? "; interrupted by signal" : "");
  if (stalled) std::printf("warning: the backend accepted nothing for 2 s: run stopped early (%s)\n", errno_text(total.last_error).c_str());
  const double stamp_lead_mean_ns = stamped_batches ? static_cast<double>(stamp_lead_sum_ns) / stamped_batches : 0.0;
  if (stamped_batches)
    std::printf("send stamps: one per batch, read before it is written; it preceded the batch's hand-off to the backend"
                " by %.0f ns on average, %.1f us at most (the longest fill, host stalls included)\n",
                stamp_lead_mean_ns, static_cast<double>(stamp_lead_max_ns) / 1e3);
  if (stamp_clock_breaks)
    std::printf("send stamps: the TSC left CLOCK_MONOTONIC's pace in %u worker(s); from then on their stamps were "
                "clock_gettime per packet\n", stamp_clock_breaks);
  if (run.replies) std::printf("%s", rtt_text(*run.replies, total.packets).c_str());
  if (!errors.empty()) std::fprintf(stderr, "pktgen: %s\n", errors.c_str());
  if (const std::string advice = run.backend->advice(); !advice.empty()) std::fprintf(stderr, "pktgen: %s\n", advice.c_str());
  std::fflush(stdout);
  nlohmann::json result = {{"type", "result"}, {"tool", "pktgen"}, {"settings", settings}, {"time_s", seconds},
              {"sent", total.packets}, {"payload_bytes", total.payload_bytes}, {"failed", total.failed},
              {"retries", total.retries}, {"end_markers", total.end_markers}, {"pace_slips", total.pace_slips},
              {"pps", r.pps},
              {"in_burst_pps", in_burst.peak_pps > 0 ? nlohmann::json(in_burst.mean_pps) : nlohmann::json(nullptr)},
              {"in_burst_peak_pps", in_burst.peak_pps > 0 ? nlohmann::json(in_burst.peak_pps) : nlohmann::json(nullptr)},
              {"payload_mbps", r.payload_mbps}, {"l2_mbps", r.l2_mbps}, {"l1_mbps", r.l1_mbps},
              {"line_rate_pct", pct ? nlohmann::json(*pct) : nlohmann::json(nullptr)}, {"line_rate_basis", "l1"},
              {"link", run.link.device},
              {"link_speed_mbps", run.link.speed_mbps ? nlohmann::json(*run.link.speed_mbps) : nlohmann::json(nullptr)},
              {"link_nominal", run.link.nominal},
              {"rate_pps_asked", run.asked_pps ? nlohmann::json(*run.asked_pps) : nlohmann::json(nullptr)},
              {"interrupted", interrupted}, {"stalled", stalled}, {"stamp_clock_breaks", stamp_clock_breaks},
              {"stamp_lead_mean_ns", stamped_batches ? nlohmann::json(stamp_lead_mean_ns) : nlohmann::json(nullptr)},
              {"stamp_lead_max_ns", stamped_batches ? nlohmann::json(stamp_lead_max_ns) : nlohmann::json(nullptr)},
              {"errors", errors}, {"streams", streams}, {"sender_id", run.sender_id},
              {"sizes", mix_json(cfg, &mix_sent)}};
  if (run.replies) result["rtt"] = rtt_json(*run.replies);
  for (const std::string& line : run.backend->end_lines()) std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  run.backend->add_to_result(result);
  json.write(result);
  if (!errors.empty() && total.packets == 0) return 1;
  if (stalled) return 1;
  // Packets the OS refused were counted as sent attempts: a CI job must not read that as a clean run.
  return total.failed ? kExitVerdict : 0;
}

void report_port_totals(const std::vector<Config>& ports, const std::vector<Run>& runs, report::JsonLines& json) {
  uint64_t sent = 0, payload_bytes = 0, failed = 0;
  double pps = 0;
  nlohmann::json devices = nlohmann::json::array();
  for (size_t i = 0; i < runs.size(); ++i) {
    uint64_t first = ~0ull, last = 0, port_sent = 0;
    for (const auto& w : runs[i].workers) {
      const stats::TxCounters& c = w->result.counters;
      port_sent += c.packets;
      payload_bytes += c.payload_bytes;
      failed += c.failed;
      if (c.packets) {
        first = std::min(first, c.first_ns);
        last = std::max(last, c.last_ns);
      }
    }
    sent += port_sent;
    // Ports send at the same time: their rates add up.
    if (last > first) pps += static_cast<double>(port_sent) / (static_cast<double>(last - first) / 1e9);
    devices.push_back(ports[i].port_device);
  }
  std::printf("\nall %zu ports: sent %" PRIu64 " packets, %" PRIu64 " payload bytes, %.0f pps together; refused by "
              "the OS %" PRIu64 "\n", runs.size(), sent, payload_bytes, pps, failed);
  std::fflush(stdout);
  json.write({{"type", "ports"}, {"tool", "pktgen"}, {"devices", devices}, {"sent", sent},
              {"payload_bytes", payload_bytes}, {"failed", failed}, {"pps", pps}});
}

}  // namespace rateline::pktgen
