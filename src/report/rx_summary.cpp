#include "report/rx_summary.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "net/frame.hpp"
#include "report/rates.hpp"

namespace rateline::report {

RxSummary summarize(const std::vector<engine::RxResult>& workers, uint64_t expect) {
  RxSummary s;
  size_t n = 0;
  for (const auto& w : workers) n = std::max(n, w.streams.size());
  std::vector<StreamRow> rows(n);
  std::vector<uint64_t> jitter_weight(n, 0);
  const wire::EndMarkerBody* any_end = nullptr;
  for (const auto& w : workers) {
    const stats::RxCounters& c = w.counters;
    s.totals.frames += c.frames;
    s.totals.data += c.data;
    s.totals.payload_bytes += c.payload_bytes;
    s.totals.end_markers += c.end_markers;
    s.totals.foreign += c.foreign;
    s.totals.malformed += c.malformed;
    s.totals.corrupt += c.corrupt;
    s.totals.unknown_stream += c.unknown_stream;
    s.totals.backend_drops += c.backend_drops;
    s.totals.stream_count = std::max(s.totals.stream_count, c.stream_count);
    for (size_t i = 0; i < w.streams.size(); ++i) {
      const engine::RxStreamState& st = w.streams[i];
      if (!st.seen && !st.corrupt) continue;
      StreamRow& r = rows[i];
      const stats::SequenceCounts& q = st.seq.counts();
      r.stream = static_cast<uint32_t>(i);
      r.received += q.received;
      r.unique += q.unique;
      r.duplicates += q.duplicates;
      r.reordered += q.reordered;
      r.stale += q.stale;
      r.corrupt += st.corrupt;
      r.payload_bytes += st.payload_bytes;
      r.clock_behind += st.clock_behind;
      if (st.first_ns && (!r.first_ns || st.first_ns < r.first_ns)) r.first_ns = st.first_ns;
      r.last_ns = std::max(r.last_ns, st.last_ns);
      if (st.payload_len) r.payload_len = st.payload_len;
      r.latency.merge(st.latency);
      if (q.received > jitter_weight[i]) {
        jitter_weight[i] = q.received;
        r.jitter_ns = st.jitter.jitter_ns();
      }
      if (st.ended) {
        r.ended = true;
        r.sent = st.end.total_sent;
        any_end = &st.end;
      }
      r.highest_next = std::max(r.highest_next, q.highest_next);
    }
  }
  s.all_ended = true;
  uint64_t streams_seen = 0;
  uint64_t first = ~0ull, last = 0, best = 0;
  for (StreamRow& r : rows) {
    if (!r.received && !r.ended && !r.corrupt) continue;
    ++streams_seen;
    // Exact with the end marker's total; else only the gaps below the highest sequence seen.
    const uint64_t total = r.ended ? r.sent : r.highest_next;
    r.lost = total > r.unique ? total - r.unique : 0;
    s.all_ended &= r.ended;
    s.received += r.received;
    s.unique += r.unique;
    s.lost += r.lost;
    s.reordered += r.reordered;
    s.duplicates += r.duplicates;
    s.stale += r.stale;
    if (r.ended) s.sent_by_markers += r.sent;
    s.latency.merge(r.latency);
    if (r.first_ns) first = std::min(first, r.first_ns);
    last = std::max(last, r.last_ns);
    if (r.received > best) {
      best = r.received;
      s.jitter_ns = r.jitter_ns;
      s.payload_len = r.payload_len;
    }
    s.streams.push_back(r);
  }
  if (!streams_seen) s.all_ended = false;
  // The sender announced how many streams it ran: one that never arrived at
  // all (a dead path, RSS to a queue nobody reads) makes the totals inexact.
  uint64_t ended = 0;
  for (const StreamRow& r : s.streams) ended += r.ended ? 1 : 0;
  if (s.totals.stream_count > ended) s.all_ended = false;
  // A stream announced by the sender but never seen lost everything; without
  // its end marker we cannot know its size, so it is reported by stream_count.
  if (expect && !s.all_ended) {
    s.lost = expect > s.unique ? expect - s.unique : 0;
    s.lost_from_expect = true;
  }
  s.seconds = last > first ? static_cast<double>(last - first) / 1e9 : 0.0;
  if (any_end) {
    s.settings = settings_text(any_end->burst, any_end->delay_ns, any_end->count,
                               any_end->data_size ? any_end->data_size : s.payload_len);
  } else {
    s.settings = "?-?-" + (expect ? std::to_string(expect) : std::string("?")) + "-" +
                 (s.payload_len ? std::to_string(s.payload_len) : std::string("?"));
  }
  return s;
}

std::string format_table(const RxSummary& s, bool ipv6) {
  const net::FrameSizes sizes = net::FrameSizes::for_payload(s.payload_len, ipv6);
  const Rates r = rates_for(s.unique, sizes, s.seconds);
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-22s %10s %10s %20s %12s %12s %12s\n", "Settings(b,t,n,s)", "Time", "Lost",
                "Speed(Mbit/s data)", "Received", "pps", "L1 Mbit/s");
  out += line;
  std::snprintf(line, sizeof line, "%-22s %9.3fs %10" PRIu64 " %20.2f %12" PRIu64 " %12.0f %12.2f\n", s.settings.c_str(),
                s.seconds, s.lost, r.payload_mbps, s.unique, r.pps, r.l1_mbps);
  out += line;
  const uint64_t base = s.all_ended ? s.sent_by_markers : s.unique + s.lost;
  std::snprintf(line, sizeof line, "loss: %.4f%% (%s); reordered %" PRIu64 ", duplicated %" PRIu64 ", corrupt %" PRIu64
                ", stale %" PRIu64 "\n",
                base ? 100.0 * static_cast<double>(s.lost) / static_cast<double>(base) : 0.0,
                s.all_ended ? "exact: end markers gave the totals"
                : s.lost_from_expect ? "from --count: no end marker for every stream"
                                     : "from sequence gaps only: no end marker, trailing loss unknown",
                s.reordered, s.duplicates, s.totals.corrupt, s.stale);
  out += line;
  std::snprintf(line, sizeof line, "other traffic: foreign %" PRIu64 ", malformed %" PRIu64 ", unknown stream %" PRIu64
                "; socket drops (sk_drops) %" PRIu64 "\n",
                s.totals.foreign, s.totals.malformed, s.totals.unknown_stream, s.totals.backend_drops);
  out += line;
  if (s.latency.samples()) {
    std::snprintf(line, sizeof line, "latency (same-host clock): min %.1f us, p50 %.1f, p99 %.1f, p99.9 %.1f, max %.1f; jitter (RFC 3550) %.2f us\n",
                  s.latency.min() / 1e3, s.latency.quantile(0.5) / 1e3, s.latency.quantile(0.99) / 1e3,
                  s.latency.quantile(0.999) / 1e3, s.latency.max() / 1e3, s.jitter_ns / 1e3);
    out += line;
  }
  if (s.streams.size() > 1) {
    std::snprintf(line, sizeof line, "%8s %12s %10s %10s %10s %8s %12s %12s\n", "stream", "received", "lost",
                  "reordered", "dup", "corrupt", "p50 us", "p99 us");
    out += line;
    for (const StreamRow& row : s.streams) {
      std::snprintf(line, sizeof line, "%8u %12" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %8" PRIu64 " %12.1f %12.1f\n",
                    row.stream, row.unique, row.lost, row.reordered, row.duplicates, row.corrupt,
                    row.latency.quantile(0.5) / 1e3, row.latency.quantile(0.99) / 1e3);
      out += line;
    }
  }
  return out;
}

nlohmann::json to_json(const RxSummary& s, bool ipv6) {
  const net::FrameSizes sizes = net::FrameSizes::for_payload(s.payload_len, ipv6);
  const Rates r = rates_for(s.unique, sizes, s.seconds);
  auto latency = [](const stats::LatencyHistogram& h) -> nlohmann::json {
    if (!h.samples()) return nullptr;
    return {{"samples", h.samples()}, {"min", h.min()}, {"p50", h.quantile(0.5)}, {"p90", h.quantile(0.9)},
            {"p99", h.quantile(0.99)}, {"p999", h.quantile(0.999)}, {"max", h.max()}, {"mean", h.mean()}};
  };
  nlohmann::json streams = nlohmann::json::array();
  for (const StreamRow& row : s.streams)
    streams.push_back({{"stream", row.stream}, {"received", row.unique}, {"arrivals", row.received},
                       {"lost", row.lost}, {"reordered", row.reordered}, {"duplicated", row.duplicates},
                       {"stale", row.stale}, {"corrupt", row.corrupt},
                       {"sent", row.ended ? nlohmann::json(row.sent) : nlohmann::json(nullptr)},
                       {"payload_bytes", row.payload_bytes}, {"latency_ns", latency(row.latency)},
                       {"jitter_ns", row.jitter_ns}, {"clock_behind", row.clock_behind}});
  return {{"type", "result"}, {"tool", "rx"}, {"settings", s.settings}, {"time_s", s.seconds},
          {"received", s.unique}, {"arrivals", s.received}, {"lost", s.lost},
          {"lost_basis", s.all_ended ? "end_markers" : s.lost_from_expect ? "expected_count" : "sequence_gaps"},
          {"sent", s.all_ended ? nlohmann::json(s.sent_by_markers) : nlohmann::json(nullptr)},
          {"reordered", s.reordered}, {"duplicated", s.duplicates}, {"stale", s.stale},
          {"corrupt", s.totals.corrupt}, {"foreign", s.totals.foreign}, {"malformed", s.totals.malformed},
          {"unknown_stream", s.totals.unknown_stream}, {"end_markers", s.totals.end_markers},
          {"frames", s.totals.frames}, {"socket_drops", s.totals.backend_drops},
          {"payload_bytes", s.totals.payload_bytes}, {"payload_len", s.payload_len},
          {"pps", r.pps}, {"payload_mbps", r.payload_mbps}, {"l2_mbps", r.l2_mbps}, {"l1_mbps", r.l1_mbps},
          {"latency_ns", latency(s.latency)}, {"jitter_ns", s.jitter_ns}, {"streams", streams}};
}

}  // namespace rateline::report
