#include "registry.hpp"

#include "util/errors.hpp"

namespace rateline::drivers {

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::socket: return "socket";
    case Backend::uring: return "uring";
  }
  return "?";
}

std::vector<std::string> backend_choices() { return {"auto", "uring", "socket"}; }

BackendChoice choose_backend(const std::string& requested) {
  BackendChoice c;
  if (requested == "socket") {
    c.backend = Backend::socket;
    c.note = "socket (sendmmsg/recvmmsg), as asked";
    return c;
  }
#if RATELINE_HAVE_URING
  const std::string why_not = uring_unavailable_reason();
#else
  const std::string why_not = "built without liburing";
#endif
  if (why_not.empty()) {
    c.backend = Backend::uring;
    c.note = requested == "auto" ? "uring (auto: io_uring works here)" : "uring, as asked";
    return c;
  }
  // The embedded default must work everywhere: io_uring missing falls back, with the reason.
  c.backend = Backend::socket;
  c.note = "socket (fallback: " + why_not + ")";
  return c;
}

AnyTxQueue open_tx_queue(Backend b, const UdpTxConfig& cfg) {
#if RATELINE_HAVE_URING
  if (b == Backend::uring) return std::make_unique<UringTxQueue>(cfg);
#endif
  (void)b;
  return std::make_unique<SocketTxQueue>(cfg);
}

AnyRxQueue open_rx_queue(Backend b, const UdpRxConfig& cfg) {
#if RATELINE_HAVE_URING
  if (b == Backend::uring) return std::make_unique<UringRxQueue>(cfg);
#endif
  (void)b;
  return std::make_unique<SocketRxQueue>(cfg);
}

}  // namespace rateline::drivers
