// The plain-socket backend (sendmmsg/recvmmsg): works wherever UDP does,
// unprivileged, on any kernel; the embedded default's last resort.
#include "socket/socket_backend.hpp"

#include "backend.hpp"
#include "queue_backend.hpp"
#include "socket/socket_queues.hpp"

namespace rateline::drivers {

UdpTxConfig udp_tx_config(const TxOptions& o, const TxWorker& w) {
  UdpTxConfig c;
  c.dst = o.dst;
  c.src_ports = w.src_ports;
  c.flow_dsts = w.dsts;
  c.slot_bytes = o.slot_bytes;
  c.batch = o.batch;
  c.sndbuf_bytes = o.sndbuf_bytes;
  c.device = o.device;
  c.gso = o.gso;
  c.replies = o.replies;
  return c;
}

UdpRxConfig udp_rx_config(const RxOptions& o) {
  UdpRxConfig c;
  c.bind = o.bind;
  c.slot_bytes = o.slot_bytes;
  c.batch = o.batch;
  c.rcvbuf_bytes = o.rcvbuf_bytes;
  c.reuseport = true;
  c.device = o.device;
  return c;
}

std::string rcvbuf_line(const RxSocketInfo& s, int asked_bytes) {
  return "receive buffer " + std::to_string(s.rcvbuf_bytes) + " bytes" +
         (asked_bytes == 0    ? " (kernel default)"
          : s.rcvbuf_forced ? " (SO_RCVBUFFORCE)"
                            : " (SO_RCVBUF, capped by net.core.rmem_max: run as root to force)");
}

extern const BackendDescriptor socket_backend = {
    .name = "socket",
    .detail_tx = "sendmmsg/recvmmsg",
    .detail_rx = "sendmmsg/recvmmsg",
    .frames = false,
    .kernel_interface = false,
    .pins_workers = false,
    .auto_tx = 3,
    .auto_rx = 2,
    .auto_skip = nullptr,
    .fallback = nullptr,
    .why_not = [] { return std::string(); },
    .capabilities = [] { return std::vector<int>{}; },  // sockets exist; SO_RCVBUFFORCE was applied at setup
    .open_tx = [](const TxOptions& o) -> std::unique_ptr<TxBackend> {
      return std::make_unique<QueueTxBackend<SocketTxQueue, UdpTxConfig>>(
          [o](const TxWorker& w) { return udp_tx_config(o, w); });
    },
    .open_rx = [](const RxOptions& o) -> std::unique_ptr<RxBackend> { return std::make_unique<UdpSocketRx<SocketRxQueue>>(o); },
    .cleanup = nullptr,
    .rx_reflects = true,
    .tx_rtt = true,
};

}  // namespace rateline::drivers
