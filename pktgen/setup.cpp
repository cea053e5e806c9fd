#include "setup.hpp"

#include "util/cli.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "engine/size_mix.hpp"
#include "net/iface.hpp"
#include "util/cli.hpp"
#include "util/clock.hpp"
#include "util/clock_id.hpp"
#include "util/errors.hpp"
#include "util/stamp_clock.hpp"
#include "wire/test_payload.hpp"

namespace rateline::pktgen {
namespace {

// The source address the kernel would use towards dst ("" if none).
std::string local_address_towards(const drivers::SocketAddress& dst) {
  const int fd = ::socket(dst.storage.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  std::string ip;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&dst.storage), dst.len) == 0) {
    drivers::SocketAddress local;
    local.len = sizeof local.storage;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local.storage), &local.len) == 0) {
      ip = local.text();
      ip = ip.substr(0, ip.rfind(':'));
      if (!ip.empty() && ip.front() == '[') ip = ip.substr(1, ip.size() - 2);
    }
  }
  ::close(fd);
  return ip;
}

// What the kernel's tables say about whole frames towards dst through
// `device`: interface, MACs, addresses; why_not says why they cannot be built.
drivers::FramePath kernel_frame_path(const Config& cfg, const drivers::SocketAddress& dst, const std::string& local_ip,
                                     const std::string& device, const net::FrameSizes& sizes) {
  drivers::FramePath r;
  if (device.empty()) {
    r.why_not = "no interface found towards " + cfg.dst + " (give --device)";
    return r;
  }
  try {
    r.iface = net::interface_info(device);
  } catch (const std::exception& e) {
    r.why_not = e.what();
    return r;
  }
  r.endpoints.dst_ip = dst.ip();
  r.endpoints.src_ip = drivers::make_address(local_ip.empty() ? (dst.is_v6() ? "::" : "0.0.0.0") : local_ip, 0).ip();
  r.endpoints.dst_port = cfg.port;
  r.endpoints.src_mac = r.iface.mac;
  if (device == "lo") {
    // Frames injected on lo take the kernel's input route, where a loopback
    // address is a martian (unless route_localnet): they would all vanish.
    r.why_not = "raw frames on lo never reach a local socket (loopback addresses are martians on input)";
    return r;
  }
  if (cfg.replay) return r;  // replayed frames carry their own MACs; parse_options checked their lengths
  if (!cfg.dst_mac.empty()) {
    r.endpoints.dst_mac = net::parse_mac(cfg.dst_mac);
  } else if (auto mac = net::neighbour_mac(r.endpoints.dst_ip, r.iface.index)) {
    r.endpoints.dst_mac = *mac;
  } else {
    r.why_not = "no neighbour entry for " + cfg.dst + " on " + device +
                " (ping it once so the kernel resolves its MAC, or give --dst-mac)";
    return r;
  }
  if (r.iface.mtu && sizes.l3 > r.iface.mtu)
    r.why_not = "frames of " + std::to_string(sizes.l3) + " B IP exceed the MTU " + std::to_string(r.iface.mtu) + " of " + device;
  return r;
}

MeanFrame mean_frame(const Config& cfg, const net::FrameSizes& sizes) {
  if (cfg.mix_sizes.empty()) return {double(sizes.payload), double(sizes.l2), double(sizes.l1)};
  MeanFrame m;
  double weights = 0;
  for (size_t i = 0; i < cfg.mix_sizes.size(); ++i) {
    const net::FrameSizes s = cfg.frame_sizes(cfg.mix_sizes[i]);
    const double w = cfg.mix_weights[i];
    m.payload += w * s.payload;
    m.l2 += w * s.l2;
    m.l1 += w * s.l1;
    weights += w;
  }
  return {m.payload / weights, m.l2 / weights, m.l1 / weights};
}

double rate_to_pps(const Config& cfg, const MeanFrame& mean) {
  const units::Rate& r = *cfg.rate;
  if (r.unit == units::RateUnit::pps) return r.value;
  const double bytes = cfg.rate_layer == RateLayer::l1 ? mean.l1 : cfg.rate_layer == RateLayer::l2 ? mean.l2 : mean.payload;
  return r.value / (8.0 * bytes);
}

// Non-zero and unpredictable: two runs from one address and port differ.
uint16_t draw_sender_id() {
  uint16_t id = 0;
  while (id == 0)
    if (getrandom(&id, sizeof id, 0) != static_cast<ssize_t>(sizeof id)) id = static_cast<uint16_t>(now_ns() ^ getpid());
  return id;
}

// A replay's sizes for the report: its frames' mean length, whole frames
// counted as the "payload" (they need not be UDP).
net::FrameSizes replay_sizes(const net::PcapFrames& f) {
  const auto mean = static_cast<uint32_t>(f.bytes.size() / f.size());
  net::FrameSizes s;
  s.payload = mean;
  s.l3 = mean > net::kEthHeaderBytes ? mean - static_cast<uint32_t>(net::kEthHeaderBytes) : 0;
  s.l2 = std::max<uint32_t>(mean + net::kFcsBytes, net::kMinFrameBytes);
  s.l1 = s.l2 + static_cast<uint32_t>(net::kL1OverheadBytes);
  return s;
}

struct FlowAddress {
  uint16_t src_port = 0;  // 0: the kernel's choice (sockets), 40000 + flow (frames)
  net::IpAddress src;     // used with a --src-ip range only
  net::IpAddress dst;     // used with a --dst range only
  uint16_t dst_port = 0;  // --port
  uint32_t mac = 0;       // index in a --dst-mac range
};

// Every flow's addresses: source port varying fastest, then source address,
// destination port, destination address, destination MAC. Without any
// range: one flow per worker, all to --dst --port.
std::vector<FlowAddress> flow_addresses(const Config& cfg) {
  std::vector<FlowAddress> flows;
  if (!cfg.has_flow_ranges()) {
    FlowAddress one;
    one.dst_port = cfg.port;
    flows.assign(cfg.threads, one);
    return flows;
  }
  const uint32_t ports = cfg.src_ports ? cfg.src_ports->count() : 1;
  const uint32_t sources = cfg.src_range ? cfg.src_range->count : 1;
  const uint32_t dst_ports = cfg.dst_ports ? cfg.dst_ports->count() : 1;
  const uint32_t macs = cfg.dst_mac_range ? cfg.dst_mac_range->count : 1;
  for (uint32_t m = 0; m < macs; ++m)
    for (uint32_t d = 0; d < cfg.dst_range.count; ++d)
      for (uint32_t q = 0; q < dst_ports; ++q)
        for (uint32_t s = 0; s < sources; ++s)
          for (uint32_t p = 0; p < ports; ++p)
            flows.push_back({static_cast<uint16_t>(cfg.src_ports ? cfg.src_ports->first + p : 0),
                             cfg.src_range ? cfg.src_range->at(s) : net::IpAddress{}, cfg.dst_range.at(d),
                             static_cast<uint16_t>(cfg.port + q), m});
  return flows;
}

std::string engine_stamps() {
  if (!tsc_stamp_basis()) return "one per batch, shared by its packets: clock_gettime(CLOCK_MONOTONIC)";
  return std::string("one per batch, shared by its packets: CLOCK_MONOTONIC read at least every 100 us, extended by "
                     "the TSC (") + tsc_stamp_basis() + "; RATELINE_TSC_STAMPS=0: clock_gettime)";
}

}  // namespace

Run set_up(const Config& cfg) {
  Run run;
  run.dst = drivers::make_address(cfg.dst, cfg.port);  // checked by parse_options
  run.sizes = cfg.frame_sizes(cfg.size);
  if (cfg.replay) run.sizes = replay_sizes(*cfg.replay);
  run.mean = mean_frame(cfg, run.sizes);
  // A backend whose frames bypass the kernel (a DPDK port) has no path MTU: its own setup checks.
  const drivers::BackendDescriptor* asked = drivers::find_backend(cfg.backend);
  if (const uint32_t mtu = cfg.replay || (asked && asked->frames && !asked->kernel_interface) ? 0 : drivers::path_mtu(run.dst, cfg.device);
      mtu && run.sizes.l3 > mtu)
    // Bad usage, not a broken host: the path MTU is what the user asked to send over.
    throw cli::UsageError((cfg.mix_sizes.empty() ? "--size " + std::to_string(cfg.size)
                                                 : "the size list's largest, " + std::to_string(cfg.size) + " B of payload,") +
                          " does not fit the path MTU " + std::to_string(mtu) + " towards " + cfg.dst + ": at most " +
                          std::to_string(mtu - (run.sizes.l3 - cfg.size)) + " bytes of UDP payload");
  drivers::TxOptions o;
  o.dst = run.dst;
  o.local_ip = cfg.src_ip.empty() ? local_address_towards(run.dst) : cfg.src_ip;
  // A --src-ip that is no address of this host (raw senders may use any):
  // the interface is the one the kernel's own source address towards dst is on.
  std::string device = cfg.device.empty() ? report::device_for_local_address(o.local_ip) : cfg.device;
  if (device.empty() && !cfg.src_ip.empty()) device = report::device_for_local_address(local_address_towards(run.dst));
  run.link = report::link_info(device);
  o.kernel_path = kernel_frame_path(cfg, run.dst, o.local_ip, device, run.sizes);
  run.choice = drivers::choose_backend(cfg.backend, drivers::Direction::tx, o.kernel_path.why_not.empty(),
                                       o.kernel_path.why_not);
  const drivers::BackendDescriptor& desc = *run.choice.backend;
  const std::string chosen = cfg.backend == "auto" ? std::string("auto (") + desc.name + " here)" : cfg.backend;
  if (!cfg.vlan_tci.empty() && !desc.frames) throw cli::UsageError(vlan_needs_frames(chosen));
  if (cfg.src_range && !desc.frames) throw cli::UsageError(src_range_needs_frames(chosen));
  if (cfg.dst_mac_range && !desc.frames) throw cli::UsageError(mac_range_needs_frames(chosen));
  if (cfg.tag_key && !desc.packet_tags) throw cli::UsageError(key_needs_user_space(chosen));
  if (cfg.rtt && !desc.tx_rtt)
    throw cli::UsageError(rtt_needs_replies(chosen));
  const std::string cores = cfg.cores.empty() && desc.pins_workers ? "auto" : cfg.cores;
  run.placement = topo::place_workers(cfg.threads, cores, cores == "auto" ? topo::device_numa_node(device, cfg.dpdk_args) : -1);

  // Flows: one per source port x source address x destination address
  // (without ranges: one per worker), dealt round-robin to workers; stream
  // id = flow index. --count is split per flow (count / flows, count % flows
  // of them one more); a worker's quota and --rate share are its flows'
  // part: flows end even across workers.
  const std::vector<FlowAddress> flows = flow_addresses(cfg);
  run.streams = static_cast<uint16_t>(flows.size());

  o.device = cfg.device;
  o.payload_bytes = cfg.size;
  const uint32_t tag = cfg.tag_bytes();  // --key-file: every payload starts with it; the plans describe what follows
  o.slot_bytes = std::max({cfg.size, tag + wire::kEndMarkerMinPayloadBytes, cfg.replay ? cfg.replay->max_len : 0});
  o.pcap_path = cfg.pcap_out;
  o.batch = cfg.batch;
  o.sndbuf_bytes = cfg.sndbuf_bytes;
  o.gso = cfg.gso;
  o.ipv6 = cfg.ipv6;
  o.vlan_tags = static_cast<uint8_t>(cfg.vlan_tci.size());
  o.kernel_path.endpoints.vlan_tags = o.vlan_tags;
  std::copy(cfg.vlan_tci.begin(), cfg.vlan_tci.end(), o.kernel_path.endpoints.vlan_tci.begin());
  o.streams = run.streams;
  o.dst_mac = cfg.dst_mac;
  o.eal_args = cfg.dpdk_args;
  o.placement = run.placement;
  // This run's sender id: the receiver tells runs from one address apart by it
  // (a restarted pktgen is a new sender, not a storm of duplicates).
  run.sender_id = draw_sender_id();
  if (cfg.rtt) {
    run.replies = std::make_unique<drivers::ReplyListener>(run.sender_id, cfg.port, o.slot_bytes,
                                                           cfg.dst_ports ? cfg.dst_ports->count() : 1, cfg.tag_key);
    // The workers' sockets, adopted as they open; a port of the backend's own, polled.
    if (!desc.frames || !desc.kernel_interface) o.replies = run.replies.get();
  }
  run.backend = desc.open_tx(o);
  // A replay's frames carry their own MACs and addresses: no path to resolve.
  const drivers::FramePath path = desc.frames && !cfg.replay ? run.backend->frame_path(o) : drivers::FramePath{};
  if (auto link = run.backend->link()) run.link = *link;
  run.stamps = run.backend->stamp_source().value_or(engine_stamps());

  if (cfg.rate) run.asked_pps = rate_to_pps(cfg, run.mean);

  const uint32_t end_len = tag + wire::end_marker_plan(cfg.size - tag).len;
  for (unsigned i = 0; i < cfg.threads; ++i) {
    auto w = std::make_unique<Worker>();
    w->cpu = run.placement.worker_cpus[i];
    w->queue.index = i;
    engine::TxPlan& plan = w->plan;
    for (size_t f = i; f < flows.size(); f += cfg.threads) {
      engine::TxFlow flow;
      flow.stream = static_cast<uint16_t>(f);
      flow.queue_flow = static_cast<uint16_t>(w->queue.src_ports.size());
      w->queue.src_ports.push_back(flows[f].src_port);
      if (cfg.dst_range.count > 1 || cfg.dst_ports)
        w->queue.dsts.push_back(drivers::make_address(cfg.dst_range.count > 1 ? net::ip_text(flows[f].dst) : cfg.dst,
                                                      flows[f].dst_port));
      if (desc.frames) {
        net::UdpEndpoints ep = path.endpoints;
        // Frames bind no socket: an unset source port gets a fixed one per stream.
        ep.src_port = flows[f].src_port ? flows[f].src_port : static_cast<uint16_t>(40000 + f);
        if (cfg.src_range) ep.src_ip = flows[f].src;
        // Every destination of a range goes to --dst's next hop (one --dst-mac).
        if (cfg.dst_range.count > 1) ep.dst_ip = flows[f].dst;
        ep.dst_port = flows[f].dst_port;
        if (cfg.dst_mac_range) ep.dst_mac = cfg.dst_mac_range->at(flows[f].mac);
        ep.vlan_tags = static_cast<uint8_t>(cfg.vlan_tci.size());
        std::copy(cfg.vlan_tci.begin(), cfg.vlan_tci.end(), ep.vlan_tci.begin());
        flow.headers_len = static_cast<uint32_t>(net::build_udp_headers(flow.headers, ep, cfg.size));
        net::build_udp_headers(flow.end_headers, ep, end_len);
        for (uint32_t payload : cfg.mix_sizes) {
          flow.mix_headers.emplace_back();
          net::build_udp_headers(flow.mix_headers.back().bytes, ep, payload);
        }
      }
      plan.flows.push_back(flow);
    }
    for (const engine::TxFlow& flow : plan.flows)
      plan.quota += cfg.count / flows.size() + (flow.stream < cfg.count % flows.size() ? 1 : 0);
    // The short form carries 48-bit sequences: a worker stops before any of
    // its streams could wrap (218 days at 14.88 Mpps).
    const uint32_t smallest = cfg.mix_sizes.empty() ? cfg.size : *std::min_element(cfg.mix_sizes.begin(), cfg.mix_sizes.end());
    if (!cfg.replay && wire::is_short_form(smallest - tag) && (plan.quota == 0 || plan.quota >= wire::kShortSeqLimit))
      plan.quota = wire::kShortSeqLimit - 1;
    // A replay without --count or --duration sends the file once.
    if (cfg.replay && !cfg.count && !cfg.duration_ns) plan.quota = cfg.replay->size();
    plan.replay = cfg.replay;
    plan.duration_ns = cfg.duration_ns;
    plan.pace = cfg.rate ? pace::PacePlan::for_rate(cfg.burst, *run.asked_pps * plan.flows.size() / flows.size())
                         : pace::PacePlan::for_delay(cfg.burst, cfg.delay_ns);
    plan.payload = wire::PayloadPlan::make(cfg.size - tag, wire::kHeaderBytes / 8, run.sender_id);
    plan.end_payload = wire::end_marker_plan(cfg.size - tag, run.sender_id);
    for (uint32_t payload : cfg.mix_sizes)
      plan.mix.push_back(wire::PayloadPlan::make(payload - tag, wire::kHeaderBytes / 8, run.sender_id));
    plan.tag_bytes = tag;
    if (cfg.tag_key) plan.tag_key = *cfg.tag_key;
    if (!cfg.mix_sizes.empty()) plan.mix_cycle = engine::size_mix_cycle(cfg.mix_weights);
    plan.end_body.delay_ns = cfg.delay_ns;
    plan.end_body.count = cfg.count;
    plan.end_body.burst = cfg.burst;
    plan.end_body.stream_count = run.streams;
    plan.end_body.data_size = cfg.mix_sizes.empty() ? static_cast<uint16_t>(cfg.size) : 0;  // 0: no one size
    plan.end_body.clock_id = this_clock_id();  // rx compares it with its own: one-way latency or not
    plan.end_markers = cfg.end_markers;
    plan.batch = cfg.batch;
    if (cfg.flows_random_seed) plan.flow_shuffle_seed = *cfg.flows_random_seed + i;  // each worker its own orders
    plan.ipv6 = cfg.ipv6;
    plan.vlan_tags = static_cast<uint8_t>(cfg.vlan_tci.size());
    if (cfg.replay_stamp) {
      engine::stamp_replay(plan, run.sender_id, kMaxFlows);  // parse_options checked the capture
      run.streams = static_cast<uint16_t>(plan.flows.size());
    }
    run.workers.push_back(std::move(w));
  }
  // Frames bind no socket: the replies come back to the kernel, to a socket of the listener's on each source port.
  if (run.replies && desc.frames && desc.kernel_interface) {
    std::set<uint16_t> ports;
    for (size_t f = 0; f < flows.size(); ++f) ports.insert(flows[f].src_port ? flows[f].src_port : static_cast<uint16_t>(40000 + f));
    for (uint16_t port : ports) run.replies->listen_on(drivers::make_address(net::ip_text(path.endpoints.src_ip), port));
  }
  return run;
}

}  // namespace rateline::pktgen
