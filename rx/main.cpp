// rx: setup, workers, live progress, end conditions and the final report.
// The per-packet loop is engine::run_rx (src/engine/rx_loop.hpp).
#include <net/if.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <latch>
#include <memory>
#include <optional>
#include <thread>
#include <variant>

#include "engine/rx_loop.hpp"
#include "ledger/ledger.hpp"
#include "registry.hpp"
#include "net/iface.hpp"
#include "report/json_lines.hpp"
#include "report/link.hpp"
#include "report/rates.hpp"
#include "report/rx_summary.hpp"
#include "run_end.hpp"
#include "rx_config.hpp"
#include "socket/port_guard.hpp"
#include "topo/topology.hpp"
#include "util/errors.hpp"
#include "util/privileges.hpp"
#include "util/stop_signal.hpp"
#include "util/units.hpp"

using namespace rateline;

namespace {

struct Worker {
  engine::RxPlan plan;
  drivers::RxQueueConfig queue_cfg;
  std::unique_ptr<stats::RxSnapshotRing> snapshots = std::make_unique<stats::RxSnapshotRing>(16);
  std::unique_ptr<engine::StreamEventRing> events = std::make_unique<engine::StreamEventRing>(4096);
  stats::Snapshot<stats::RxCounters> latest{};
  engine::RxResult result;
  drivers::RxSocketInfo socket;
  std::string backend_mode;
#if RATELINE_HAVE_XDP
  const drivers::XdpRxProgram* xdp = nullptr;  // --backend xdp: the kernel counts, the worker reads its maps
#endif
  uint64_t buffer_ring_empty = 0;
  std::string error;
  std::atomic<bool> done{false};
  int cpu = -1;
  std::thread thread;
  CapabilityDrop caps;  // this thread's, after its setup
};

// Workers stop on this, not on the signal flag directly: the main thread
// decides when the run is over (signal, end markers, count, idle).
std::atomic<bool> g_workers_stop{false};

// How long nothing must arrive before end markers may end the run: pktgen
// sends its copies milliseconds apart, and a stream still arriving is not over.
constexpr uint64_t kEndQuietNs = 200'000'000;

template <class Q>
void run_worker(Worker& w, Q& q) {
  if constexpr (requires { q.mode(); }) w.backend_mode = q.mode();
  w.result = engine::run_rx(q, w.plan, *w.snapshots, g_workers_stop, [&q] { return q.drops(); });
  if constexpr (requires { q.buffer_ring_empty(); }) w.buffer_ring_empty = q.buffer_ring_empty();
}

}  // namespace

int main(int argc, char** argv) {
  rx::Config cfg;
  if (const int rc = rx::parse_options(argc, argv, cfg); rc >= 0) return rc;
  install_stop_signals();
  if (!cfg.xdp_cleanup.empty()) {
#if RATELINE_HAVE_AFXDP
    std::printf("rx: %s\n", drivers::xdp_detach_all(cfg.xdp_cleanup).c_str());
    return drivers::xdp_attached(static_cast<int>(if_nametoindex(cfg.xdp_cleanup.c_str()))) ? 1 : 0;
#else
    std::fprintf(stderr, "rx: built without AF_XDP support: use `ip link set dev %s xdp off`\n", cfg.xdp_cleanup.c_str());
    return 1;
#endif
  }
  try {
    report::JsonLines json(cfg.json_path);
    const drivers::SocketAddress bind = drivers::make_address(cfg.bind, cfg.port);
    drivers::ensure_port_free(bind);
    // Raw backends tap an interface: --device, or the one that owns --bind.
    const std::string device = !cfg.device.empty() ? cfg.device : report::device_for_local_address(cfg.bind);
    std::string raw_why =
        device.empty() ? "--backend " + cfg.backend + " receives on one interface: give --device IFACE (or --bind an address of it)" : "";
    net::Interface iface;
    if (!device.empty()) {
      try {
        iface = net::interface_info(device);
      } catch (const std::exception& e) {
        raw_why = e.what();
      }
    }
    const drivers::BackendChoice choice = drivers::choose_backend(cfg.backend, drivers::Direction::rx, raw_why.empty(), raw_why);
    // DPDK workers are lcores: always pinned (auto placement unless --cores says where).
    const topo::Placement placement =
        topo::place_workers(cfg.threads, cfg.cores.empty() && choice.backend == drivers::Backend::dpdk ? "auto" : cfg.cores);
#if RATELINE_HAVE_DPDK
    // DPDK: EAL, port (promiscuous, RSS over one RX queue per worker) and mempools, once (drivers/dpdk/).
    std::unique_ptr<drivers::DpdkPort> dpdk;
    if (choice.backend == drivers::Backend::dpdk) {
      dpdk = std::make_unique<drivers::DpdkPort>(drivers::DpdkPortConfig{
          "rx", cfg.dpdk_args, cfg.device, placement.main_cpu, placement.worker_cpus, false, 0, cfg.batch, std::nullopt});
      iface.name = dpdk->name();
    }
    // A PMD on a kernel interface (net_af_packet) leaves the stack a copy of each frame: hold the port (port_guard.hpp).
    std::optional<drivers::PortGuard> dpdk_guard;
    if (dpdk && !dpdk->kernel_iface().empty() && dpdk->driver() == "net_af_packet") dpdk_guard.emplace(cfg.port, cfg.ipv6);
#endif

#if RATELINE_HAVE_AFXDP
    // AF_XDP: our steering program on the interface, for as long as rx runs
    // (a bpf_link: the kernel detaches it when we exit, however we exit).
    std::unique_ptr<drivers::XdpSteerProgram> steer;
    if (choice.backend == drivers::Backend::afxdp) steer = std::make_unique<drivers::XdpSteerProgram>(iface.index, iface.name, cfg.port);
#endif
#if RATELINE_HAVE_XDP
    // XDP-native: our counting program on the interface for as long as rx runs (a bpf_link too).
    std::unique_ptr<drivers::XdpRxProgram> xdp_rx;
    if (choice.backend == drivers::Backend::xdp)
      xdp_rx = std::make_unique<drivers::XdpRxProgram>(drivers::XdpRxConfig{iface, cfg.port, cfg.max_streams, cfg.layers});
#endif
    // --layers: XDP counts and passes on, the socket path counts again. Without
    // it the kernel counts alone and one thread reads its maps.
    const drivers::Backend worker_backend = cfg.layers ? drivers::Backend::socket : choice.backend;
    const unsigned worker_count = worker_backend == drivers::Backend::xdp ? 1 : cfg.threads;
    std::vector<std::unique_ptr<Worker>> workers;
    for (unsigned i = 0; i < worker_count; ++i) {
      auto w = std::make_unique<Worker>();
      w->cpu = placement.worker_cpus[i];
      drivers::UdpRxConfig& udp = w->queue_cfg.udp;
      udp.bind = bind;
      udp.slot_bytes = cfg.max_size + 1;  // one spare byte: a longer datagram shows up as truncated
      udp.batch = cfg.batch;
      udp.rcvbuf_bytes = cfg.rcvbuf_bytes;
      udp.reuseport = true;
      udp.device = cfg.device;
      drivers::RawRxConfig& raw = w->queue_cfg.raw;
      raw.iface = iface;
      raw.batch = cfg.batch;
      raw.fanout_group = static_cast<int>(getpid() & 0xffff) | 1;
      raw.guard_port = cfg.port;
      raw.ipv6 = cfg.ipv6;
#if RATELINE_HAVE_AFXDP
      w->queue_cfg.xsk.iface = iface;
      w->queue_cfg.xsk.queue = i;  // one AF_XDP socket per NIC RX queue
      w->queue_cfg.xsk.batch = cfg.batch;
      w->queue_cfg.xsk.xsk_map_fd = steer ? steer->xsk_map_fd() : -1;
#endif
#if RATELINE_HAVE_DPDK
      if (dpdk) w->queue_cfg.dpdk = dpdk->rx_config(i, cfg.batch);
#endif
      w->plan.batch = cfg.batch;
      w->plan.max_streams = cfg.max_streams;
      w->plan.events = w->events.get();
      w->plan.udp_port = cfg.port;
      w->plan.test_slow_ns = uint64_t{cfg.test_slow_us} * 1000;
#if RATELINE_HAVE_XDP
      if (worker_backend == drivers::Backend::xdp) w->xdp = xdp_rx.get();
#endif
      workers.push_back(std::move(w));
    }

    if (placement.main_cpu >= 0) topo::pin_current_thread(placement.main_cpu);
    std::latch ready(static_cast<std::ptrdiff_t>(workers.size()));
    for (auto& wp : workers) {
      Worker& w = *wp;
      w.thread = std::thread([&w, &ready, backend = worker_backend] {
        w.error = topo::pin_current_thread(w.cpu);
        bool counted = false;
        try {
#if RATELINE_HAVE_XDP
          if (w.xdp) {
            w.caps = keep_only_capabilities(drivers::capabilities_after_setup(backend));
            ready.count_down();
            counted = true;
            w.backend_mode = w.xdp->mode();
            w.result = w.xdp->run(w.plan, *w.snapshots, g_workers_stop);
            w.done.store(true, std::memory_order_release);
            return;
          }
#endif
          drivers::AnyRxQueue q = drivers::open_rx_queue(backend, w.queue_cfg);
          std::visit([&](auto& qp) {
            if constexpr (requires { qp->info(); }) w.socket = qp->info();
          }, q);
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
    std::string errors;
    for (auto& w : workers)
      if (w->done.load(std::memory_order_acquire) && !w->error.empty()) errors = w->error;
    if (!errors.empty()) {
      g_workers_stop.store(true);
      for (auto& w : workers) w->thread.join();
      throw SetupError(errors);
    }

    // Drop ledger: this namespace's counters now (before "listening" is printed) and at the end.
    const ledger::Scope ledger_scope = ledger::receiver_scope(device);
    const ledger::Counters ledger_start = ledger::read_counters(ledger_scope);
    const CapabilityDrop main_caps = keep_only_capabilities(drivers::capabilities_after_setup(choice.backend));
    const drivers::RxSocketInfo& sock = workers.front()->socket;
    std::printf("rx: listening on %s%s, backend %s, %u worker(s); placement: %s\n", bind.text().c_str(),
                drivers::is_raw(choice.backend) ? (" (tapping " + iface.name + ")").c_str() : "",
                choice.note.c_str(), cfg.threads, placement.text.c_str());
#if RATELINE_HAVE_XDP
    if (xdp_rx && cfg.layers)
      std::printf("rx: layers: XDP program (%s) on %s counts our frames and passes them on; the sockets count them again\n",
                  xdp_rx->mode().c_str(), iface.name.c_str());
#endif
#if RATELINE_HAVE_AFXDP
    if (steer)
      std::printf("rx: receive buffer: AF_XDP UMEM of %u x %u B frames per worker; XDP steering program %s on %s\n",
                  workers.front()->queue_cfg.xsk.frames, workers.front()->queue_cfg.xsk.frame_bytes, steer->mode().c_str(),
                  iface.name.c_str());
    else
#endif
#if RATELINE_HAVE_DPDK
    if (dpdk)
      std::printf("rx: receive buffer: %s\nrx: %s\n", dpdk->summary().c_str(), dpdk->eal_note().c_str());
    else
#endif
#if RATELINE_HAVE_XDP
    if (xdp_rx && !cfg.layers)
      std::printf("rx: receive buffer: none: XDP program (%s) on %s counts our frames in the driver and drops them\n",
                  xdp_rx->mode().c_str(), iface.name.c_str());
    else
#endif
    if (drivers::is_raw(worker_backend))
      std::printf("rx: receive buffer: AF_PACKET ring of %u x %u KiB blocks per worker\n", workers.front()->queue_cfg.raw.blocks,
                  workers.front()->queue_cfg.raw.block_bytes / 1024);
    else
    std::printf("rx: receive buffer %d bytes%s\n", sock.rcvbuf_bytes,
                cfg.rcvbuf_bytes == 0 ? " (kernel default)"
                : sock.rcvbuf_forced ? " (SO_RCVBUFFORCE)"
                                     : " (SO_RCVBUF, capped by net.core.rmem_max: run as root to force)");
    std::printf("rx: stream state: at most %u sender x stream pairs per worker, %" PRIu64
                " MiB for all workers at most, taken as streams appear\n",
                cfg.max_streams, (cfg.stream_state_bytes + (1 << 20) - 1) >> 20);
    report_capabilities("rx", main_caps, workers);
    std::fflush(stdout);
    json.write({{"type", "start"}, {"tool", "rx"}, {"bind", bind.text()},
                {"backend", drivers::backend_name(choice.backend)}, {"backend_note", choice.note},
                {"threads", cfg.threads}, {"rcvbuf_bytes", sock.rcvbuf_bytes}, {"rcvbuf_forced", sock.rcvbuf_forced},
                {"placement", placement.text}, {"expect", cfg.expect}});

    const uint64_t t0 = now_ns();
    uint64_t last_print_ns = t0, last_data = 0;
    uint64_t layers_app_data = ~0ull, layers_quiet_since = 0;  // --layers: when the sockets last took a packet
    std::string end_reason = "signal";
    rx::RunEnd run_end;
    for (;;) {
      timespec ts{0, 50'000'000};
      nanosleep(&ts, nullptr);
      for (auto& w : workers) {
        while (auto s = w->snapshots->try_pop()) w->latest = *s;
        while (auto e = w->events->try_pop()) run_end.add(*e);
      }
      stats::RxCounters sum;
      bool any_done = false;
      for (auto& w : workers) {
        const stats::RxCounters& c = w->latest.counters;
        sum.data += c.data;
        sum.lost_so_far += c.lost_so_far;
        sum.streams_seen += c.streams_seen;
        sum.streams_ended += c.streams_ended;
        sum.stream_count = std::max(sum.stream_count, c.stream_count);
        sum.corrupt += c.corrupt;
        sum.backend_drops += c.backend_drops;
        sum.last_ns = std::max(sum.last_ns, c.last_ns);
        sum.end_markers += c.end_markers;
        sum.events_lost += c.events_lost;
        any_done |= w->done.load(std::memory_order_acquire);
      }
      const uint64_t now = now_ns();
      if (stop_flag().load()) { end_reason = "signal"; break; }
      if (any_done) { end_reason = "worker error"; break; }
#if RATELINE_HAVE_XDP
      if (xdp_rx && cfg.layers) {
        // The driver layer saw every end marker: once the sockets have drained
        // (nothing new for 200 ms) the run is over, even if theirs were dropped.
        const stats::RxCounters d = xdp_rx->read(false).counters;
        if (sum.data != layers_app_data) {
          layers_app_data = sum.data;
          layers_quiet_since = now;
        }
        if (d.stream_count && d.streams_ended >= d.stream_count && d.streams_ended >= d.streams_seen &&
            now - layers_quiet_since > 200 * kNsPerMs) {
          end_reason = "end markers (driver layer)";
          break;
        }
      }
#endif
      // End markers are evidence: they end the run once every sender's
      // streams have believed ones and nothing has arrived for a moment.
      // (The in-kernel counter and an overflowed event ring leave only the
      // totals to go by.)
      const bool quiet = sum.last_ns == 0 || (now > sum.last_ns && now - sum.last_ns >= kEndQuietNs);
      const bool by_totals = worker_backend == drivers::Backend::xdp || sum.events_lost;
      const bool markers_done =
          by_totals ? sum.stream_count && sum.streams_ended >= sum.stream_count && sum.streams_ended >= sum.streams_seen
                    : run_end.all_ended(cfg.expect_senders);
      if (markers_done && quiet) {
        end_reason = "end markers";
        break;
      }
      if (cfg.expect && sum.data >= cfg.expect) { end_reason = "count reached"; break; }
      // Idle counts only once something arrived: rx may be started long before the sender.
      if (cfg.idle_ns && sum.last_ns && now > sum.last_ns && now - sum.last_ns > cfg.idle_ns) {
        end_reason = "idle timeout";
        break;
      }
      if (cfg.duration_ns && now - t0 >= cfg.duration_ns) { end_reason = "duration"; break; }
      if (!cfg.quiet && now - last_print_ns >= kNsPerSec) {
        const double dt = static_cast<double>(now - last_print_ns) / 1e9;
        std::printf("%7.1fs  received %-10" PRIu64 " %9s pps  lost %-8" PRIu64 " corrupt %-6" PRIu64
                    " socket drops %-8" PRIu64 " streams %" PRIu64 "/%" PRIu64 " ended\n",
                    static_cast<double>(now - t0) / 1e9, sum.data,
                    units::si(static_cast<double>(sum.data - last_data) / dt).c_str(), sum.lost_so_far, sum.corrupt,
                    sum.backend_drops, sum.streams_ended, sum.streams_seen);
        std::fflush(stdout);
        json.write({{"type", "progress"}, {"tool", "rx"}, {"t_s", static_cast<double>(now - t0) / 1e9},
                    {"received", sum.data}, {"pps", static_cast<double>(sum.data - last_data) / dt},
                    {"lost_so_far", sum.lost_so_far}, {"corrupt", sum.corrupt}, {"socket_drops", sum.backend_drops}});
        last_print_ns = now;
        last_data = sum.data;
      }
    }
    g_workers_stop.store(true, std::memory_order_relaxed);
    for (auto& w : workers) w->thread.join();

    std::vector<engine::RxResult> results;
    uint64_t ring_empty = 0;
    for (auto& w : workers) {
      if (!w->error.empty()) errors += (errors.empty() ? "" : "; ") + w->error;
      results.push_back(std::move(w->result));
      ring_empty += w->buffer_ring_empty;
    }
#if RATELINE_HAVE_XDP
    engine::RxResult driver_layer;
    if (xdp_rx && cfg.layers) {
      driver_layer = xdp_rx->read(true);
      drivers::lend_end_markers(driver_layer, results);
    }
#endif
    const report::RxSummary summary = report::summarize(results, cfg.expect);
    std::printf("\n%s", report::format_table(summary, cfg.ipv6).c_str());
    std::printf("ended by: %s%s\n", end_reason.c_str(),
                choice.backend == drivers::Backend::uring
                    ? (", io_uring buffer ring ran dry " + std::to_string(ring_empty) + " times").c_str()
                    : "");
    ledger::Path drop_path;
    drop_path.missing = summary.lost;
    drop_path.sent = summary.unique + summary.lost;
    drop_path.received = summary.unique;
    drop_path.corrupt = summary.totals.corrupt;
    drop_path.socket_drops = summary.totals.backend_drops;
    drop_path.raw_receiver = drivers::is_raw(worker_backend);
    drop_path.receiver_backend = drivers::backend_name(choice.backend);
    drop_path.receiver = ledger::delta(ledger_start, ledger::read_counters(ledger_scope));
    const ledger::Ledger drops = ledger::reconcile(drop_path);
    std::printf("%s", ledger::format(drops).c_str());
#if RATELINE_HAVE_XDP
    const report::RxSummary driver_summary = report::summarize({driver_layer}, cfg.expect);
    if (xdp_rx && cfg.layers) std::printf("%s", drivers::layers_table(driver_summary, summary, iface.name).c_str());
#endif
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
    record["ended_by"] = end_reason;
    record["interrupted"] = stop_signal_number() != 0;
    record["backend"] = drivers::backend_name(choice.backend);
    record["buffer_ring_empty"] = ring_empty;
    record["rcvbuf_bytes"] = sock.rcvbuf_bytes;
    record["errors"] = errors;
#if RATELINE_HAVE_XDP
    if (xdp_rx && cfg.layers) record["layers"] = drivers::layers_json(driver_summary, summary, cfg.ipv6);
#endif
#if RATELINE_HAVE_DPDK
    if (dpdk) {  // the port's own counters next to ours (imissed + rx_nombuf are the socket_drops column)
      const drivers::DpdkCounters dc = dpdk->counters();
      std::printf("dpdk: %s\n", drivers::dpdk_counters_text(dc).c_str());
      std::fflush(stdout);
      record["dpdk"] = drivers::dpdk_counters_json(dc, *dpdk);
    }
#endif
    json.write(record);
    // After the report: a full disk costs the JSON, never the numbers on the terminal.
    if (const std::string e = json.finish(); !e.empty()) {
      std::fprintf(stderr, "rx: %s\n", e.c_str());
      return 1;
    }
    if (!errors.empty()) return 1;
    return verdict_failed.empty() ? 0 : rx::kExitVerdict;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rx: %s\n", e.what());
    return 1;
  }
}
