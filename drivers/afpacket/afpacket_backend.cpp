// The AF_PACKET backend: TPACKET_V3 rings. Sends whole frames of its own
// making; receives a copy of each frame the stack also processes (so auto
// never picks it for rx). Needs CAP_NET_RAW.
#include <linux/capability.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "afpacket/afpacket_queues.hpp"
#include "backend.hpp"
#include "queue_backend.hpp"
#include "util/errors.hpp"

namespace rateline::drivers {
namespace {

std::string afpacket_why_not() {
  const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    ::close(fd);
    return {};
  }
  if (errno == EPERM || errno == EACCES) return "AF_PACKET needs CAP_NET_RAW";
  return std::string("AF_PACKET unavailable: ") + errno_text(errno);
}

class AfPacketRx : public QueueRxBackend<AfPacketRxQueue, RawRxConfig> {
 public:
  explicit AfPacketRx(const RxOptions& o) : QueueRxBackend([cfg = config(o)](unsigned) { return cfg; }), cfg_(config(o)) {}
  std::vector<std::string> buffer_lines(const RxWorkerInfo&) const override {
    return {"receive buffer: AF_PACKET ring of " + std::to_string(cfg_.blocks) + " x " +
            std::to_string(cfg_.block_bytes / 1024) + " KiB blocks per worker"};
  }
  const char* receive_stamps() const override { return "the kernel's, per frame (TPACKET_V3)"; }

 private:
  static RawRxConfig config(const RxOptions& o) {
    RawRxConfig c;
    c.iface = o.iface;
    c.batch = o.batch;
    // This run's workers share one fanout group; each run of a port set (rx --device a,b) has its own, since a
    // group belongs to one device.
    static std::atomic<int> runs{0};
    c.fanout_group = static_cast<int>((getpid() + 2 * runs.fetch_add(1)) & 0xffff) | 1;
    c.guard_port = o.port;
    c.guard_port_count = o.port_count;
    c.ipv6 = o.ipv6;
    return c;
  }
  RawRxConfig cfg_;
};

}  // namespace

extern const BackendDescriptor afpacket_backend = {
    .name = "afpacket",
    .detail_tx = nullptr,
    .detail_rx = nullptr,
    .frames = true,
    .kernel_interface = true,
    .pins_workers = false,
    .auto_tx = 1,
    .auto_rx = 0,
    .auto_skip = nullptr,
    .fallback = nullptr,
    .why_not = afpacket_why_not,
    .capabilities = [] { return std::vector<int>{CAP_NET_RAW, CAP_NET_ADMIN}; },
    .open_tx = [](const TxOptions& o) -> std::unique_ptr<TxBackend> {
      RawTxConfig c;
      c.iface = o.kernel_path.iface;
      c.max_frame_bytes = static_cast<uint32_t>(net::headers_len(o.ipv6, o.vlan_tags)) + o.slot_bytes;
      c.batch = o.batch;
      return std::make_unique<QueueTxBackend<AfPacketTxQueue, RawTxConfig>>([c](const TxWorker&) { return c; });
    },
    .open_rx = [](const RxOptions& o) -> std::unique_ptr<RxBackend> { return std::make_unique<AfPacketRx>(o); },
    .cleanup = nullptr,
    .replays = true,
    .rx_reflects = true,
    .tx_rtt = true,
};

}  // namespace rateline::drivers
