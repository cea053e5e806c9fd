// What the socket backend shares with the other backends that move UDP
// payloads through kernel sockets (io_uring; XDP's --layers workers).
#pragma once

#include <string>

#include "backend.hpp"
#include "queue_backend.hpp"

namespace rateline::drivers {

UdpTxConfig udp_tx_config(const TxOptions& o, const TxWorker& w);
UdpRxConfig udp_rx_config(const RxOptions& o);
// "receive buffer N bytes (SO_RCVBUFFORCE)" and the like: what the kernel granted and why.
std::string rcvbuf_line(const RxSocketInfo& s, int asked_bytes);

// A receiver on kernel UDP sockets (socket, uring): every worker binds the
// same port (SO_REUSEPORT spreads the flows); says once what buffer it got.
template <class Queue>
class UdpSocketRx : public QueueRxBackend<Queue, UdpRxConfig> {
 public:
  explicit UdpSocketRx(const RxOptions& o)
      : QueueRxBackend<Queue, UdpRxConfig>([cfg = udp_rx_config(o)](unsigned) { return cfg; }),
        asked_(o.rcvbuf_bytes) {}
  std::vector<std::string> buffer_lines(const RxWorkerInfo& first) const override {
    return {rcvbuf_line(first.socket, asked_)};
  }
  const char* receive_stamps() const override { return "the kernel's, per datagram (SO_TIMESTAMPNS)"; }

 private:
  int asked_;
};

}  // namespace rateline::drivers
