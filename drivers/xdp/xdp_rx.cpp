#include "xdp/xdp_rx.hpp"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <map>

#include "stats/latency.hpp"
#include "stats/sequence_tracker.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "xdp/xdp_object.hpp"
#include "xdp/xdp_shared.h"
#include "xdp_rx_object.h"  // generated: the compiled counter (xdp_rx.bpf.c)

namespace rateline::drivers {

static_assert(RL_WINDOW_BITS == stats::SequenceTracker::kWindow);
static_assert(RL_LAT_SUB_BITS == stats::LatencyHistogram::kSubBits && RL_LAT_BUCKETS == stats::LatencyHistogram::kBuckets);
static_assert(RL_MAX_PAYLOAD <= 65535 && RL_MAX_PAYLOAD % 8 == 0);
static_assert(sizeof(rl_rx_config) == 16);
static_assert(sizeof(rl_end_body) == 32);
static_assert(sizeof(rl_rx_totals) == 10 * 8);

XdpRxProgram::XdpRxProgram(const XdpRxConfig& cfg) : cfg_(cfg) {
  if (cfg.max_streams > kMaxStreams)
    throw BackendUnavailable("--backend xdp tracks at most " + std::to_string(kMaxStreams) +
                             " streams in the kernel: lower --max-streams");
  rl_rx_config rc{};
  rc.port_be = htons(cfg.port);
  rc.max_streams = cfg.max_streams;
  rc.pass_counted = cfg.pass_counted ? 1 : 0;
  rc.max_payload = cfg.max_payload;
  obj_ = std::make_unique<BpfObject>(kXdpRxObject, kXdpRxObject_size, "rateline_count");
  obj_->set_rodata(&rc, sizeof rc);
  obj_->set_max_entries("rx_streams", cfg.max_streams);
  obj_->set_max_entries("rx_latency", cfg.max_streams);
  obj_->load();
  totals_fd_ = obj_->map_fd("rx_totals");
  streams_fd_ = obj_->map_fd("rx_streams");
  latency_fd_ = obj_->map_fd("rx_latency");
  bpf_program* prog = bpf_object__find_program_by_name(obj_->get(), "rateline_count");
  link_ = bpf_program__attach_xdp(prog, cfg.iface.index);
  if (!link_) {
    const int err = errno;
    throw BackendUnavailable(bpf_error(err, "attach XDP to " + cfg.iface.name) +
                             (err == EBUSY || err == EEXIST
                                  ? " (another XDP program is attached: rx --xdp-cleanup " + cfg.iface.name + ")"
                                  : ""));
  }
  mode_ = xdp_attach_mode(cfg.iface.index);
}

XdpRxProgram::~XdpRxProgram() {
  if (link_) bpf_link__destroy(link_);
}

engine::RxResult XdpRxProgram::read(bool with_latency) const {
  // The in-kernel counter keys streams by the header's stream id alone: its
  // rows carry no sender (address zero, sender id 0).
  engine::RxResult r;
  stats::RxCounters& c = r.counters;

  const int cpus = libbpf_num_possible_cpus();
  std::vector<rl_rx_totals> per_cpu(cpus > 0 ? static_cast<size_t>(cpus) : 1);
  const uint32_t zero = 0;
  if (bpf_map_lookup_elem(totals_fd_, &zero, per_cpu.data()) == 0) {
    for (const rl_rx_totals& t : per_cpu) {
      c.frames += t.frames;
      c.data += t.data;
      c.payload_bytes += t.payload_bytes;
      c.end_markers += t.end_markers;
      c.foreign += t.foreign;
      c.malformed += t.malformed;
      c.corrupt += t.corrupt;
      c.unknown_stream += t.unknown_stream;
      c.bad_udp_checksum += t.bad_udp_checksum;
      c.udp_checksum_unfilled += t.udp_checksum_unfilled;
    }
  }

  rl_rx_stream s;
  rl_rx_latency lat;
  for (uint32_t i = 0; i < cfg_.max_streams; ++i) {
    if (bpf_map_lookup_elem_flags(streams_fd_, &i, &s, BPF_F_LOCK) != 0) continue;
    if (!(s.flags & RL_STREAM_SEEN) && !s.corrupt) continue;
    engine::RxStreamState& st = r.streams.emplace_back();
    st.key.stream = static_cast<uint16_t>(i);
    stats::SequenceCounts q;
    q.received = s.received;
    q.unique = s.unique;
    q.duplicates = s.duplicates;
    q.reordered = s.reordered;
    q.stale = s.stale;
    q.highest_next = s.highest_next;
    st.seq.adopt(q);
    st.payload_bytes = s.payload_bytes;
    st.corrupt = s.corrupt;
    st.clock_behind = s.clock_behind;
    st.first_ns = s.first_ns;
    st.last_ns = s.last_ns;
    st.payload_len = s.payload_len;
    st.seen = s.flags & RL_STREAM_SEEN;
    st.ended = s.flags & RL_STREAM_ENDED;
    st.end = {.total_sent = s.end.total_sent, .delay_ns = s.end.delay_ns, .count = s.end.count, .burst = s.end.burst,
              .stream_count = s.end.stream_count, .data_size = s.end.data_size};
    if (st.ended) {  // the kernel believed its first marker: one copy of evidence
      st.markers.candidate[0] = st.end;
      st.markers.votes[0] = 1;
      st.markers.copies = 1;
    }
    st.jitter.adopt(static_cast<double>(s.jitter_x16) / 16.0);
    if (with_latency && s.lat_samples && bpf_map_lookup_elem(latency_fd_, &i, &lat) == 0)
      st.latency.merge_binned(lat.buckets, s.lat_sum, s.lat_min, s.lat_max);
    if (st.seen) ++c.streams_seen;
    if (st.ended) {
      ++c.streams_ended;
      c.stream_count = std::max<uint64_t>(c.stream_count, st.end.stream_count);
    }
    if (st.first_ns && (!c.first_ns || st.first_ns < c.first_ns)) c.first_ns = st.first_ns;
    c.last_ns = std::max(c.last_ns, st.last_ns);
  }
  engine::refresh_stream_sums(r, c);
  return r;
}

engine::RxResult XdpRxProgram::run(const engine::RxPlan& plan, stats::RxSnapshotRing& snapshots,
                                   const std::atomic<bool>& stop) const {
  uint64_t next_publish_ns = now_ns() + plan.publish_every_ns;
  while (!stop.load(std::memory_order_relaxed)) {
    const timespec ts{0, 10'000'000};  // the kernel counts; this thread only looks now and then
    nanosleep(&ts, nullptr);
    const uint64_t now = now_ns();
    if (now < next_publish_ns) continue;
    snapshots.try_push({read(false).counters, now, false});
    next_publish_ns = now + plan.publish_every_ns;
  }
  engine::RxResult r = read(true);
  snapshots.try_push({r.counters, now_ns(), true});
  return r;
}

void lend_end_markers(const engine::RxResult& driver, std::vector<engine::RxResult>& app) {
  // The driver layer keys by stream id; the sockets' streams also know their
  // sender. A marker is lent to every socket stream of that id that has none.
  engine::RxResult lent;
  bool any = false;
  for (const engine::RxStreamState& d : driver.streams) {
    if (!d.ended) continue;
    for (const engine::RxResult& a : app)
      for (const engine::RxStreamState& st : a.streams) {
        if (st.key.stream != d.key.stream || st.ended) continue;
        engine::RxStreamState& l = lent.streams.emplace_back();
        l.key = st.key;
        l.seen = true;
        l.ended = true;
        l.end = d.end;
        l.markers.candidate[0] = d.end;
        l.markers.votes[0] = 1;
        any = true;
      }
  }
  if (!any) return;
  lent.counters.stream_count = driver.counters.stream_count;
  app.push_back(std::move(lent));
}

std::string layers_table(const report::RxSummary& driver, const report::RxSummary& app, const std::string& where) {
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> rows;  // stream -> (driver, application)
  for (const report::StreamRow& r : driver.streams) rows[r.stream].first = r.unique;
  for (const report::StreamRow& r : app.streams) rows[r.stream].second = r.unique;
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "layers: driver = XDP on %s, application = our sockets\n", where.c_str());
  out += line;
  std::snprintf(line, sizeof line, "%8s %14s %14s %14s\n", "stream", "driver", "application", "difference");
  out += line;
  uint64_t td = 0, ta = 0;
  for (const auto& [stream, v] : rows) {
    std::snprintf(line, sizeof line, "%8u %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n", stream, v.first, v.second,
                  v.first > v.second ? v.first - v.second : 0);
    out += line;
    td += v.first;
    ta += v.second;
  }
  const uint64_t diff = td > ta ? td - ta : 0;
  std::snprintf(line, sizeof line, "%8s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n", "total", td, ta, diff);
  out += line;
  // sk_drops counts every datagram a full buffer refused, end markers too.
  const uint64_t drops = app.totals.backend_drops;
  const uint64_t markers = driver.totals.end_markers > app.totals.end_markers ? driver.totals.end_markers - app.totals.end_markers : 0;
  std::snprintf(line, sizeof line,
                "between the layers: %" PRIu64 " data packets and %" PRIu64 " end markers lost; socket drops (sk_drops) %"
                PRIu64 ", unexplained %" PRIu64 "\n",
                diff, markers, drops, diff + markers > drops ? diff + markers - drops : 0);
  out += line;
  return out;
}

nlohmann::json layers_json(const report::RxSummary& driver, const report::RxSummary& app, bool ipv6) {
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> rows;
  for (const report::StreamRow& r : driver.streams) rows[r.stream].first = r.unique;
  for (const report::StreamRow& r : app.streams) rows[r.stream].second = r.unique;
  nlohmann::json streams = nlohmann::json::array();
  uint64_t td = 0, ta = 0;
  for (const auto& [stream, v] : rows) {
    streams.push_back({{"stream", stream}, {"driver", v.first}, {"application", v.second},
                       {"difference", v.first > v.second ? v.first - v.second : 0}});
    td += v.first;
    ta += v.second;
  }
  nlohmann::json d = report::to_json(driver, ipv6);
  d.erase("type");
  d.erase("tool");
  return {{"driver", d}, {"driver_received", td}, {"application_received", ta},
          {"difference", td > ta ? td - ta : 0},
          {"end_markers_difference", driver.totals.end_markers > app.totals.end_markers ? driver.totals.end_markers - app.totals.end_markers : 0},
          {"socket_drops", app.totals.backend_drops}, {"streams", streams}};
}

}  // namespace rateline::drivers
