#include "xdp/xdp_rx.hpp"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <memory>

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
static_assert(sizeof(rl_rx_config) == 24);
static_assert(sizeof(rl_end_body) == 40);
static_assert(sizeof(rl_rx_totals) == 13 * 8);
static_assert(sizeof(rl_stream_key) == 24);

XdpRxProgram::XdpRxProgram(const XdpRxConfig& cfg) : cfg_(cfg) {
  if (cfg.max_streams > kMaxStreams)
    throw BackendUnavailable("--backend xdp tracks at most " + std::to_string(kMaxStreams) +
                             " streams in the kernel: lower --max-streams");
  rl_rx_config rc{};
  rc.port_be = htons(cfg.port);
  rc.port_count = cfg.port_count;
  rc.max_streams = cfg.max_streams;
  rc.pass_counted = cfg.pass_counted ? 1 : 0;
  rc.max_payload = cfg.max_payload;
  rc.reflect_every = cfg.reflect_every;
  rc.ifindex = static_cast<uint32_t>(cfg.iface.index);
  static constexpr const char* kTxFailurePrograms[2] = {"rateline_reflect_exception", "rateline_reflect_bulk"};
  obj_ = std::make_unique<BpfObject>(kXdpRxObject, kXdpRxObject_size, "rateline_count");
  obj_->set_rodata(&rc, sizeof rc);
  obj_->set_max_entries("rx_streams", cfg.max_streams);
  for (const char* p : kTxFailurePrograms) obj_->set_autoload(p, cfg.reflect_every != 0);
  obj_->load();
  if (cfg.reflect_every)
    for (int i = 0; i < 2; ++i) {
      std::string why;
      tx_failures_[i].reset(obj_->attach(kTxFailurePrograms[i], why));
      // Without them a failed XDP_TX would pass for a reply sent: no reflecting uncounted.
      if (!tx_failures_[i]) throw BackendUnavailable(why + " (--reflect on xdp counts the driver's send failures there)");
    }
  totals_fd_ = obj_->map_fd("rx_totals");
  streams_fd_ = obj_->map_fd("rx_streams");
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

void XdpRxProgram::LinkCloser::operator()(bpf_link* l) const { bpf_link__destroy(l); }

engine::RxResult XdpRxProgram::read(bool with_latency) const {
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
      c.fragments += t.fragments;
      c.reflected += t.reflect_tx;
      c.reflect_failed += t.reflect_failed;
    }
    // A failure is counted on the CPU that flushed, a frame on the one that sent it: compare the sums.
    c.reflected -= std::min(c.reflected, c.reflect_failed);
  }

  // Walks the hash by key. Streams are only ever added, never deleted, so a
  // walk during the run sees every stream that existed when it began.
  auto s = std::make_unique<rl_rx_stream>();  // 6 KiB: not on the stack
  rl_stream_key key{}, next{};
  for (bool first = true; bpf_map_get_next_key(streams_fd_, first ? nullptr : &key, &next) == 0; first = false) {
    key = next;
    if (bpf_map_lookup_elem_flags(streams_fd_, &key, s.get(), BPF_F_LOCK) != 0) continue;
    add_stream(r, key, *s, with_latency);
  }
  engine::refresh_stream_sums(r, c);
  return r;
}

void XdpRxProgram::add_stream(engine::RxResult& r, const rl_stream_key& key, const rl_rx_stream& s,
                              bool with_latency) {
  stats::RxCounters& c = r.counters;
  if (!(s.flags & RL_STREAM_SEEN) && !s.corrupt) return;
  engine::RxStreamState& st = r.streams.emplace_back();
  st.key.from.ip = std::to_array(key.ip);
  st.key.from.port = ntohs(key.port_be);
  st.key.sender = key.sender;
  st.key.stream = key.stream;
  stats::SequenceCounts q;
  q.received = s.received;
  q.unique = s.unique;
  q.duplicates = s.duplicates;
  q.reordered = s.reordered;
  q.stale = s.stale;
  q.highest_next = s.highest_next;
  q.implausible = s.implausible + ((s.flags & RL_STREAM_PENDING) ? 1 : 0);  // SequenceTracker::counts()
  st.seq.adopt(q);
  st.payload_bytes = s.payload_bytes;
  st.corrupt = s.corrupt;
  st.clock_behind = s.clock_behind;
  st.first_ns = s.first_ns;
  st.last_ns = s.last_ns;
  st.payload_len = s.payload_len;
  st.seen = s.flags & RL_STREAM_SEEN;
  for (int i = 0; i < 2; ++i) {
    const rl_end_body& e = s.end_candidate[i];
    st.markers.candidate[i] = {.total_sent = e.total_sent, .delay_ns = e.delay_ns, .count = e.count,
                               .burst = e.burst, .stream_count = e.stream_count, .data_size = e.data_size,
                               .clock_id = e.clock_id};
    st.markers.votes[i] = s.end_votes[i];
  }
  st.markers.copies = s.end_copies;
  st.ended = s.flags & RL_STREAM_ENDED;
  if (st.ended) st.end = st.markers.candidate[(s.flags & RL_STREAM_END_SECOND) ? 1 : 0];
  st.jitter.adopt(static_cast<double>(s.jitter_x16) / 16.0);
  if (with_latency && s.lat_samples) st.latency.merge_binned(s.lat_buckets, s.lat_sum, s.lat_min, s.lat_max);
  if (st.seen) ++c.streams_seen;
  if (st.ended) {
    ++c.streams_ended;
    c.stream_count = std::max<uint64_t>(c.stream_count, st.end.stream_count);
  }
  if (st.first_ns && (!c.first_ns || st.first_ns < c.first_ns)) c.first_ns = st.first_ns;
  c.last_ns = std::max(c.last_ns, st.last_ns);
}

engine::RxResult XdpRxProgram::run(const engine::RxPlan& plan, stats::RxSnapshotRing& snapshots,
                                   const std::atomic<bool>& stop) const {
  uint64_t next_publish_ns = now_ns() + plan.publish_every_ns;
  while (!stop.load(std::memory_order_relaxed)) {
    const timespec ts{0, 10'000'000};  // the kernel counts; this thread only looks now and then
    nanosleep(&ts, nullptr);
    const uint64_t now = now_ns();
    if (now < next_publish_ns) continue;
    stats::RxCounters c = read(false).counters;
    c.drained_ns = now;  // the kernel counts as frames arrive: nothing waits for this thread
    snapshots.try_push({c, now, false});
    next_publish_ns = now + plan.publish_every_ns;
  }
  engine::RxResult r = read(true);
  snapshots.try_push({r.counters, now_ns(), true});
  return r;
}

void lend_end_markers(const engine::RxResult& driver, std::vector<engine::RxResult>& app) {
  // Both layers key a stream by its sender and id: a marker the driver layer
  // believed is lent to the socket stream of that key when it has none.
  engine::RxResult lent;
  bool any = false;
  for (const engine::RxStreamState& d : driver.streams) {
    if (!d.ended) continue;
    for (const engine::RxResult& a : app)
      for (const engine::RxStreamState& st : a.streams) {
        if (!(st.key == d.key) || st.ended) continue;
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

}  // namespace rateline::drivers
