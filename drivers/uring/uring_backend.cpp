// The io_uring backend: batched sends (SEND_ZC where it pays) and multishot
// recvmsg into a provided-buffer ring; the default where the kernel has it.
// Built without liburing, or on a kernel that refuses io_uring, it names the
// reason and the socket backend takes its place.
#include "rateline_config.h"

#include "backend.hpp"
#include "socket/socket_backend.hpp"
#if RATELINE_HAVE_URING
#include "uring/uring_queues.hpp"
#endif

namespace rateline::drivers {

extern const BackendDescriptor uring_backend = {
    .name = "uring",
    .detail_tx = nullptr,
    .detail_rx = nullptr,
    .frames = false,
    .kernel_interface = false,
    .pins_workers = false,
    .auto_tx = 2,
    .auto_rx = 1,
    .auto_skip = nullptr,
    .fallback = "socket",
#if RATELINE_HAVE_URING
    .why_not = [] { return uring::uring_unavailable_reason(); },
#else
    .why_not = [] { return std::string("built without liburing"); },
#endif
    .capabilities = [] { return std::vector<int>{}; },
#if RATELINE_HAVE_URING
    .open_tx = [](const TxOptions& o) -> std::unique_ptr<TxBackend> {
      return std::make_unique<QueueTxBackend<UringTxQueue, UdpTxConfig>>(
          [o](const TxWorker& w) { return udp_tx_config(o, w); });
    },
    .open_rx = [](const RxOptions& o) -> std::unique_ptr<RxBackend> { return std::make_unique<UdpSocketRx<UringRxQueue>>(o); },
#else
    .open_tx = nullptr,
    .open_rx = nullptr,
#endif
    .cleanup = nullptr,
    .rx_reflects = true,
    .tx_rtt = true,
};

}  // namespace rateline::drivers
