// Backend selection: the one place that knows every backend. Adding a
// backend means one folder under drivers/ and one entry in each list here.
#pragma once

#include "rateline_config.h"

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "afpacket/afpacket_queues.hpp"
#if RATELINE_HAVE_AFXDP
#include "afxdp/afxdp_queues.hpp"
#include "afxdp/xdp_program.hpp"
#endif
#if RATELINE_HAVE_DPDK
#include "dpdk/dpdk_port.hpp"
#include "dpdk/dpdk_queues.hpp"
#endif
#include "socket/socket_queues.hpp"
#if RATELINE_HAVE_XDP
#include "xdp/xdp_rx.hpp"
#include "xdp/xdp_tx.hpp"
#endif
#if RATELINE_HAVE_URING
#include "uring/uring_queues.hpp"
#endif

namespace rateline::drivers {

enum class Backend { socket, uring, afpacket, afxdp, dpdk, xdp };

const char* backend_name(Backend b);
// Names accepted by --backend, "auto" first.
std::vector<std::string> backend_choices();
// Whether the backend moves whole Ethernet frames (needs MACs, an interface).
bool is_raw(Backend b);
// The capabilities a backend still uses once its queues are open (what
// pktgen and rx keep; util/privileges.hpp drops the rest).
std::vector<int> capabilities_after_setup(Backend b);

struct BackendChoice {
  Backend backend = Backend::socket;
  std::string note;  // why this one (and why others were skipped), printed at start
};

enum class Direction { tx, rx };

// "auto" picks the fastest that works here and says why it skipped others:
// TX afpacket > uring > socket; RX uring > socket (AF_PACKET only taps frames
// the stack still processes, so it is never chosen for rx by itself).
// DPDK takes a port away from the kernel, so auto never picks it (and says
// so); --backend dpdk asks for it, and the caller sets up a DpdkPort.
// XDP-native (xdp) has no queue: the kernel runs the per-packet loop, and
// the caller runs XdpTxProgram / XdpRxProgram instead; auto never picks it.
// `raw_ok`: the caller can build whole frames (interface and MACs known); when
// false, `raw_why` says why not. An explicit backend that cannot work throws
// BackendUnavailable with the reason, except io_uring, which falls back.
BackendChoice choose_backend(const std::string& requested, Direction dir, bool raw_ok, const std::string& raw_why);

struct TxQueueConfig {
  UdpTxConfig udp;  // socket, uring
  RawTxConfig raw;  // afpacket
#if RATELINE_HAVE_AFXDP
  XskConfig xsk;    // afxdp
#endif
#if RATELINE_HAVE_DPDK
  DpdkTxConfig dpdk;  // dpdk: a queue of the port DpdkPort set up
#endif
};
struct RxQueueConfig {
  UdpRxConfig udp;
  RawRxConfig raw;
#if RATELINE_HAVE_AFXDP
  XskConfig xsk;
#endif
#if RATELINE_HAVE_DPDK
  DpdkRxConfig dpdk;
#endif
};

using AnyTxQueue = std::variant<std::unique_ptr<SocketTxQueue>, std::unique_ptr<AfPacketTxQueue>
#if RATELINE_HAVE_AFXDP
                                , std::unique_ptr<AfXdpTxQueue>
#endif
#if RATELINE_HAVE_DPDK
                                , std::unique_ptr<DpdkTxQueue>
#endif
#if RATELINE_HAVE_URING
                                , std::unique_ptr<UringTxQueue>
#endif
                                >;
using AnyRxQueue = std::variant<std::unique_ptr<SocketRxQueue>, std::unique_ptr<AfPacketRxQueue>
#if RATELINE_HAVE_AFXDP
                                , std::unique_ptr<AfXdpRxQueue>
#endif
#if RATELINE_HAVE_DPDK
                                , std::unique_ptr<DpdkRxQueue>
#endif
#if RATELINE_HAVE_URING
                                , std::unique_ptr<UringRxQueue>
#endif
                                >;

AnyTxQueue open_tx_queue(Backend b, const TxQueueConfig& cfg);
AnyRxQueue open_rx_queue(Backend b, const RxQueueConfig& cfg);

}  // namespace rateline::drivers
