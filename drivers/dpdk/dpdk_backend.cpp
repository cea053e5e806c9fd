// The DPDK backend: a port taken from the kernel (or a vdev riding on one),
// set up once per run (dpdk_port.hpp), one queue per worker. auto never
// picks it: it needs a port of its own.
#include "rateline_config.h"

#include "backend.hpp"
#if RATELINE_HAVE_DPDK
#include <algorithm>

#include "dpdk/dpdk_port.hpp"
#include "dpdk/dpdk_queues.hpp"
#include "dpdk/dpdk_reply_port.hpp"
#include "queue_backend.hpp"
#include "socket/port_guard.hpp"
#include "util/errors.hpp"
#endif

namespace rateline::drivers {

#if RATELINE_HAVE_DPDK
namespace {

class DpdkTx : public QueueTxBackend<DpdkTxQueue, DpdkTxConfig> {
 public:
  explicit DpdkTx(const TxOptions& o)
      : QueueTxBackend([this](const TxWorker& w) { return port_.tx_config(w.index); }),
        port_(DpdkPortConfig{"pktgen", o.eal_args, o.device, o.placement.main_cpu, o.placement.worker_cpus, true,
                             static_cast<uint32_t>(net::headers_len(o.ipv6, o.vlan_tags)) + o.slot_bytes, o.batch, o.dst.ip()}) {
    // --rtt: the replies land on the port's RX queues, one per worker.
    if (o.replies)
      o.replies->adopt_port(std::make_unique<DpdkReplyPort>(port_.id(), static_cast<uint16_t>(o.placement.worker_cpus.size())));
  }

  // MACs from the port (or the kernel side it rides on), addresses from --dst and --src-ip.
  FramePath frame_path(const TxOptions& o) const override {
    FramePath r;
    r.iface.name = port_.name();
    r.iface.mac = port_.mac();
    r.iface.mtu = port_.mtu();
    if (o.local_ip.empty())
      throw SetupError("--backend dpdk: give --src-ip (the kernel has no route towards " + o.dst.text() +
                       " to take one from)");
    r.endpoints.dst_ip = o.dst.ip();
    r.endpoints.src_ip = make_address(o.local_ip, 0).ip();
    r.endpoints.dst_port = o.dst.port();
    r.endpoints.src_mac = port_.mac();
    std::string why;
    if (!o.dst_mac.empty()) r.endpoints.dst_mac = net::parse_mac(o.dst_mac);
    else if (auto mac = port_.peer_mac(why)) r.endpoints.dst_mac = *mac;
    else throw SetupError(why);
    return r;
  }
  std::optional<report::LinkInfo> link() const override { return port_.link(); }
  std::vector<std::string> start_lines() const override { return {port_.summary(), port_.eal_note()}; }
  std::vector<std::string> end_lines() const override { return {"dpdk: " + report::port_counters_text(port_.counters())}; }
  void add_to_result(nlohmann::json& r) const override { r["dpdk"] = report::port_counters_json(port_.counters(), port_.identity()); }

 private:
  DpdkPort port_;
};

class DpdkRx : public QueueRxBackend<DpdkRxQueue, DpdkRxConfig> {
 public:
  explicit DpdkRx(const RxOptions& o)
      : QueueRxBackend([this](unsigned i) { return port_.rx_config(i, batch_); }),
        port_(DpdkPortConfig{"rx", o.eal_args, o.device, o.placement.main_cpu, o.placement.worker_cpus, false, 0,
                             o.batch, std::nullopt}),
        batch_(o.batch) {
    // A PMD on a kernel interface (net_af_packet) leaves the stack a copy of each frame: hold the port (port_guard.hpp).
    if (!port_.kernel_iface().empty() && port_.driver() == "net_af_packet") guard_ = PortGuard(o.port, o.ipv6, o.port_count);
  }
  std::string tapped(const std::string&) const override { return port_.name(); }
  std::vector<std::string> buffer_lines(const RxWorkerInfo&) const override {
    return {"receive buffer: " + port_.summary(), port_.eal_note()};
  }
  // The port's own counters next to ours (imissed + rx_nombuf are the socket_drops column).
  std::string end_text(const report::RxSummary&) const override {
    return "dpdk: " + report::port_counters_text(port_.counters()) + "\n";
  }
  void add_to_result(nlohmann::json& r, const report::RxSummary&) const override {
    r["dpdk"] = report::port_counters_json(port_.counters(), port_.identity());
  }

 private:
  DpdkPort port_;
  uint32_t batch_;
  PortGuard guard_;
};

}  // namespace
#endif

extern const BackendDescriptor dpdk_backend = {
    .name = "dpdk",
    .detail_tx = nullptr,
    .detail_rx = nullptr,
    .frames = true,
    .kernel_interface = false,
    .pins_workers = true,  // workers are lcores
    .auto_tx = 0,
    .auto_rx = 0,
#if RATELINE_HAVE_DPDK
    .auto_skip = "it needs a dedicated port: ask for it with --backend dpdk",
    .fallback = nullptr,
    // The port, not the kernel, decides: DpdkPort says why if it cannot work.
    .why_not = [] { return std::string(); },
#else
    .auto_skip = "built without DPDK",
    .fallback = nullptr,
    .why_not = [] { return std::string("built without DPDK (install libdpdk-dev and configure with -Ddpdk=enabled)"); },
#endif
#if RATELINE_HAVE_DPDK
    .capabilities = dpdk_running_capabilities,
#else
    .capabilities = [] { return std::vector<int>{}; },
#endif
#if RATELINE_HAVE_DPDK
    .open_tx = [](const TxOptions& o) -> std::unique_ptr<TxBackend> { return std::make_unique<DpdkTx>(o); },
    .open_rx = [](const RxOptions& o) -> std::unique_ptr<RxBackend> { return std::make_unique<DpdkRx>(o); },
#else
    .open_tx = nullptr,
    .open_rx = nullptr,
#endif
    .cleanup = nullptr,
    .eal_args = true,
    .replays = true,  // an mbuf takes any frame up to its data room
    .rx_reflects = true,  // a reply leaves in the mbuf it came in, on the worker's TX queue
    .tx_rtt = true,       // the replies land on the port's RX queues, which the listener polls (dpdk_reply_port.hpp)
};

}  // namespace rateline::drivers
