// The AF_XDP backend: UMEM frames, one socket per NIC queue. rx attaches
// our steering program (xdp_steer.bpf.c) that redirects only our frames to
// the sockets; everything else goes on to the stack.
#include <net/if.h>

#include "rateline_config.h"

#include "backend.hpp"
#include "util/privileges.hpp"
#if RATELINE_HAVE_AFXDP
#include "afxdp/afxdp_queues.hpp"
#include "afxdp/xdp_program.hpp"
#include "queue_backend.hpp"
#include "socket/port_guard.hpp"
#endif

namespace rateline::drivers {

#if RATELINE_HAVE_AFXDP
namespace {

XskConfig xsk_config(const net::Interface& iface, unsigned queue, uint32_t batch) {
  XskConfig c;
  c.iface = iface;
  c.queue = queue;  // one AF_XDP socket per NIC queue
  c.batch = batch;
  return c;
}

// The steering program lives as long as this object, which outlives the workers.
class AfXdpRx : public QueueRxBackend<AfXdpRxQueue, XskConfig> {
 public:
  explicit AfXdpRx(const RxOptions& o)
      : QueueRxBackend([this](unsigned i) { return config(i); }),
        steer_(o.iface.index, o.iface.name, o.port, o.port_count),
        guard_(o.port, o.ipv6, o.port_count),
        iface_(o.iface),
        batch_(o.batch),
        reflect_(o.reflect_every != 0) {}
  std::vector<std::string> buffer_lines(const RxWorkerInfo&) const override {
    const XskConfig c = config(0);
    return {"receive buffer: AF_XDP UMEM of " + std::to_string(c.frames) + " x " + std::to_string(c.frame_bytes) +
            " B frames per worker; XDP steering program " + steer_.mode() + " on " + iface_.name};
  }
  // The fragments the steering program passed on never reached a worker.
  void finish(std::vector<engine::RxResult>& results) override {
    if (!results.empty()) results.front().counters.fragments += steer_.fragments();
  }

 private:
  XskConfig config(unsigned i) const {
    XskConfig c = xsk_config(iface_, i, batch_);
    c.xsk_map_fd = steer_.xsk_map_fd();
    c.reflect = reflect_;
    return c;
  }
  XdpSteerProgram steer_;
  // What the steering program passes on (fragments, frames on a queue with
  // no socket) reaches the stack: hold the port (socket/port_guard.hpp).
  PortGuard guard_;
  net::Interface iface_;
  uint32_t batch_;
  bool reflect_;
};

}  // namespace
#endif

extern const BackendDescriptor afxdp_backend = {
    .name = "afxdp",
    .detail_tx = nullptr,
    .detail_rx = nullptr,
    .frames = true,
    .kernel_interface = true,
    .pins_workers = false,
    .auto_tx = 0,
    .auto_rx = 0,
    .auto_skip = nullptr,
    .fallback = nullptr,
#if RATELINE_HAVE_AFXDP
    // Whether AF_XDP works is only known once the socket binds: the queue says why if not.
    .why_not = [] { return std::string(); },
    .capabilities = bpf_user_capabilities,
    .open_tx = [](const TxOptions& o) -> std::unique_ptr<TxBackend> {
      return std::make_unique<QueueTxBackend<AfXdpTxQueue, XskConfig>>(
          [iface = o.kernel_path.iface, batch = o.batch](const TxWorker& w) { return xsk_config(iface, w.index, batch); });
    },
    .open_rx = [](const RxOptions& o) -> std::unique_ptr<RxBackend> { return std::make_unique<AfXdpRx>(o); },
    .cleanup = [](const std::string& iface, bool& ok) {
      const std::string said = xdp_detach_all(iface);
      ok = !xdp_attached(static_cast<int>(if_nametoindex(iface.c_str())));
      return said;
    },
#else
    .why_not = [] { return std::string("built without libxdp/libbpf (AF_XDP)"); },
    .capabilities = bpf_user_capabilities,
    .open_tx = nullptr,
    .open_rx = nullptr,
    .cleanup = nullptr,
#endif
    .replays = true,
    .rx_reflects = true,
    .tx_rtt = true,
};

}  // namespace rateline::drivers
