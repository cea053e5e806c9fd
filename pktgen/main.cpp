// pktgen: setup, workers, live progress and the final report. The per-packet
// loop is engine::run_tx (src/engine/tx_loop.hpp); nothing here runs per packet.
#include <sys/random.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <latch>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>

#include "engine/tx_loop.hpp"
#include "net/frame.hpp"
#include "net/iface.hpp"
#include "pktgen_config.hpp"
#include "registry.hpp"
#include "report/json_lines.hpp"
#include "report/link.hpp"
#include "report/rates.hpp"
#include "topo/topology.hpp"
#include "util/errors.hpp"
#include "util/privileges.hpp"
#include "util/stamp_clock.hpp"
#include "util/stop_signal.hpp"

using namespace rateline;

namespace {

struct Worker {
  engine::TxPlan plan;
  drivers::TxQueueConfig queue_cfg;
  std::unique_ptr<stats::TxSnapshotRing> snapshots = std::make_unique<stats::TxSnapshotRing>(16);
  stats::Snapshot<stats::TxCounters> latest{};
  engine::TxResult result;
  std::string error;
  std::atomic<bool> done{false};  // set once by the worker as it exits; read by the reporter
  int cpu = -1;
  std::thread thread;
  CapabilityDrop caps;  // this thread's, after its setup
#if RATELINE_HAVE_XDP
  drivers::XdpTxProgram* xdp = nullptr;  // --backend xdp: no queue, the kernel runs the loop
#endif
};

double rate_to_pps(const pktgen::Config& cfg, const net::FrameSizes& sizes) {
  const units::Rate& r = *cfg.rate;
  if (r.unit == units::RateUnit::pps) return r.value;
  const uint32_t bytes = cfg.rate_layer == pktgen::RateLayer::l1 ? sizes.l1
                         : cfg.rate_layer == pktgen::RateLayer::l2 ? sizes.l2 : sizes.payload;
  return r.value / (8.0 * bytes);
}

const char* layer_name(pktgen::RateLayer l) {
  return l == pktgen::RateLayer::l1 ? "L1" : l == pktgen::RateLayer::l2 ? "L2" : "payload";
}

std::string local_address_towards(const drivers::SocketAddress& dst) {
  const int fd = ::socket(dst.storage.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  std::string ip;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&dst.storage), dst.len) == 0) {
    sockaddr_storage local{};
    socklen_t l = sizeof local;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &l) == 0) {
      drivers::SocketAddress a;
      a.storage = local;
      a.len = l;
      ip = a.text();
      ip = ip.substr(0, ip.rfind(':'));
      if (!ip.empty() && ip.front() == '[') ip = ip.substr(1, ip.size() - 2);
    }
  }
  ::close(fd);
  return ip;
}

// What a raw (Ethernet-layer) backend needs to build whole frames; why_not
// says why it cannot, for the backend choice to print.
struct RawPath {
  net::Interface iface;
  net::UdpEndpoints endpoints;
  std::string why_not;
};

RawPath resolve_raw_path(const pktgen::Config& cfg, const drivers::SocketAddress& dst, const std::string& local_ip,
                         const std::string& device, const net::FrameSizes& sizes) {
  RawPath r;
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
  const bool v6 = dst.is_v6();
  auto ip_of = [v6](const sockaddr_storage& ss) {
    return v6 ? net::IpAddress::v6(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr)
              : net::IpAddress::v4(reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr);
  };
  r.endpoints.dst_ip = ip_of(dst.storage);
  r.endpoints.src_ip = ip_of(drivers::make_address(local_ip.empty() ? (v6 ? "::" : "0.0.0.0") : local_ip, 0).storage);
  r.endpoints.dst_port = cfg.port;
  r.endpoints.src_mac = r.iface.mac;
  if (device == "lo") {
    // Frames injected on lo take the kernel's input route, where a loopback
    // address is a martian (unless route_localnet): they would all vanish.
    r.why_not = "raw frames on lo never reach a local socket (loopback addresses are martians on input)";
    return r;
  }
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

#if RATELINE_HAVE_DPDK
// A DPDK port's raw path: MACs from the port (or the kernel side it rides
// on), addresses from --dst and --src-ip; anything missing is a setup error.
RawPath resolve_dpdk_path(const pktgen::Config& cfg, const drivers::SocketAddress& dst, const std::string& local_ip,
                          const drivers::DpdkPort& port) {
  RawPath r;
  r.iface.name = port.name();
  r.iface.mac = port.mac();
  r.iface.mtu = port.mtu();
  if (local_ip.empty())
    throw SetupError("--backend dpdk: give --src-ip (the kernel has no route towards " + cfg.dst + " to take one from)");
  auto ip_of = [](const drivers::SocketAddress& a) {
    return a.is_v6() ? net::IpAddress::v6(reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr)
                     : net::IpAddress::v4(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr);
  };
  r.endpoints.dst_ip = ip_of(dst);
  r.endpoints.src_ip = ip_of(drivers::make_address(local_ip, 0));
  r.endpoints.dst_port = cfg.port;
  r.endpoints.src_mac = port.mac();
  std::string why;
  if (!cfg.dst_mac.empty()) r.endpoints.dst_mac = net::parse_mac(cfg.dst_mac);
  else if (auto mac = port.peer_mac(why)) r.endpoints.dst_mac = *mac;
  else throw SetupError(why);
  return r;
}
#endif

// Exit codes (README "Exit codes").
constexpr int kExitVerdict = 3;  // the OS refused packets (sender errors)

// Non-zero and unpredictable: two runs from one address and port differ.
uint16_t draw_sender_id() {
  uint16_t id = 0;
  while (id == 0)
    if (getrandom(&id, sizeof id, 0) != static_cast<ssize_t>(sizeof id)) id = static_cast<uint16_t>(now_ns() ^ getpid());
  return id;
}

template <class Q>
void run_worker(Worker& w, Q& q) {
  w.result = engine::run_tx(q, w.plan, *w.snapshots, stop_flag());
}

}  // namespace

int main(int argc, char** argv) {
  pktgen::Config cfg;
  if (const int rc = pktgen::parse_options(argc, argv, cfg); rc >= 0) return rc;
  install_stop_signals();
  try {
    report::JsonLines json(cfg.json_path);
    const drivers::SocketAddress dst = drivers::make_address(cfg.dst, cfg.port);  // checked by parse_options
    const net::FrameSizes sizes = net::FrameSizes::for_payload(cfg.size, cfg.ipv6);
    // (A DPDK port is no kernel path: DpdkPort checks the port's MTU.)
    if (const uint32_t mtu = cfg.backend == "dpdk" ? 0 : drivers::path_mtu(dst, cfg.device); mtu && sizes.l3 > mtu)
      throw SetupError("--size " + std::to_string(cfg.size) + " does not fit the path MTU " + std::to_string(mtu) +
                       " towards " + cfg.dst + ": at most " + std::to_string(mtu - (sizes.l3 - cfg.size)) +
                       " bytes of UDP payload");
    const std::string local_ip = cfg.src_ip.empty() ? local_address_towards(dst) : cfg.src_ip;
    const std::string device = cfg.device.empty() ? report::device_for_local_address(local_ip) : cfg.device;
    report::LinkInfo link = report::link_info(device);
    RawPath raw = resolve_raw_path(cfg, dst, local_ip, device, sizes);
    const drivers::BackendChoice choice =
        drivers::choose_backend(cfg.backend, drivers::Direction::tx, raw.why_not.empty(), raw.why_not);
    const bool raw_backend = drivers::is_raw(choice.backend);
    // DPDK workers are lcores: always pinned (auto placement unless --cores says where).
    const topo::Placement placement =
        topo::place_workers(cfg.threads, cfg.cores.empty() && choice.backend == drivers::Backend::dpdk ? "auto" : cfg.cores);
#if RATELINE_HAVE_DPDK
    // DPDK: EAL, port, queues and mempools, once, before the workers (drivers/dpdk/);
    // MACs and the link come from the port, not from a kernel interface.
    std::unique_ptr<drivers::DpdkPort> dpdk;
    if (choice.backend == drivers::Backend::dpdk) {
      dpdk = std::make_unique<drivers::DpdkPort>(drivers::DpdkPortConfig{
          "pktgen", cfg.dpdk_args, cfg.device, placement.main_cpu, placement.worker_cpus, true,
          static_cast<uint32_t>(net::headers_len(cfg.ipv6)) + std::max(cfg.size, wire::kEndMarkerMinPayloadBytes),
          cfg.batch,
          dst.is_v6() ? net::IpAddress::v6(reinterpret_cast<const sockaddr_in6*>(&dst.storage)->sin6_addr)
                      : net::IpAddress::v4(reinterpret_cast<const sockaddr_in*>(&dst.storage)->sin_addr)});
      raw = resolve_dpdk_path(cfg, dst, local_ip, *dpdk);
      link = dpdk->link();
    }
#endif

    pace::PacePlan pace = pace::PacePlan::for_delay(cfg.burst, cfg.delay_ns);
    double asked_pps = 0;
    if (cfg.rate) {
      asked_pps = rate_to_pps(cfg, sizes);
      // Each worker carries its share of the rate.
      pace = pace::PacePlan::for_rate(cfg.burst, asked_pps / cfg.threads);
    }

    // This run's sender id: the receiver tells runs from one address apart by it
    // (a restarted pktgen is a new sender, not a storm of duplicates).
    const uint16_t sender_id = draw_sender_id();

    // Flows: one per source port, dealt round-robin to workers; stream id = flow index.
    std::vector<uint16_t> ports;
    if (cfg.src_ports)
      for (uint32_t p = cfg.src_ports->first; p <= cfg.src_ports->last; ++p) ports.push_back(static_cast<uint16_t>(p));
    else
      ports.assign(cfg.threads, 0);
    const auto stream_count = static_cast<uint16_t>(ports.size());
#if RATELINE_HAVE_XDP
    // XDP-native: one generator program shared by the workers (drivers/xdp/).
    std::unique_ptr<drivers::XdpTxProgram> xdp_tx;
    if (choice.backend == drivers::Backend::xdp)
      xdp_tx = std::make_unique<drivers::XdpTxProgram>(
          drivers::XdpTxConfig{raw.iface, cfg.ipv6, cfg.size, stream_count, cfg.batch});
#endif

    std::vector<std::unique_ptr<Worker>> workers;
    for (unsigned i = 0; i < cfg.threads; ++i) {
      auto w = std::make_unique<Worker>();
      w->cpu = placement.worker_cpus[i];
      drivers::UdpTxConfig& udp = w->queue_cfg.udp;
      udp.dst = dst;
      udp.slot_bytes = std::max(cfg.size, wire::kEndMarkerMinPayloadBytes);
      udp.batch = cfg.batch;
      udp.sndbuf_bytes = cfg.sndbuf_bytes;
      udp.device = cfg.device;
      udp.gso = cfg.gso;
      drivers::RawTxConfig& rawq = w->queue_cfg.raw;
      rawq.iface = raw.iface;
      rawq.max_frame_bytes = static_cast<uint32_t>(net::headers_len(cfg.ipv6)) + udp.slot_bytes;
      rawq.batch = cfg.batch;
#if RATELINE_HAVE_AFXDP
      w->queue_cfg.xsk.iface = raw.iface;
      w->queue_cfg.xsk.queue = i;  // one AF_XDP socket per NIC TX queue
      w->queue_cfg.xsk.batch = cfg.batch;
#endif
#if RATELINE_HAVE_DPDK
      if (dpdk) w->queue_cfg.dpdk = dpdk->tx_config(i);
#endif
      engine::TxPlan& plan = w->plan;
      const uint32_t end_len = wire::end_marker_plan(cfg.size).len;
      for (size_t f = i; f < ports.size(); f += cfg.threads) {
        engine::TxFlow flow;
        flow.stream = static_cast<uint16_t>(f);
        flow.queue_flow = static_cast<uint16_t>(udp.src_ports.size());
        udp.src_ports.push_back(ports[f]);
        if (raw_backend) {
          net::UdpEndpoints ep = raw.endpoints;
          // Raw frames bind no socket: an unset source port gets a fixed one per stream.
          ep.src_port = ports[f] ? ports[f] : static_cast<uint16_t>(40000 + f);
          flow.headers_len = static_cast<uint32_t>(net::build_udp_headers(flow.headers, ep, cfg.size));
          net::build_udp_headers(flow.end_headers, ep, end_len);
        }
        plan.flows.push_back(flow);
      }
      plan.quota = cfg.count ? cfg.count / cfg.threads + (i < cfg.count % cfg.threads ? 1 : 0) : 0;
      plan.duration_ns = cfg.duration_ns;
      plan.pace = pace;
      plan.payload = wire::PayloadPlan::make(cfg.size, wire::kHeaderBytes / 8, sender_id);
      plan.end_payload = wire::end_marker_plan(cfg.size, sender_id);
      plan.end_body.delay_ns = cfg.delay_ns;
      plan.end_body.count = cfg.count;
      plan.end_body.burst = cfg.burst;
      plan.end_body.stream_count = stream_count;
      plan.end_body.data_size = static_cast<uint16_t>(cfg.size);
      plan.end_markers = cfg.end_markers;
      plan.batch = cfg.batch;
      plan.ipv6 = cfg.ipv6;
#if RATELINE_HAVE_XDP
      w->xdp = xdp_tx.get();
#endif
      workers.push_back(std::move(w));
    }

    const std::string settings = report::settings_text(cfg.burst, cfg.delay_ns, cfg.count, cfg.size);
    std::printf("pktgen: %s -> %s, %u B payload (%u B L2 frame), backend %s; sender id %u\n", settings.c_str(),
                dst.text().c_str(), cfg.size, sizes.l2, choice.note.c_str(), sender_id);
    std::printf("pktgen: link %s; placement: %s\n", link.text().c_str(), placement.text.c_str());
#if RATELINE_HAVE_DPDK
    if (dpdk) std::printf("pktgen: %s\npktgen: %s\n", dpdk->summary().c_str(), dpdk->eal_note().c_str());
#endif
#if RATELINE_HAVE_XDP
    if (xdp_tx) std::printf("pktgen: %s\n", xdp_tx->note().c_str());
#endif
    bool kernel_stamps = false;
#if RATELINE_HAVE_XDP
    kernel_stamps = xdp_tx != nullptr;
#endif
    const std::string stamps =
        kernel_stamps      ? std::string("bpf_ktime_get_ns() per frame, in the kernel")
        : tsc_stamp_basis() ? std::string("CLOCK_MONOTONIC read at least every 100 us, extended per packet by the TSC (") +
                                  tsc_stamp_basis() + "; RATELINE_TSC_STAMPS=0: clock_gettime per packet)"
                            : std::string("clock_gettime(CLOCK_MONOTONIC) per packet");
    std::printf("pktgen: send stamps: %s\n", stamps.c_str());
    if (cfg.rate)
      std::printf("pktgen: rate asked %s %s = %.0f pps (%.2f Mbit/s payload, %.2f L2, %.2f L1)\n",
                  units::si(cfg.rate->value, 2).c_str(), cfg.rate->unit == units::RateUnit::pps ? "pps" : (std::string("bit/s ") + layer_name(cfg.rate_layer)).c_str(),
                  asked_pps, asked_pps * sizes.payload * 8 / 1e6, asked_pps * sizes.l2 * 8 / 1e6, asked_pps * sizes.l1 * 8 / 1e6);
    std::fflush(stdout);
    json.write({{"type", "start"}, {"tool", "pktgen"}, {"settings", settings}, {"dst", dst.text()},
                {"backend", drivers::backend_name(choice.backend)}, {"backend_note", choice.note},
                {"burst", cfg.burst}, {"delay_ns", cfg.delay_ns}, {"count", cfg.count}, {"size", cfg.size},
                {"threads", cfg.threads}, {"streams", stream_count}, {"sender_id", sender_id}, {"placement", placement.text}, {"stamps", stamps},
                {"rate_pps_asked", cfg.rate ? nlohmann::json(asked_pps) : nlohmann::json(nullptr)}});

    if (placement.main_cpu >= 0) topo::pin_current_thread(placement.main_cpu);
    std::latch ready(static_cast<std::ptrdiff_t>(workers.size()));
    for (auto& wp : workers) {
      Worker& w = *wp;
      w.thread = std::thread([&w, &ready, backend = choice.backend] {
        w.error = topo::pin_current_thread(w.cpu);
        bool counted = false;
        try {
#if RATELINE_HAVE_XDP
          if (w.xdp) {  // the kernel runs the per-packet loop; this thread paces and reads counters
            w.caps = keep_only_capabilities(drivers::capabilities_after_setup(backend));
            ready.count_down();
            counted = true;
            w.result = w.xdp->run(w.plan, *w.snapshots, stop_flag());
            w.done.store(true, std::memory_order_release);
            return;
          }
#endif
          // Built in the worker: io_uring rings are single-issuer, owned by the thread that submits.
          drivers::AnyTxQueue q = drivers::open_tx_queue(backend, w.queue_cfg);
          w.caps = keep_only_capabilities(drivers::capabilities_after_setup(backend));
          ready.count_down();
          counted = true;
          std::visit([&](auto& qp) { run_worker(w, *qp); }, q);
        } catch (const std::exception& e) {
          w.error = e.what();
          if (!counted) ready.count_down();
        }
        w.done.store(true, std::memory_order_release);
      });
    }
    ready.wait();
    report_capabilities("pktgen", keep_only_capabilities(drivers::capabilities_after_setup(choice.backend)), workers);

    // Live progress: the reporter sleeps, workers never wait for it.
    const uint64_t t0 = now_ns();
    uint64_t last_print_ns = t0, last_sent = 0;
    auto all_done = [&] {
      for (auto& w : workers)
        if (!w->done.load(std::memory_order_acquire)) return false;
      return true;
    };
    while (!all_done()) {
      timespec ts{0, 100'000'000};
      nanosleep(&ts, nullptr);
      for (auto& w : workers)
        while (auto s = w->snapshots->try_pop()) w->latest = *s;
      const uint64_t now = now_ns();
      if (!cfg.quiet && now - last_print_ns >= kNsPerSec) {
        uint64_t sent = 0;
        for (auto& w : workers) sent += w->latest.counters.packets;
        const double dt = static_cast<double>(now - last_print_ns) / 1e9;
        const report::Rates r = report::rates_for(sent - last_sent, sizes, dt);
        const auto pct = report::line_rate_percent(r, link.speed_mbps);
        std::string pct_text = pct ? (std::to_string(static_cast<int>(*pct + 0.5)) + "% of " + link.device + (link.nominal ? " (nominal)" : "")) : "line rate n/a";
        std::printf("%7.1fs  sent %-10" PRIu64 " %9s pps  %9.2f Mbit/s payload  %9.2f L2  %9.2f L1  %s\n",
                    static_cast<double>(now - t0) / 1e9, sent, units::si(r.pps).c_str(), r.payload_mbps, r.l2_mbps,
                    r.l1_mbps, pct_text.c_str());
        std::fflush(stdout);
        json.write({{"type", "progress"}, {"tool", "pktgen"}, {"t_s", static_cast<double>(now - t0) / 1e9},
                    {"sent", sent}, {"pps", r.pps}, {"payload_mbps", r.payload_mbps}, {"l2_mbps", r.l2_mbps},
                    {"l1_mbps", r.l1_mbps}});
        last_print_ns = now;
        last_sent = sent;
      }
    }
    for (auto& w : workers) w->thread.join();

    // Final report: from the joined workers' own counters.
    stats::TxCounters total;
    stats::InBurstRate in_burst;
    uint64_t first = ~0ull, last = 0;
    std::string errors;
    bool stalled = false;
    uint32_t stamp_clock_breaks = 0;
    nlohmann::json streams = nlohmann::json::array();
    for (auto& w : workers) {
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
      for (const auto& f : w->result.flows) streams.push_back({{"stream", f.stream}, {"sent", f.next_seq}});
    }
    const double seconds = last > first ? static_cast<double>(last - first) / 1e9 : 0.0;
    const report::Rates r = report::rates_for(total.packets, sizes, seconds);
    const auto pct = report::line_rate_percent(r, link.speed_mbps);
    const bool interrupted = stop_signal_number() != 0;

    std::printf("\n%-22s %10s %12s %20s %12s %12s %12s\n", "Settings(b,t,n,s)", "Time", "Sent", "Speed(Mbit/s data)",
                "pps", "L2 Mbit/s", "L1 Mbit/s");
    std::printf("%-22s %9.3fs %12" PRIu64 " %20.2f %12.0f %12.2f %12.2f\n", settings.c_str(), seconds, total.packets,
                r.payload_mbps, r.pps, r.l2_mbps, r.l1_mbps);
    if (pct) std::printf("line rate: %.1f%% of %s (L1 bits)%s\n", *pct, link.text().c_str(), link.nominal ? ", nominal speed" : "");
    if (cfg.rate) std::printf("rate: asked %.0f pps, achieved %.0f pps (%.1f%%)\n", asked_pps, r.pps, asked_pps > 0 ? r.pps * 100 / asked_pps : 0.0);
    if (in_burst.peak_pps > 0)
      std::printf("in-burst rate: %.0f pps over whole bursts, peak %.0f pps (the fastest burst)\n", in_burst.mean_pps,
                  in_burst.peak_pps);
    if (total.failed)
      std::printf("sender errors: %" PRIu64 " packets refused by the OS (%s); they count as lost at the receiver\n",
                  total.failed, errno_text(total.last_error).c_str());
    std::printf("end markers: %" PRIu64 " sent; backend retries: %" PRIu64 "; pace slips: %" PRIu64 "%s\n",
                total.end_markers, total.retries, total.pace_slips, interrupted ? "; interrupted by signal" : "");
    if (stalled) std::printf("warning: the backend accepted nothing for 2 s: run stopped early (%s)\n", errno_text(total.last_error).c_str());
    if (stamp_clock_breaks)
      std::printf("send stamps: the TSC left CLOCK_MONOTONIC's pace in %u worker(s); from then on their stamps were "
                  "clock_gettime per packet\n", stamp_clock_breaks);
    if (!errors.empty()) std::fprintf(stderr, "pktgen: %s\n", errors.c_str());
#if RATELINE_HAVE_XDP
    if (xdp_tx && !xdp_tx->advice().empty()) std::fprintf(stderr, "pktgen: %s\n", xdp_tx->advice().c_str());
#endif
    std::fflush(stdout);
    nlohmann::json result = {{"type", "result"}, {"tool", "pktgen"}, {"settings", settings}, {"time_s", seconds},
                {"sent", total.packets}, {"payload_bytes", total.payload_bytes}, {"failed", total.failed},
                {"retries", total.retries}, {"end_markers", total.end_markers}, {"pace_slips", total.pace_slips},
                {"pps", r.pps},
                {"in_burst_pps", in_burst.peak_pps > 0 ? nlohmann::json(in_burst.mean_pps) : nlohmann::json(nullptr)},
                {"in_burst_peak_pps", in_burst.peak_pps > 0 ? nlohmann::json(in_burst.peak_pps) : nlohmann::json(nullptr)}, {"payload_mbps", r.payload_mbps}, {"l2_mbps", r.l2_mbps}, {"l1_mbps", r.l1_mbps},
                {"line_rate_pct", pct ? nlohmann::json(*pct) : nlohmann::json(nullptr)}, {"line_rate_basis", "l1"},
                {"link", link.device}, {"link_speed_mbps", link.speed_mbps ? nlohmann::json(*link.speed_mbps) : nlohmann::json(nullptr)},
                {"link_nominal", link.nominal}, {"rate_pps_asked", cfg.rate ? nlohmann::json(asked_pps) : nlohmann::json(nullptr)},
                {"interrupted", interrupted}, {"stalled", stalled}, {"stamp_clock_breaks", stamp_clock_breaks},
                {"errors", errors}, {"streams", streams}, {"sender_id", sender_id}};
#if RATELINE_HAVE_DPDK
    if (dpdk) {
      const drivers::DpdkCounters dc = dpdk->counters();
      std::printf("dpdk: %s\n", drivers::dpdk_counters_text(dc).c_str());
      result["dpdk"] = drivers::dpdk_counters_json(dc, *dpdk);
    }
#endif
    json.write(result);
    // After the report: a full disk costs the JSON, never the numbers on the terminal.
    if (const std::string e = json.finish(); !e.empty()) {
      std::fprintf(stderr, "pktgen: %s\n", e.c_str());
      return 1;
    }
    if (!errors.empty() && total.packets == 0) return 1;
    if (stalled) return 1;
    // Packets the OS refused were counted as sent attempts: a CI job must not read that as a clean run.
    return total.failed ? kExitVerdict : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pktgen: %s\n", e.what());
    return 1;
  }
}
