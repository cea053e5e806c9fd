// The XDP-native backend: the kernel runs the per-packet loop. pktgen's
// workers drive BPF_PROG_RUN live frames (xdp_tx.hpp); rx's counting
// program (xdp_rx.hpp) counts in the driver and one worker reads its maps,
// or, with --layers, passes our frames on to socket workers that count them again.
#include "rateline_config.h"

#include "backend.hpp"
#include "socket/port_guard.hpp"
#include "util/privileges.hpp"
#if RATELINE_HAVE_XDP
#include "queue_backend.hpp"
#include "report/layers.hpp"
#include "socket/socket_backend.hpp"
#include "socket/socket_queues.hpp"
#include "util/clock.hpp"
#include "xdp/xdp_rx.hpp"
#include "xdp/xdp_shared.h"
#include "xdp/xdp_tx.hpp"
#endif

namespace rateline::drivers {

#if RATELINE_HAVE_XDP
namespace {

class XdpTx : public TxBackend {
 public:
  explicit XdpTx(const TxOptions& o)
      : program_(XdpTxConfig{o.kernel_path.iface, o.ipv6, o.payload_bytes, o.streams, o.batch, o.kernel_path.endpoints}) {}
  std::vector<std::string> start_lines() const override { return {program_.note()}; }
  std::optional<std::string> stamp_source() const override {
    return std::string("bpf_ktime_get_ns() in the kernel, once per ") + std::to_string(RL_STAMP_EVERY) +
           " frames of a call, shared by them";
  }
  // The kernel runs the per-packet loop; this thread paces and reads counters.
  engine::TxResult run(const TxWorker&, const engine::TxPlan& plan, stats::TxSnapshotRing& snapshots,
                       const std::atomic<bool>& stop, const std::function<void()>& ready) override {
    ready();
    return program_.run(plan, snapshots, stop);
  }
  std::string advice() const override { return program_.advice(); }

 private:
  XdpTxProgram program_;
};

class XdpRx : public RxBackend {
 public:
  explicit XdpRx(const RxOptions& o)
      : program_(XdpRxConfig{o.iface, o.port, o.port_count, o.max_streams, o.layers, o.slot_bytes - 1, o.reflect_every}),
        sockets_([cfg = udp_rx_config(o)](unsigned) { return cfg; }),
        o_(o) {
    // Without --layers no socket of ours holds the port, and what the program
    // passes on (fragments) reaches the stack: hold it (socket/port_guard.hpp).
    if (!o.layers) guard_ = PortGuard(o.port, o.ipv6, o.port_count);
  }

  unsigned workers(unsigned threads) const override { return o_.layers ? threads : 1; }
  bool workers_see_frames() const override { return !o_.layers; }
  std::vector<std::string> buffer_lines(const RxWorkerInfo& first) const override {
    if (!o_.layers && o_.reflect_every)
      return {"receive buffer: none: XDP program (" + program_.mode() + ") on " + o_.iface.name +
                  " counts our frames in the driver and returns the ones it reflects by XDP_TX",
              "reflect: the driver's failed XDP_TX are counted (its xdp tracepoints); a veth delivers replies only "
              "to a peer that runs an XDP program of its own"};
    if (!o_.layers)
      return {"receive buffer: none: XDP program (" + program_.mode() + ") on " + o_.iface.name +
              " counts our frames in the driver and drops them"};
    return {"layers: XDP program (" + program_.mode() + ") on " + o_.iface.name +
                " counts our frames and passes them on; the sockets count them again",
            rcvbuf_line(first.socket, o_.rcvbuf_bytes)};
  }
  const char* receive_stamps() const override {
    // --layers: the table's latency is the sockets' (the XDP layer's is in its own lines).
    static_assert(RL_TIME_EVERY == 16, "the text below names it");
    return o_.layers ? "the kernel's, per datagram (SO_TIMESTAMPNS)"
                     : "the XDP program's (bpf_ktime_get_ns) for sequences that are multiples of 16: latency and "
                       "jitter from those; every packet counted and checked";
  }
  // Without --layers no worker sees a stream: the maps' totals decide.
  bool ends_by_totals() const override { return !o_.layers; }
  // --layers: the driver layer saw every end marker; once the sockets have
  // drained (nothing new for 200 ms) the run is over, even if theirs were dropped.
  std::optional<std::string> end_now(uint64_t app_data, uint64_t now) override {
    if (!o_.layers) return std::nullopt;
    const stats::RxCounters d = program_.read(false).counters;
    if (app_data != app_data_) {
      app_data_ = app_data;
      quiet_since_ = now;
    }
    if (d.stream_count && d.streams_ended >= d.stream_count && d.streams_ended >= d.streams_seen &&
        now - quiet_since_ > 200 * kNsPerMs)
      return std::string("end markers (driver layer)");
    return std::nullopt;
  }
  engine::RxResult run(unsigned index, const engine::RxPlan& plan, stats::RxSnapshotRing& snapshots,
                       const std::atomic<bool>& stop, RxWorkerInfo& info,
                       const std::function<void()>& ready) override {
    if (o_.layers) return sockets_.run(index, plan, snapshots, stop, info, ready);
    info.mode = program_.mode();
    ready();
    return program_.run(plan, snapshots, stop);
  }
  void finish(std::vector<engine::RxResult>& results) override {
    if (!o_.layers) return;
    driver_layer_ = program_.read(true);
    lend_end_markers(driver_layer_, results);
  }
  std::string end_text(const report::RxSummary& app) const override {
    return o_.layers ? report::layers_table(report::summarize({driver_layer_}, o_.expect), app, o_.iface.name) : "";
  }
  void add_to_result(nlohmann::json& r, const report::RxSummary& app) const override {
    if (o_.layers) r["layers"] = report::layers_json(report::summarize({driver_layer_}, o_.expect), app, o_.ipv6);
  }

 private:
  // --layers' socket workers: the socket backend's, unchanged.
  class Sockets : public QueueRxBackend<SocketRxQueue, UdpRxConfig> {
   public:
    using QueueRxBackend::QueueRxBackend;
    std::vector<std::string> buffer_lines(const RxWorkerInfo&) const override { return {}; }
  };
  XdpRxProgram program_;
  Sockets sockets_;
  RxOptions o_;
  PortGuard guard_;
  engine::RxResult driver_layer_;
  uint64_t app_data_ = ~0ull, quiet_since_ = 0;
};

}  // namespace
#endif

extern const BackendDescriptor xdp_backend = {
    .name = "xdp",
    .detail_tx = "in-kernel generation",
    .detail_rx = "in-kernel counting",
    .frames = true,
    .kernel_interface = true,
    .pins_workers = false,
    .auto_tx = 0,
    .auto_rx = 0,
    .auto_skip = nullptr,
    .fallback = nullptr,
#if RATELINE_HAVE_XDP
    // Whether the kernel and driver can do it is only known once the program loads: it says why if not.
    .why_not = [] { return std::string(); },
    .capabilities = bpf_user_capabilities,
    .open_tx = [](const TxOptions& o) -> std::unique_ptr<TxBackend> { return std::make_unique<XdpTx>(o); },
    .open_rx = [](const RxOptions& o) -> std::unique_ptr<RxBackend> { return std::make_unique<XdpRx>(o); },
#else
    .why_not = [] { return std::string("built without libbpf/clang (XDP)"); },
    .capabilities = bpf_user_capabilities,
    .open_tx = nullptr,
    .open_rx = nullptr,
#endif
    .cleanup = nullptr,
    .tx_needs_peer_napi = true,
    .rx_one_reader = true,
    .rx_layers = true,
    .rx_drops_in_xdp = true,
    .rx_in_kernel = true,
    .rx_reflects = true,  // XDP_TX, in place, in the driver
    .tx_rtt = true,  // its frames' replies come back to the kernel, to a socket on each source port
    .packet_tags = false,  // BPF writes and counts its packets: no libsodium there
};

}  // namespace rateline::drivers
