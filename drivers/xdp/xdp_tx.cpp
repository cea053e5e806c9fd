#include "xdp/xdp_tx.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "engine/burst_loop.hpp"
#include "engine/flow_schedule.hpp"
#include "engine/size_mix.hpp"
#include "net/checksum.hpp"
#include "net/frame.hpp"
#include "pace/pacer.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "wire/test_payload.hpp"
#include "xdp/xdp_object.hpp"
#include "xdp/xdp_shared.h"
#include "xdp_tx_object.h"  // generated: the compiled generator (xdp_tx.bpf.c)

namespace rateline::drivers {

// The shared header and the engine describe one wire format.
static_assert(RL_MAGIC == wire::kMagic && RL_VERSION == wire::kVersion);
static_assert(RL_KIND_DATA == static_cast<int>(wire::Kind::data) && RL_KIND_END == static_cast<int>(wire::Kind::end));
static_assert(RL_HEADER_BYTES == wire::kHeaderBytes && RL_FIRST_PATTERN_WORD == wire::kHeaderBytes / 8);
static_assert(RL_END_BODY_BYTES == wire::kEndMarkerBodyBytes && RL_END_MIN_BYTES == wire::kEndMarkerMinPayloadBytes);
static_assert(RL_PATTERN_STEP == wire::kPatternStep);
static_assert(sizeof(rl_tx_stream) == 64, "one cache line per stream");
static_assert(sizeof(rl_tx_config) == 48 + RL_MAX_L2_BYTES);
static_assert(RL_SHORT_HEADER_BYTES == wire::kShortHeaderBytes && RL_SHORT_TAG == wire::kShortTag &&
              RL_SHORT_VERSION_KIND == wire::kShortVersionKind && RL_SHORT_LIMIT == wire::kShortSeqLimit);
static_assert(RL_MIX_MAX_CLASSES == engine::kMaxMixSizes && RL_MIX_MAX_CYCLE == engine::kMaxMixCycle);
static_assert(sizeof(rl_tx_mix_class) == 24 && sizeof(rl_tx_mix_stream) == 40);

namespace {

// BPF_PROG_RUN frames live in one page after XDP_PACKET_HEADROOM, with
// room for skb_shared_info at the end (net/bpf/test_run.c).
constexpr uint32_t kXdpHeadroom = 256;
constexpr uint32_t kSharedInfoBytes = 320;
// Unpaced: frames per BPF_PROG_RUN call. Each call builds a page pool, so
// calls must be large; 16384 frames are a few ms, short enough for
// --duration, progress and Ctrl-C.
constexpr uint32_t kUnpacedCallFrames = 16384;
constexpr uint32_t kMaxCallFrames = 1u << 20;

// What BPF_PROG_RUN gets: our metadata (RL_GEN_META_MAGIC), then the frame.
std::vector<uint8_t> with_meta(uint32_t frame_len) {
  std::vector<uint8_t> buf(RL_GEN_META_BYTES + frame_len);
  const uint32_t magic = RL_GEN_META_MAGIC;
  std::memcpy(buf.data(), &magic, sizeof magic);
  return buf;
}

std::vector<uint8_t> data_template(const engine::TxFlow& f, const engine::TxPlan& plan) {
  std::vector<uint8_t> buf = with_meta(f.headers_len + plan.payload.len);
  const std::span<uint8_t> frame(buf.data() + RL_GEN_META_BYTES, buf.size() - RL_GEN_META_BYTES);
  std::memcpy(frame.data(), f.headers.data(), f.headers_len);
  wire::fill_data_payload(frame.data() + f.headers_len, plan.payload, f.stream, 0, now_ns());
  net::udp_finish_checksum(frame, plan.ipv6);
  return buf;
}

std::vector<uint8_t> end_frame(const engine::TxFlow& f, const engine::TxPlan& plan) {
  std::vector<uint8_t> buf = with_meta(f.headers_len + plan.end_payload.len);
  const std::span<uint8_t> frame(buf.data() + RL_GEN_META_BYTES, buf.size() - RL_GEN_META_BYTES);
  std::memcpy(frame.data(), f.end_headers.data(), f.headers_len);
  wire::EndMarkerBody body = plan.end_body;
  body.total_sent = f.next_seq;
  wire::fill_end_marker(frame.data() + f.headers_len, plan.end_payload, f.stream, body, now_ns());
  net::udp_finish_checksum(frame, plan.ipv6);
  return buf;
}

// The constant parts of both checksums for one flow's template (see
// rl_tx_stream): the program adds the varying words per frame.
rl_tx_stream stream_constants(const uint8_t* frame, uint32_t headers_len, bool ipv6, const wire::PayloadPlan& pl) {
  const uint8_t* udp = frame + headers_len - net::kUdpHeaderBytes;
  const uint8_t* l3 = udp - (ipv6 ? net::kIpv6HeaderBytes : net::kIpv4HeaderBytes);  // after any VLAN tags
  const uint8_t* p = frame + headers_len;
  const uint32_t udp_len = static_cast<uint32_t>(net::kUdpHeaderBytes) + pl.len;
  uint64_t ones = 0;
  if (ipv6) {
    const uint8_t tail[8] = {static_cast<uint8_t>(udp_len >> 24), static_cast<uint8_t>(udp_len >> 16),
                             static_cast<uint8_t>(udp_len >> 8), static_cast<uint8_t>(udp_len), 0, 0, 0, IPPROTO_UDP};
    ones = net::ones_sum(tail, 8, net::ones_sum(l3 + 8, 32));
  } else {
    const uint8_t tail[4] = {0, IPPROTO_UDP, static_cast<uint8_t>(udp_len >> 8), static_cast<uint8_t>(udp_len)};
    ones = net::ones_sum(tail, 4, net::ones_sum(l3 + 12, 8));
  }
  uint8_t udp_hdr[8];
  std::memcpy(udp_hdr, udp, 8);
  udp_hdr[6] = udp_hdr[7] = 0;
  ones = net::ones_sum(udp_hdr, 8, ones);
  rl_tx_stream s{};
  if (pl.short_form) {  // the program sums the whole payload itself
    s.ones_base = ones;
    return s;
  }
  ones = net::ones_sum(p, 8, ones);                       // word 0: magic, version, kind, stream
  ones = net::ones_sum(p + wire::kHeaderBytes - 8, 4, ones);  // bytes 24..27: sender id and length
  const uint64_t w0 = wire::detail::load_le64(p);
  const uint64_t w3 = wire::detail::load_le64(p + 24) & 0xffffffffull;
  s.csum_base = w0 + 7 * w3 + wire::kPatternStep * pl.sum_i_odd;
  s.ones_base = ones;
  return s;
}

uint64_t load_relaxed(const uint64_t& v) { return __atomic_load_n(&v, __ATOMIC_RELAXED); }

// A size mix: flow f's frame of size class k (its headers for that length,
// the payload for sequence 0), and what the program writes per frame of
// that class (rl_tx_mix_stream).
struct MixFrame {
  std::vector<uint8_t> buf;  // metadata + frame
  rl_tx_mix_stream bases{};
};

// Where a frame's IP length field and (IPv4) header checksum are: what a size class changes in the headers
// besides the UDP length.
struct MixIpFields {
  uint32_t len_at = 0;
  uint32_t csum_at = 0;  // 0: none (IPv6)
};

MixIpFields mix_ip_fields(const engine::TxPlan& plan) {
  const auto ip_at = static_cast<uint32_t>(net::headers_len(plan.ipv6, plan.vlan_tags) - net::kUdpHeaderBytes -
                                           (plan.ipv6 ? net::kIpv6HeaderBytes : net::kIpv4HeaderBytes));
  return plan.ipv6 ? MixIpFields{ip_at + 4, 0} : MixIpFields{ip_at + 2, ip_at + 10};
}

MixFrame mix_frame(const engine::TxFlow& f, const engine::TxPlan& plan, size_t k, MixIpFields ip) {
  const wire::PayloadPlan& pl = plan.mix[k];
  MixFrame m{with_meta(f.headers_len + pl.len), {}};
  const uint32_t meta[2] = {RL_GEN_META_MIX_MAGIC, uint32_t{f.stream} | uint32_t{pl.sender} << 16};
  std::memcpy(m.buf.data(), meta, sizeof meta);
  uint8_t* frame = m.buf.data() + RL_GEN_META_BYTES;
  std::memcpy(frame, f.mix_headers[k].bytes.data(), f.headers_len);
  wire::fill_data_payload(frame + f.headers_len, pl, f.stream, 0, now_ns());
  net::udp_finish_checksum({frame, f.headers_len + pl.len}, plan.ipv6);
  const rl_tx_stream s = stream_constants(frame, f.headers_len, plan.ipv6, pl);
  m.bases.csum_base = s.csum_base;
  m.bases.ones_base = s.ones_base;
  if (!pl.short_form) {
    std::memcpy(&m.bases.w0, frame + f.headers_len, 8);
    std::memcpy(&m.bases.w3, frame + f.headers_len + 24, 4);
  }
  std::memcpy(&m.bases.ip_len_be, frame + ip.len_at, 2);
  if (ip.csum_at) std::memcpy(&m.bases.ip_csum_be, frame + ip.csum_at, 2);
  std::memcpy(&m.bases.udp_len_be, frame + f.headers_len - net::kUdpHeaderBytes + 4, 2);
  return m;
}

}  // namespace

XdpTxProgram::XdpTxProgram(const XdpTxConfig& cfg) : cfg_(cfg) {
  const uint32_t headers = static_cast<uint32_t>(net::headers_len(cfg.ipv6, cfg.l2.vlan_tags));
  const uint32_t longest = headers + std::max(cfg.payload_len, wire::end_marker_plan(cfg.payload_len).len);
  const auto page = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
  const uint32_t max_frame = page - kXdpHeadroom - kSharedInfoBytes;
  if (longest > max_frame)
    throw BackendUnavailable("--backend xdp: frames of " + std::to_string(longest) + " B do not fit one page of "
                             "BPF_PROG_RUN (at most " + std::to_string(max_frame) + " B: --size " +
                             std::to_string(max_frame - headers) + " or less)");
  const wire::PayloadPlan pl = wire::PayloadPlan::make(cfg.payload_len);
  rl_tx_config rc{};
  rc.payload_off = headers;
  rc.udp_off = headers - static_cast<uint32_t>(net::kUdpHeaderBytes);
  rc.payload_len = pl.len;
  rc.full_words = pl.full_words;
  rc.tail_bytes = pl.tail_bytes;
  rc.max_streams = cfg.streams;
  rc.short_form = pl.short_form ? 1 : 0;
  rc.sum_odd = pl.sum_odd;
  rc.sum_i_odd = pl.sum_i_odd;
  if (cfg.l2.vlan_tags) {
    std::array<uint8_t, net::kMaxHeadersBytes> h{};
    net::build_udp_headers(h, cfg.l2, 0);
    rc.l2_len = static_cast<uint32_t>(net::kEthHeaderBytes + cfg.l2.vlan_tags * net::kVlanTagBytes);
    std::copy_n(h.begin(), rc.l2_len, rc.l2);
  }

  obj_ = std::make_unique<BpfObject>(kXdpTxObject, kXdpTxObject_size, "rateline_gen");
  obj_->set_rodata(&rc, sizeof rc);
  obj_->set_max_entries("tx_streams", cfg.streams);
  obj_->set_max_entries("tx_mix_streams", cfg.streams * RL_MIX_MAX_CLASSES);
  obj_->load();
  prog_fd_ = obj_->prog_fd("rateline_gen");
  xmit_fd_ = obj_->map_fd("tx_xmit");
  const int streams_fd = obj_->map_fd("tx_streams");
  streams_bytes_ = (cfg.streams * sizeof(rl_tx_stream) + page - 1) / page * page;
  void* m = mmap(nullptr, streams_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, streams_fd, 0);
  if (m == MAP_FAILED) throw BackendUnavailable(bpf_error(errno, "map the XDP generator's stream state"));
  streams_ = static_cast<rl_tx_stream*>(m);

  // BPF_PROG_RUN with repeat > 1 adds the program to the kernel's XDP
  // dispatcher and removes it again, two RCU grace periods (~10-30 ms) per
  // call, unless the dispatcher holds it already. A generic-mode link on the
  // egress device (or lo) keeps it there for the run; the program passes
  // every real frame (no metadata), and the link goes with the process.
  std::string pin_why;
  for (const int ifindex : {cfg.iface.index, 1}) {
    LIBBPF_OPTS(bpf_link_create_opts, lopts);
    lopts.flags = XDP_FLAGS_SKB_MODE;
    pin_fd_ = bpf_link_create(prog_fd_, ifindex, BPF_XDP, &lopts);
    if (pin_fd_ >= 0) {
      pin_where_ = ifindex == 1 ? "lo" : cfg.iface.name;
      break;
    }
    if (pin_why.empty()) pin_why = bpf_error(-pin_fd_, "attach the generator to " + cfg.iface.name + " (generic mode)");
  }

  std::string why;
  links_[0] = obj_->attach("rateline_devmap_xmit", why);
  if (links_[0]) links_[1] = obj_->attach("rateline_redirect_err", why);
  counting_drops_ = links_[0] && links_[1];
  note_ = "XDP live frames (BPF_PROG_RUN) out of " + cfg.iface.name + ", " +
          std::to_string(std::clamp<uint32_t>(cfg.batch, 1, 256)) + " frames per kernel batch; driver drops " +
          (counting_drops_ ? std::string("counted (xdp tracepoints)") : "not counted: " + why) +
          (pin_fd_ >= 0 ? "; kept in the XDP dispatcher by a no-op generic link on " + pin_where_
                        : "; every call waits for RCU grace periods (" + pin_why + "): small paced bursts are slow");
}

XdpTxProgram::~XdpTxProgram() {
  for (bpf_link* l : links_)
    if (l) bpf_link__destroy(l);
  if (streams_) munmap(streams_, streams_bytes_);
  if (pin_fd_ >= 0) close(pin_fd_);
}

int XdpTxProgram::send(const std::vector<uint8_t>& buf, uint32_t frames) const {
  xdp_md ctx{};
  ctx.data = RL_GEN_META_BYTES;  // metadata first, then the frame
  ctx.data_end = static_cast<uint32_t>(buf.size());
  ctx.ingress_ifindex = static_cast<uint32_t>(cfg_.iface.index);
  LIBBPF_OPTS(bpf_test_run_opts, opts);
  opts.data_in = buf.data();
  opts.data_size_in = static_cast<uint32_t>(buf.size());
  opts.ctx_in = &ctx;
  opts.ctx_size_in = sizeof ctx;
  opts.repeat = frames;
  opts.flags = BPF_F_TEST_XDP_LIVE_FRAMES;
  opts.batch_size = std::clamp<uint32_t>(cfg_.batch, 1, 256);
  const int rc = bpf_prog_test_run_opts(prog_fd_, &opts);
  return rc < 0 ? -rc : 0;
}

engine::TxResult XdpTxProgram::run(engine::TxPlan plan, stats::TxSnapshotRing& snapshots,
                                   const std::atomic<bool>& stop) {
  stats::TxCounters c;
  engine::TxResult result;
  const auto tid = static_cast<uint32_t>(gettid());
  if (counting_drops_) {
    const rl_tx_xmit zero{};
    bpf_map_update_elem(xmit_fd_, &tid, &zero, BPF_ANY);
  }
  auto xmit = [&] {
    rl_tx_xmit x{};
    if (counting_drops_) bpf_map_lookup_elem(xmit_fd_, &tid, &x);
    return x;
  };

  std::vector<std::vector<uint8_t>> templates;
  const bool mixed = !plan.mix.empty();
  if (mixed) set_up_mix(plan);
  for (const engine::TxFlow& f : plan.flows) {
    if (f.stream >= cfg_.streams) throw SetupError("--backend xdp: stream " + std::to_string(f.stream) + " beyond the plan");
    rl_tx_stream s{};
    if (mixed) {
      templates.push_back(set_up_mix_flow(f, plan));
    } else {
      templates.push_back(data_template(f, plan));
      s = stream_constants(templates.back().data() + RL_GEN_META_BYTES, f.headers_len, plan.ipv6, plan.payload);
    }
    s.next_seq = f.next_seq;
    streams_[f.stream] = s;  // before this worker's first run; no other writer for this stream
  }
  // A size mix: the worker's place in the cycle, carried from call to call
  // (engine::MixDataSource moves it by what the backend took, as here).
  uint32_t mix_at = 0;
  std::vector<uint64_t> per_cycle(plan.mix.size(), 0);  // packets of each class in one whole cycle
  for (const uint8_t k : plan.mix_cycle) ++per_cycle[k];
  if (mixed) result.mix_packets.assign(plan.mix.size(), 0);

  // One call: how many frames the program ran for this stream (from the
  // map, so exact even when a signal cut the call short).
  // Stamps: one clock read per RL_STAMP_EVERY frames (xdp_tx.bpf.c), the
  // first frame of each call reading afresh. How far a stamp precedes its
  // frame is estimated from the call's mean time per frame: a group of k
  // frames' last one is generated (k - 1) frame-times after the read.
  int err = 0;
  auto run_data = [&](size_t i, uint32_t frames) {
    rl_tx_stream& st = streams_[plan.flows[i].stream];
    const uint64_t& next = st.next_seq;
    const uint64_t before = load_relaxed(next);
    __atomic_store_n(&st.stamp_left, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&st.mix_at, mix_at, __ATOMIC_RELAXED);
    const uint64_t t0 = now_ns();
    err = send(templates[i], frames);
    const uint64_t call_ns = now_ns() - t0;
    const uint64_t ran = load_relaxed(next) - before;
    if (mixed) {  // the classes of the cycle's next `ran` places: what this call sent
      const uint64_t cycles = ran / plan.mix_cycle.size();
      for (size_t k = 0; k < per_cycle.size(); ++k) {
        result.mix_packets[k] += cycles * per_cycle[k];
        c.payload_bytes += cycles * per_cycle[k] * plan.mix[k].len;
      }
      for (uint64_t n = cycles * plan.mix_cycle.size(); n < ran; ++n) {  // the part cycle: at most its length
        const uint8_t k = plan.mix_cycle[mix_at];
        ++result.mix_packets[k];
        c.payload_bytes += plan.mix[k].len;
        if (++mix_at == plan.mix_cycle.size()) mix_at = 0;
      }
    } else {
      c.payload_bytes += ran * plan.payload.len;
    }
    if (ran) {
      const uint64_t groups = (ran + RL_STAMP_EVERY - 1) / RL_STAMP_EVERY;
      const double frame_ns = static_cast<double>(call_ns) / static_cast<double>(ran);
      const auto lead_max = static_cast<uint64_t>(frame_ns * static_cast<double>(std::min<uint64_t>(ran, RL_STAMP_EVERY) - 1));
      result.stamp_lead_max_ns = std::max(result.stamp_lead_max_ns, lead_max);
      result.stamp_lead_sum_ns += static_cast<uint64_t>(frame_ns * static_cast<double>(ran - groups));
      result.stamped_batches += groups;
    }
    return ran;
  };

  // The engine's burst loop (engine/burst_loop.hpp) around this backend's
  // step: n frames of one flow per BPF_PROG_RUN call. Paced: one burst per
  // call (more only past kMaxCallFrames). Unpaced: back-to-back bursts are
  // one stream of frames, so calls are large. Flows take turns of one call,
  // carried across bursts and evened out at the quota
  // (engine/flow_schedule.hpp): a call is shorter where a turn ends.
  pace::Pacer pacer(plan.pace);
  const uint64_t call_frames =
      plan.pace.paced() ? plan.pace.burst : std::max<uint64_t>(plan.pace.burst, kUnpacedCallFrames);
  engine::FlowSchedule schedule(static_cast<uint32_t>(plan.flows.size()), call_frames, plan.quota,
                                plan.flow_shuffle_seed);
  auto send_calls = [&](uint64_t burst) {
    uint64_t burst_left = burst;
    while (burst_left && !err) {
      const uint32_t i = schedule.flow();
      const auto want = static_cast<uint32_t>(std::min<uint64_t>({burst_left, kMaxCallFrames, schedule.run_left()}));
      const uint64_t taken = run_data(i, want);
      plan.flows[i].next_seq += taken;
      schedule.advance(taken);
      c.packets += taken;
      burst_left -= taken;
      if (taken < want) break;
    }
    if (err == EINTR) {
      err = 0;  // a signal: the stop flag says whether it meant us
    } else if (err) {
      if (c.packets == 0)
        throw BackendUnavailable(bpf_error(err, "run the XDP generator on " + cfg_.iface.name) +
                                 (err == EINVAL || err == EOPNOTSUPP || err == 524
                                      ? " (BPF_F_TEST_XDP_LIVE_FRAMES needs Linux >= 5.18 and a device with XDP)"
                                      : ""));
      c.last_error = err;
      result.stalled = true;
    }
    return burst - burst_left;
  };
  auto refused = [&](stats::TxCounters& counters) {
    const rl_tx_xmit x = xmit();
    counters.failed = x.drops + x.redirect_errors;
  };
  engine::send_bursts(plan, call_frames, pacer, c, result, snapshots, stop, [] { return now_ns(); }, send_calls,
                      refused);
  const rl_tx_xmit data_x = xmit();
  c.failed = data_x.drops + data_x.redirect_errors;
  if (data_x.last_err) c.last_error = static_cast<int>(data_x.last_err);
  else if (c.failed) c.last_error = ENOBUFS;  // refused without an error: the device's ring was full

  // End markers: complete frames, sent as they are by the same program; the
  // program counts what it ran, the tracepoints what the driver refused.
  const uint64_t end_sent = engine::send_end_markers(plan, result, [&](const engine::TxFlow& f) -> uint64_t {
    const std::vector<uint8_t> frame = end_frame(f, plan);
    const uint64_t& sent = streams_[f.stream].end_frames;
    const uint64_t before = load_relaxed(sent);
    send(frame, 1);
    return load_relaxed(sent) - before;
  });
  const rl_tx_xmit end_x = xmit();
  const uint64_t end_failed = end_x.drops + end_x.redirect_errors - c.failed;
  c.end_markers = end_sent - std::min(end_sent, end_failed);
  if (counting_drops_) bpf_map_delete_elem(xmit_fd_, &tid);

  if (c.failed) {
    const int e = c.last_error;
    std::string a = "the driver of " + cfg_.iface.name + " refused " + std::to_string(c.failed) + " frames" +
                    (e == ENOBUFS ? " (its transmit ring was full)" : " (" + errno_text(e) + ")") + ": ";
    if (e == ENXIO || e == EOPNOTSUPP)
      a += "the device cannot take XDP frames now; a veth passes them only to a peer with NAPI on: attach an XDP "
           "program to the peer (rx --backend xdp) or turn GRO on there (ethtool -K PEER gro on)";
    else
      a += "XDP transmit has no backpressure: pace with --rate, or lower --batch";
    std::lock_guard lock(advice_mu_);
    advice_ = a;
    if (c.failed >= c.packets) result.stalled = true;  // nothing got out: the run failed
  }
  engine::publish(snapshots, c, pacer, now_ns(), true);
  result.counters = c;
  result.flows = std::move(plan.flows);
  return result;
}

void XdpTxProgram::set_up_mix(const engine::TxPlan& plan) {
  // The same for every worker of the run: written again by each, with the same bytes.
  const MixIpFields ip = mix_ip_fields(plan);
  auto m = std::make_unique<rl_tx_mix>();
  std::copy(plan.mix_cycle.begin(), plan.mix_cycle.end(), m->cycle);
  m->len = static_cast<uint32_t>(plan.mix_cycle.size());
  m->ip_len_at = static_cast<uint16_t>(ip.len_at);
  m->ip_csum_at = static_cast<uint16_t>(ip.csum_at);
  const uint32_t zero = 0;
  if (bpf_map_update_elem(obj_->map_fd("tx_mix"), &zero, m.get(), BPF_ANY) != 0)
    throw BackendUnavailable(bpf_error(errno, "give the XDP generator its size mix"));
  for (uint32_t k = 0; k < plan.mix.size(); ++k) {
    const wire::PayloadPlan& pl = plan.mix[k];
    const rl_tx_mix_class cls{pl.len, pl.full_words, pl.tail_bytes, pl.short_form ? 1u : 0u, pl.sum_odd};
    if (bpf_map_update_elem(obj_->map_fd("tx_mix_classes"), &k, &cls, BPF_ANY) != 0)
      throw BackendUnavailable(bpf_error(errno, "give the XDP generator its size mix"));
  }
}

std::vector<uint8_t> XdpTxProgram::set_up_mix_flow(const engine::TxFlow& f, const engine::TxPlan& plan) {
  size_t largest = 0;
  std::vector<uint8_t> largest_frame;
  for (size_t k = 0; k < plan.mix.size(); ++k) {
    MixFrame m = mix_frame(f, plan, k, mix_ip_fields(plan));
    const uint32_t slot = uint32_t{f.stream} * RL_MIX_MAX_CLASSES + static_cast<uint32_t>(k);
    if (bpf_map_update_elem(obj_->map_fd("tx_mix_streams"), &slot, &m.bases, BPF_ANY) != 0)
      throw BackendUnavailable(bpf_error(errno, "give the XDP generator its size mix"));
    if (plan.mix[k].len >= plan.mix[largest].len) {
      largest = k;
      largest_frame = std::move(m.buf);
    }
  }
  return largest_frame;  // every frame starts as the largest and is cut to its class
}

std::string XdpTxProgram::advice() const {
  std::lock_guard lock(advice_mu_);
  return advice_;
}

}  // namespace rateline::drivers
