// Backend selection: the one place that knows every backend. Adding a
// backend means one folder under drivers/ and one entry in each list here.
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "rateline_config.h"
#include "socket/socket_queues.hpp"
#if RATELINE_HAVE_URING
#include "uring/uring_queues.hpp"
#endif

namespace rateline::drivers {

enum class Backend { socket, uring };

const char* backend_name(Backend b);
// Names accepted by --backend, "auto" first.
std::vector<std::string> backend_choices();

struct BackendChoice {
  Backend backend = Backend::socket;
  std::string note;  // why this one (and why others were skipped), printed at start
};

// "auto" picks the fastest that works here, in order uring, socket.
// An explicit name that cannot work here throws BackendUnavailable... unless
// it is uring and fallback is allowed: then the notice says so.
BackendChoice choose_backend(const std::string& requested);

using AnyTxQueue = std::variant<std::unique_ptr<SocketTxQueue>
#if RATELINE_HAVE_URING
                                , std::unique_ptr<UringTxQueue>
#endif
                                >;
using AnyRxQueue = std::variant<std::unique_ptr<SocketRxQueue>
#if RATELINE_HAVE_URING
                                , std::unique_ptr<UringRxQueue>
#endif
                                >;

AnyTxQueue open_tx_queue(Backend b, const UdpTxConfig& cfg);
AnyRxQueue open_rx_queue(Backend b, const UdpRxConfig& cfg);

}  // namespace rateline::drivers
