#include "report/rx_summary.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>
#include <utility>

#include "net/frame.hpp"
#include "report/rates.hpp"
#include "wire/test_payload.hpp"

namespace rateline::report {

namespace {

bool key_less(const engine::StreamKey& a, const engine::StreamKey& b) {
  if (const int c = std::memcmp(a.from.ip.data(), b.from.ip.data(), 16); c != 0) return c < 0;
  return std::tie(a.from.port, a.sender, a.stream) < std::tie(b.from.port, b.sender, b.stream);
}

std::string address_only(const net::SenderAddress& a) {
  const std::string t = a.text();
  return t == "?" ? t : t.substr(0, t.rfind(':'));
}

}  // namespace

bool clock_is_shared(const stats::LatencyHistogram& latency, uint64_t max_behind_ns) {
  return latency.samples() && latency.min() < kSharedClockMaxDelayNs && max_behind_ns < kSharedClockMaxDelayNs;
}

bool clock_is_shared_by_id(uint64_t sender_clock_id, uint64_t own_clock_id, const stats::LatencyHistogram& latency,
                           uint64_t max_behind_ns) {
  return sender_clock_id == own_clock_id && latency.samples() && max_behind_ns < kSharedClockMaxDelayNs;
}

RxSummary summarize(const std::vector<engine::RxResult>& workers, uint64_t expect, uint64_t own_clock_id) {
  RxSummary s;
  // Rows by stream identity across workers (a flow stays on one worker, but
  // a fanout or a lent end marker may split it).
  std::map<engine::StreamKey, StreamRow, decltype(&key_less)> rows(&key_less);
  std::map<engine::StreamKey, uint64_t, decltype(&key_less)> jitter_weight(&key_less);
  const wire::EndMarkerBody* any_end = nullptr;
  std::vector<uint64_t> by_size;
  for (const auto& w : workers) {
    const stats::RxCounters& c = w.counters;
    s.totals.frames = sat_add(s.totals.frames, c.frames);
    s.totals.data = sat_add(s.totals.data, c.data);
    s.totals.payload_bytes = sat_add(s.totals.payload_bytes, c.payload_bytes);
    s.totals.end_markers = sat_add(s.totals.end_markers, c.end_markers);
    s.totals.foreign = sat_add(s.totals.foreign, c.foreign);
    s.totals.malformed = sat_add(s.totals.malformed, c.malformed);
    s.totals.corrupt = sat_add(s.totals.corrupt, c.corrupt);
    s.totals.unknown_stream = sat_add(s.totals.unknown_stream, c.unknown_stream);
    s.totals.unauthenticated = sat_add(s.totals.unauthenticated, c.unauthenticated);
    s.totals.backend_drops = sat_add(s.totals.backend_drops, c.backend_drops);
    s.totals.fragments = sat_add(s.totals.fragments, c.fragments);
    s.totals.bad_udp_checksum = sat_add(s.totals.bad_udp_checksum, c.bad_udp_checksum);
    s.totals.udp_checksum_unfilled = sat_add(s.totals.udp_checksum_unfilled, c.udp_checksum_unfilled);
    s.totals.events_lost = sat_add(s.totals.events_lost, c.events_lost);
    if (by_size.size() < w.packets_by_size.size()) by_size.resize(w.packets_by_size.size(), 0);
    for (size_t len = 0; len < w.packets_by_size.size(); ++len) by_size[len] = sat_add(by_size[len], w.packets_by_size[len]);
    s.totals.reflected = sat_add(s.totals.reflected, c.reflected);
    s.totals.reflect_failed = sat_add(s.totals.reflect_failed, c.reflect_failed);
    s.totals.stream_count = std::max(s.totals.stream_count, c.stream_count);
    for (const engine::RxStreamState& st : w.streams) {
      if (!st.seen && !st.corrupt) continue;
      StreamRow& r = rows[st.key];
      const stats::SequenceCounts q = st.seq.counts();
      r.key = st.key;
      r.stream = st.key.stream;
      r.received = sat_add(r.received, q.received);
      r.unique = sat_add(r.unique, q.unique);
      r.duplicates = sat_add(r.duplicates, q.duplicates);
      r.reordered = sat_add(r.reordered, q.reordered);
      r.stale = sat_add(r.stale, q.stale);
      r.implausible = sat_add(r.implausible, q.implausible);
      r.corrupt = sat_add(r.corrupt, st.corrupt);
      r.end_marker_copies = sat_add(r.end_marker_copies, st.markers.copies);
      r.payload_bytes = sat_add(r.payload_bytes, st.payload_bytes);
      r.clock_behind = sat_add(r.clock_behind, st.clock_behind);
      r.max_behind_ns = std::max(r.max_behind_ns, st.max_behind_ns);
      if (st.first_ns && (!r.first_ns || st.first_ns < r.first_ns)) r.first_ns = st.first_ns;
      r.last_ns = std::max(r.last_ns, st.last_ns);
      if (st.payload_len) r.payload_len = st.payload_len;
      r.latency.merge(st.latency);
      uint64_t& weight = jitter_weight[st.key];
      if (q.received > weight) {
        weight = q.received;
        r.jitter_ns = st.jitter.jitter_ns();
      }
      // Markers not believed: every copy minus those behind the believed total.
      uint64_t believed_votes = 0;
      if (st.ended) {
        r.ended = true;
        r.sent = st.end.total_sent;
        r.clock_id = st.end.clock_id;
        r.announced = std::max(r.announced, st.end.stream_count);
        any_end = &st.end;
        for (int i = 0; i < 2; ++i)
          if (st.markers.votes[i] && st.markers.candidate[i].total_sent == st.end.total_sent)
            believed_votes += st.markers.votes[i];
      }
      r.implausible_markers =
          sat_add(r.implausible_markers, st.markers.copies > believed_votes ? st.markers.copies - believed_votes : 0);
      r.highest_next = std::max(r.highest_next, q.highest_next);
    }
  }
  // One pktgen run has one clock: a stream whose own markers were lost takes
  // the id its sender's other streams gave, unless they disagree (then each
  // stream is judged alone). Sender id 0 (encoders without one) names no run.
  constexpr uint64_t kClockIdsDisagree = ~0ull;
  std::map<std::pair<std::string, uint16_t>, uint64_t> sender_clock_id;
  for (const auto& [key, r] : rows) {
    if (!r.ended || !r.clock_id || !key.sender) continue;
    uint64_t& id = sender_clock_id[{address_only(key.from), key.sender}];
    id = !id || id == r.clock_id ? r.clock_id : kClockIdsDisagree;
  }
  s.all_ended = true;
  uint64_t streams_seen = 0;
  uint64_t first = ~0ull, last = 0, best = 0;
  for (auto& [key, r] : rows) {
    // A stream of lone, unbelieved end markers is no stream: named, not counted.
    s.implausible_markers = sat_add(s.implausible_markers, r.implausible_markers);
    if (!r.received && !r.ended && !r.corrupt && !r.implausible) continue;
    ++streams_seen;
    // Exact with the end marker's total; else only the gaps below the highest sequence seen.
    const uint64_t total = r.ended ? r.sent : r.highest_next;
    r.lost = total > r.unique ? total - r.unique : 0;
    // Only corrupt packets: their header (stream id, sender) may be the damaged
    // part, so they name no stream that could have ended.
    const bool corrupt_only = !r.received && !r.ended && !r.implausible;
    if (!corrupt_only) s.all_ended &= r.ended;
    s.received = sat_add(s.received, r.received);
    s.unique = sat_add(s.unique, r.unique);
    s.lost = sat_add(s.lost, r.lost);
    s.reordered = sat_add(s.reordered, r.reordered);
    s.duplicates = sat_add(s.duplicates, r.duplicates);
    s.stale = sat_add(s.stale, r.stale);
    s.implausible = sat_add(s.implausible, r.implausible);
    if (r.ended) s.sent_by_markers = sat_add(s.sent_by_markers, r.sent);
    if (!r.clock_id && key.sender) {
      const auto it = sender_clock_id.find({address_only(key.from), key.sender});
      if (it != sender_clock_id.end() && it->second != kClockIdsDisagree) r.clock_id = it->second;
    }
    r.clock_by_id = r.clock_id && own_clock_id;
    r.clock_shared = r.clock_by_id ? clock_is_shared_by_id(r.clock_id, own_clock_id, r.latency, r.max_behind_ns)
                                   : clock_is_shared(r.latency, r.max_behind_ns);
    if (r.clock_shared) {
      s.latency.merge(r.latency);
    } else if (r.latency.samples() || r.clock_behind || (r.clock_by_id && r.clock_id != own_clock_id)) {
      r.clock_unrelated = true;
      ++s.streams_clock_unrelated;
      const std::string who = address_only(r.key.from) + " #" + std::to_string(r.key.sender);
      if (std::find(s.senders_clock_unrelated.begin(), s.senders_clock_unrelated.end(), who) == s.senders_clock_unrelated.end())
        s.senders_clock_unrelated.push_back(who);
    }
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
  // Senders: a source address and a sender id. Each announced how many
  // streams it ran; one that never arrived at all (a dead path, RSS to a
  // queue nobody reads) makes the totals inexact.
  std::map<std::pair<std::string, uint16_t>, SenderRow> senders;
  for (const StreamRow& r : s.streams) {
    if (!r.received && !r.ended && !r.implausible) continue;  // corrupt only: no sender to speak of
    SenderRow& g = senders[{address_only(r.key.from), r.key.sender}];
    g.address = address_only(r.key.from);
    g.sender_id = r.key.sender;
    ++g.streams;
    g.received = sat_add(g.received, r.unique);
    g.lost = sat_add(g.lost, r.lost);
    g.duplicates = sat_add(g.duplicates, r.duplicates);
    g.corrupt = sat_add(g.corrupt, r.corrupt);
    g.implausible = sat_add(g.implausible, sat_add(r.implausible, r.implausible_markers));
    if (r.ended) {
      ++g.streams_ended;
      g.sent = sat_add(g.sent, r.sent);
      g.streams_announced = std::max<uint32_t>(g.streams_announced, r.announced);
    }
  }
  for (auto& [k, g] : senders) {
    g.all_ended = g.streams_ended == g.streams && g.streams_ended >= g.streams_announced;
    s.all_ended &= g.all_ended;
    s.senders.push_back(g);
  }
  if (s.totals.stream_count > s.streams.size()) s.all_ended = false;
  // A stream announced by the sender but never seen lost everything; without
  // its end marker we cannot know its size, so it is reported by stream_count.
  if (expect && !s.all_ended) {
    s.lost = expect > s.unique ? expect - s.unique : 0;
    s.lost_from_expect = true;
  }
  s.seconds = last > first ? static_cast<double>(last - first) / 1e9 : 0.0;
  if (any_end) {
    s.settings = settings_text(any_end->burst, any_end->delay_ns, any_end->count, any_end->data_size);  // 0: a size mix
  } else {
    s.settings = "?-?-" + (expect ? std::to_string(expect) : std::string("?")) + "-" +
                 (s.payload_len ? std::to_string(s.payload_len) : std::string("?"));
  }
  for (size_t len = 0; len < by_size.size(); ++len)
    if (by_size[len]) s.sizes.push_back({static_cast<uint32_t>(len), by_size[len]});
  return s;
}

namespace {
// The received packets' rates at the mean payload of every data arrival:
// exactly packets x size when the sender sent one size, and right for a
// size mix too (pktgen --size a,b,c).
Rates received_rates(const RxSummary& s, bool ipv6) {
  if (!s.totals.data) return rates_for(s.unique, net::FrameSizes::for_payload(s.payload_len, ipv6), s.seconds);
  const double mean_payload = static_cast<double>(s.totals.payload_bytes) / static_cast<double>(s.totals.data);
  const auto bytes = static_cast<uint64_t>(std::llround(mean_payload * static_cast<double>(s.unique)));
  return rates_for_bytes(s.unique, bytes, net::FrameSizes::for_payload(wire::kMinPayloadBytes, ipv6), s.seconds);
}

// Sizes listed in the table and the JSON: a stranger sending every length
// must not make either unbounded.
constexpr size_t kMaxSizeLines = 16;
constexpr size_t kMaxSizeRows = 1024;

nlohmann::json sizes_json(const std::vector<SizeRow>& sizes) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < sizes.size() && i < kMaxSizeRows; ++i)
    rows.push_back({{"payload", sizes[i].payload}, {"packets", sizes[i].packets},
                    {"payload_bytes", sizes[i].packets * sizes[i].payload}});
  return rows;
}
}  // namespace

std::string format_table(const RxSummary& s, bool ipv6) {
  const Rates r = received_rates(s, ipv6);
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
  if (s.totals.unauthenticated) {
    std::snprintf(line, sizeof line, "unauthenticated: %" PRIu64 " datagrams without the --key-file tag, not counted"
                  " (a stranger's, or ours with a damaged tag)\n", s.totals.unauthenticated);
    out += line;
  }
  if (s.totals.bad_udp_checksum) {
    std::snprintf(line, sizeof line, "bad UDP checksum: %" PRIu64 " frames dropped before decoding (the kernel drops these"
                  " before a socket sees them; a sender's lost packet if it was ours)\n", s.totals.bad_udp_checksum);
    out += line;
  }
  if (s.totals.udp_checksum_unfilled) {
    std::snprintf(line, sizeof line, "unchecked UDP checksum: %" PRIu64 " frames carried a checksum left for offload by a"
                  " sender on this host (a socket behind a veth); the payload's own check still applied to 32 B and up\n",
                  s.totals.udp_checksum_unfilled);
    out += line;
  }
  if (s.implausible || s.implausible_markers || s.totals.fragments) {
    std::snprintf(line, sizeof line, "not believed: %" PRIu64 " lone sequence jumps beyond the window, %" PRIu64
                  " end markers (wrong, disputed or unconfirmed); IP fragments %" PRIu64 "\n",
                  s.implausible, s.implausible_markers, s.totals.fragments);
    out += line;
  }
  // A size mix (more than one payload length): packets and bytes per size.
  if (s.sizes.size() > 1) {
    size_t shown = 0;
    for (const SizeRow& z : s.sizes) {
      if (shown++ == kMaxSizeLines) {
        std::snprintf(line, sizeof line, "size: %zu more payload lengths (JSON: sizes)\n", s.sizes.size() - kMaxSizeLines);
        out += line;
        break;
      }
      std::snprintf(line, sizeof line, "size %5u B payload: %12" PRIu64 " packets (%6.2f%%), %14" PRIu64 " payload bytes\n",
                    z.payload, z.packets,
                    s.received ? 100.0 * static_cast<double>(z.packets) / static_cast<double>(s.received) : 0.0,
                    z.packets * z.payload);
      out += line;
    }
  }
  if (s.reflect_every) {
    std::snprintf(line, sizeof line, "reflected: %" PRIu64 " data packets sent back to their senders (every %u%s), %" PRIu64
                  " not sent: no room in the socket or TX ring, or the driver failed\n", s.totals.reflected, s.reflect_every,
                  s.reflect_every == 1 ? "" : "th", s.totals.reflect_failed);
    out += line;
  }
  if (s.senders.size() > 1) {
    std::snprintf(line, sizeof line, "%-40s %6s %8s %12s %12s %10s %8s %8s\n", "sender (address, id)", "streams",
                  "ended", "sent", "received", "lost", "dup", "corrupt");
    out += line;
    for (const SenderRow& g : s.senders) {
      const std::string who = g.address + " #" + std::to_string(g.sender_id);
      std::snprintf(line, sizeof line, "%-40s %6u %5u/%-2u %12s %12" PRIu64 " %10" PRIu64 " %8" PRIu64 " %8" PRIu64 "\n",
                    who.c_str(), g.streams, g.streams_ended, g.streams_announced,
                    g.all_ended ? std::to_string(g.sent).c_str() : "?", g.received, g.lost, g.duplicates, g.corrupt);
      out += line;
    }
  }
  if (s.latency.samples()) {
    std::snprintf(line, sizeof line, "latency (same-host clock; receive times: %s): min %.1f us, p50 %.1f, p99 %.1f, p99.9 %.1f, max %.1f; jitter (RFC 3550) %.2f us\n",
                  s.receive_stamps.c_str(), s.latency.min() / 1e3, s.latency.quantile(0.5) / 1e3, s.latency.quantile(0.99) / 1e3,
                  s.latency.quantile(0.999) / 1e3, s.latency.max() / 1e3, s.jitter_ns / 1e3);
    out += line;
  }
  if (s.streams_clock_unrelated) {
    std::string who;
    for (size_t i = 0; i < s.senders_clock_unrelated.size() && i < 4; ++i) who += (i ? ", " : "") + s.senders_clock_unrelated[i];
    if (s.senders_clock_unrelated.size() > 4) who += ", ...";
    // Jitter needs no shared clock: printed here when there is no latency line to carry it.
    char jitter[64] = "";
    if (!s.latency.samples()) std::snprintf(jitter, sizeof jitter, ": no one-way latency; jitter (RFC 3550) %.2f us", s.jitter_ns / 1e3);
    std::snprintf(line, sizeof line, "latency: not shown for %u stream(s) of %zu sender(s) (%s): their send stamps are "
                  "not on this host's clock (another host or time namespace)%s\n",
                  s.streams_clock_unrelated, s.senders_clock_unrelated.size(), who.c_str(), jitter);
    out += line;
  }
  if (s.streams.size() > 1) {
    std::snprintf(line, sizeof line, "%8s %-30s %12s %10s %10s %10s %8s %12s %12s\n", "stream", "from", "received", "lost",
                  "reordered", "dup", "corrupt", "p50 us", "p99 us");
    out += line;
    for (const StreamRow& row : s.streams) {
      const std::string from = row.key.from.text() + " #" + std::to_string(row.key.sender);
      char p50[24] = "-", p99[24] = "-";  // another clock: no latency
      if (row.clock_shared) {
        std::snprintf(p50, sizeof p50, "%.1f", row.latency.quantile(0.5) / 1e3);
        std::snprintf(p99, sizeof p99, "%.1f", row.latency.quantile(0.99) / 1e3);
      }
      std::snprintf(line, sizeof line, "%8u %-30s %12" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %8" PRIu64 " %12s %12s\n",
                    row.stream, from.c_str(), row.unique, row.lost, row.reordered, row.duplicates, row.corrupt, p50, p99);
      out += line;
    }
  }
  return out;
}

nlohmann::json to_json(const RxSummary& s, bool ipv6) {
  const Rates r = received_rates(s, ipv6);
  auto latency = [](const stats::LatencyHistogram& h) -> nlohmann::json {
    if (!h.samples()) return nullptr;
    return {{"samples", h.samples()}, {"min", h.min()}, {"p50", h.quantile(0.5)}, {"p90", h.quantile(0.9)},
            {"p99", h.quantile(0.99)}, {"p999", h.quantile(0.999)}, {"max", h.max()}, {"mean", h.mean()}};
  };
  nlohmann::json streams = nlohmann::json::array();
  for (const StreamRow& row : s.streams)
    streams.push_back({{"stream", row.stream}, {"from", row.key.from.text()}, {"sender_id", row.key.sender},
                       {"received", row.unique}, {"arrivals", row.received}, {"implausible", row.implausible},
                       {"end_marker_copies", row.end_marker_copies}, {"implausible_markers", row.implausible_markers},
                       {"lost", row.lost}, {"reordered", row.reordered}, {"duplicated", row.duplicates},
                       {"stale", row.stale}, {"corrupt", row.corrupt},
                       {"sent", row.ended ? nlohmann::json(row.sent) : nlohmann::json(nullptr)},
                       {"payload_bytes", row.payload_bytes},
                       {"latency_ns", row.clock_shared ? latency(row.latency) : nlohmann::json(nullptr)},
                       {"clock", row.clock_shared ? "shared" : row.clock_unrelated ? "unrelated" : "unknown"},
                       {"clock_judged_by", row.clock_by_id ? "clock_id" : "stamps"},
                       {"jitter_ns", row.jitter_ns}, {"clock_behind", row.clock_behind},
                       {"max_behind_ns", row.max_behind_ns}});
  nlohmann::json senders = nlohmann::json::array();
  for (const SenderRow& g : s.senders)
    senders.push_back({{"address", g.address}, {"sender_id", g.sender_id}, {"streams", g.streams},
                       {"streams_ended", g.streams_ended}, {"streams_announced", g.streams_announced},
                       {"sent", g.all_ended ? nlohmann::json(g.sent) : nlohmann::json(nullptr)},
                       {"received", g.received}, {"lost", g.lost}, {"duplicated", g.duplicates},
                       {"corrupt", g.corrupt}, {"implausible", g.implausible}});
  return {{"type", "result"}, {"tool", "rx"}, {"settings", s.settings}, {"time_s", s.seconds},
          {"senders", senders}, {"implausible", s.implausible}, {"implausible_markers", s.implausible_markers},
          {"fragments", s.totals.fragments},
          {"bad_udp_checksum", s.totals.bad_udp_checksum}, {"udp_checksum_unfilled", s.totals.udp_checksum_unfilled},
          {"events_lost", s.totals.events_lost},
          {"received", s.unique}, {"arrivals", s.received}, {"lost", s.lost},
          {"lost_basis", s.all_ended ? "end_markers" : s.lost_from_expect ? "expected_count" : "sequence_gaps"},
          {"sent", s.all_ended ? nlohmann::json(s.sent_by_markers) : nlohmann::json(nullptr)},
          {"reordered", s.reordered}, {"duplicated", s.duplicates}, {"stale", s.stale},
          {"corrupt", s.totals.corrupt}, {"foreign", s.totals.foreign}, {"malformed", s.totals.malformed},
          {"unknown_stream", s.totals.unknown_stream}, {"unauthenticated", s.totals.unauthenticated},
          {"end_markers", s.totals.end_markers},
          {"frames", s.totals.frames}, {"socket_drops", s.totals.backend_drops},
          {"payload_bytes", s.totals.payload_bytes}, {"payload_len", s.payload_len},
          {"pps", r.pps}, {"payload_mbps", r.payload_mbps}, {"l2_mbps", r.l2_mbps}, {"l1_mbps", r.l1_mbps},
          {"latency_ns", latency(s.latency)}, {"streams_clock_unrelated", s.streams_clock_unrelated},
          {"jitter_ns", s.jitter_ns}, {"receive_stamps", s.receive_stamps}, {"streams", streams},
          {"sizes", sizes_json(s.sizes)}, {"sizes_omitted", s.sizes.size() > kMaxSizeRows ? s.sizes.size() - kMaxSizeRows : 0},
          {"reflect_every", s.reflect_every}, {"reflected", s.totals.reflected},
          {"reflect_failed", s.totals.reflect_failed}};
}

}  // namespace rateline::report
