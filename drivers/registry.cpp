#include "registry.hpp"

#include <linux/capability.h>
#include <cstdio>
#include <sys/socket.h>
#include <unistd.h>

#include "util/errors.hpp"

namespace rateline::drivers {
namespace {

std::string uring_why_not() {
#if RATELINE_HAVE_URING
  return uring_unavailable_reason();
#else
  return "built without liburing";
#endif
}

// Why auto leaves DPDK out: it needs a port of its own.
std::string dpdk_why_not_auto() {
#if RATELINE_HAVE_DPDK
  return "it needs a dedicated port: ask for it with --backend dpdk";
#else
  return "built without DPDK";
#endif
}

std::string afpacket_why_not() {
  const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    ::close(fd);
    return {};
  }
  if (errno == EPERM || errno == EACCES) return "AF_PACKET needs CAP_NET_RAW";
  return std::string("AF_PACKET unavailable: ") + errno_text(errno);
}

}  // namespace

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::socket: return "socket";
    case Backend::uring: return "uring";
    case Backend::afpacket: return "afpacket";
    case Backend::afxdp: return "afxdp";
    case Backend::dpdk: return "dpdk";
    case Backend::xdp: return "xdp";
  }
  return "?";
}

std::vector<std::string> backend_choices() { return {"auto", "dpdk", "xdp", "afxdp", "afpacket", "uring", "socket"}; }

bool is_raw(Backend b) { return b == Backend::afpacket || b == Backend::afxdp || b == Backend::dpdk || b == Backend::xdp; }

namespace {
// CAP_BPF is 39; a kernel knows it when its last capability is at least that.
bool kernel_has_cap_bpf() {
  FILE* f = std::fopen("/proc/sys/kernel/cap_last_cap", "r");
  int last = 0;
  if (f) {
    if (std::fscanf(f, "%d", &last) != 1) last = 0;
    std::fclose(f);
  }
  return last >= 39;
}
}  // namespace

std::vector<int> capabilities_after_setup(Backend b) {
  switch (b) {
    case Backend::socket:
    case Backend::uring:
      return {};  // sockets exist; SO_RCVBUFFORCE was applied at setup
    case Backend::afpacket:
      return {CAP_NET_RAW, CAP_NET_ADMIN};
    case Backend::afxdp:
    case Backend::xdp:
      // Map reads and BPF_PROG_RUN go through bpf(), gated on bpf_capable():
      // CAP_BPF, or CAP_SYS_ADMIN on kernels older than 5.8 that have no
      // CAP_BPF (cap_last_cap < 39). Detaching our program at exit is netlink
      // (CAP_NET_ADMIN); nothing looks a program up by id, which would need
      // CAP_SYS_ADMIN.
      if (kernel_has_cap_bpf()) return {CAP_NET_RAW, CAP_NET_ADMIN, CAP_BPF, CAP_PERFMON};
      return {CAP_NET_RAW, CAP_NET_ADMIN, CAP_SYS_ADMIN};
    case Backend::dpdk:
      // The PMDs' own control paths (tap netlink, link state ioctls) and EAL
      // teardown (hugepage and runtime files) run after setup.
      return {CAP_NET_RAW, CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_IPC_LOCK, CAP_DAC_OVERRIDE};
  }
  return {};
}

BackendChoice choose_backend(const std::string& requested, Direction dir, bool raw_ok, const std::string& raw_why) {
  BackendChoice c;
  std::string skipped;
  if (requested == "socket") {
    c.note = "socket (sendmmsg/recvmmsg), as asked";
    return c;
  }
  if (requested == "dpdk") {
#if RATELINE_HAVE_DPDK
    // The port, not the kernel, decides: DpdkPort says why if it cannot work.
    c.backend = Backend::dpdk;
    c.note = "dpdk, as asked";
    return c;
#else
    throw BackendUnavailable("built without DPDK (install libdpdk-dev and configure with -Ddpdk=enabled); "
                             "--backend afpacket or socket work without it");
#endif
  }
  if (requested == "auto") skipped = "dpdk skipped: " + dpdk_why_not_auto() + "; ";
  if (requested == "xdp") {
#if RATELINE_HAVE_XDP
    if (!raw_ok) throw BackendUnavailable(raw_why + "; --backend socket works without it");
    // Whether the kernel and driver can do it is only known once the program loads: it says why if not.
    c.backend = Backend::xdp;
    c.note = dir == Direction::tx ? "xdp (in-kernel generation), as asked" : "xdp (in-kernel counting), as asked";
    return c;
#else
    throw BackendUnavailable("built without libbpf/clang (XDP); --backend afpacket or socket work without it");
#endif
  }
  if (requested == "afxdp") {
#if RATELINE_HAVE_AFXDP
    if (!raw_ok) throw BackendUnavailable(raw_why + "; --backend socket works without it");
    // Whether AF_XDP works is only known once the socket binds: the queue says why if not.
    c.backend = Backend::afxdp;
    c.note = "afxdp, as asked";
    return c;
#else
    throw BackendUnavailable("built without libxdp/libbpf (AF_XDP); --backend afpacket or socket work without it");
#endif
  }
  if (requested == "afpacket" || (requested == "auto" && dir == Direction::tx)) {
    std::string why = raw_ok ? afpacket_why_not() : raw_why;
    if (why.empty()) {
      c.backend = Backend::afpacket;
      c.note = requested == "auto" ? "afpacket (auto: " + skipped + "fastest that works here)" : "afpacket, as asked";
      return c;
    }
    if (requested == "afpacket") throw BackendUnavailable(why + "; --backend socket works without it");
    skipped += "afpacket skipped: " + why + "; ";
  }
  const std::string uring_why = uring_why_not();
  if (uring_why.empty()) {
    c.backend = Backend::uring;
    c.note = requested == "auto" ? "uring (auto: " + skipped + "io_uring works here)" : "uring, as asked";
    return c;
  }
  // The embedded default must work everywhere: io_uring missing falls back, with the reason.
  c.backend = Backend::socket;
  c.note = "socket (fallback: " + skipped + uring_why + ")";
  return c;
}

AnyTxQueue open_tx_queue(Backend b, const TxQueueConfig& cfg) {
  switch (b) {
    case Backend::afpacket: return std::make_unique<AfPacketTxQueue>(cfg.raw);
#if RATELINE_HAVE_AFXDP
    case Backend::afxdp: return std::make_unique<AfXdpTxQueue>(cfg.xsk);
#endif
#if RATELINE_HAVE_DPDK
    case Backend::dpdk: return std::make_unique<DpdkTxQueue>(cfg.dpdk);
#endif
#if RATELINE_HAVE_URING
    case Backend::uring: return std::make_unique<UringTxQueue>(cfg.udp);
#endif
    default: return std::make_unique<SocketTxQueue>(cfg.udp);
  }
}

AnyRxQueue open_rx_queue(Backend b, const RxQueueConfig& cfg) {
  switch (b) {
    case Backend::afpacket: return std::make_unique<AfPacketRxQueue>(cfg.raw);
#if RATELINE_HAVE_AFXDP
    case Backend::afxdp: return std::make_unique<AfXdpRxQueue>(cfg.xsk);
#endif
#if RATELINE_HAVE_DPDK
    case Backend::dpdk: return std::make_unique<DpdkRxQueue>(cfg.dpdk);
#endif
#if RATELINE_HAVE_URING
    case Backend::uring: return std::make_unique<UringRxQueue>(cfg.udp);
#endif
    default: return std::make_unique<SocketRxQueue>(cfg.udp);
  }
}

}  // namespace rateline::drivers
