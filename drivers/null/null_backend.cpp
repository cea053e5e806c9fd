// The null backend: no I/O at all, for measuring the engine's own cost per
// packet (null_queues.hpp). `pktgen --backend null` writes every frame and
// discards it; `rx --backend null [--device size=N]` counts frames it
// synthesises (N B of UDP payload, default 1400, pktgen's default --size),
// exactly --count of them when given.
#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

#include "backend.hpp"
#include "null/null_queues.hpp"
#include "queue_backend.hpp"
#include "util/errors.hpp"
#include "wire/test_payload.hpp"

namespace rateline::drivers {
namespace {

class NullTx : public TxBackend {
 public:
  explicit NullTx(const TxOptions& o) : batch_(o.batch) {}
  FramePath frame_path(const TxOptions& o) const override { return no_wire_frame_path(o, "null"); }
  engine::TxResult run(const TxWorker&, const engine::TxPlan& plan, stats::TxSnapshotRing& snapshots,
                       const std::atomic<bool>& stop, const std::function<void()>& ready) override {
    const uint32_t frame_bytes = static_cast<uint32_t>(net::headers_len(plan.ipv6, plan.vlan_tags)) +
                                 plan.tag_bytes + std::max(plan.payload.len, plan.end_payload.len);
    NullTxQueue q(batch_, std::max(frame_bytes, plan.replay ? plan.replay->max_len : 0));
    ready();
    return engine::run_tx(q, plan, snapshots, stop);
  }
  std::vector<std::string> start_lines() const override { return {"null backend: frames are written, then discarded"}; }

 private:
  uint32_t batch_;
};

// `--device size=N`: the synthesised payload, as DPDK's net_null takes size=.
uint32_t payload_bytes(const std::string& device) {
  if (device.empty()) return 1400;
  uint32_t n = 0;
  const char* end = device.data() + device.size();
  if (device.rfind("size=", 0) != 0 || std::from_chars(device.data() + 5, end, n).ptr != end ||
      n < wire::kMinPayloadBytes || n > 9000)
    throw SetupError("--backend null: --device takes size=N, N bytes of UDP payload from " +
                     std::to_string(wire::kMinPayloadBytes) + " to 9000 (got \"" + device + "\")");
  return n;
}

class NullRx : public QueueRxBackend<NullRxQueue, NullRxConfig> {
 public:
  explicit NullRx(const RxOptions& o)
      : QueueRxBackend([this](unsigned i) {
          NullRxConfig c = cfg_;
          c.stream = static_cast<uint16_t>(i);
          c.endpoints.src_port = static_cast<uint16_t>(40000 + i);
          // --count split over the workers, so exactly that many arrive in all.
          const uint64_t w = threads_;
          c.frames = expect_ / w + (i < expect_ % w ? 1 : 0);
          return c;
        }) {
    threads_ = o.threads;
    expect_ = o.expect;
    cfg_.ipv6 = o.ipv6;
    cfg_.batch = o.batch;
    cfg_.payload_bytes = payload_bytes(o.device);
    if (cfg_.payload_bytes + 1 > o.slot_bytes)
      throw SetupError("--backend null: size=" + std::to_string(cfg_.payload_bytes) + " exceeds --max-size");
    // --key-file: the synthetic peer tags its packets as pktgen --key-file would.
    cfg_.tag_key = o.tag_key;
    if (o.tag_key && cfg_.payload_bytes < wire::kMinPayloadBytes + wire::kTagBytes)
      throw SetupError("--backend null: size=" + std::to_string(cfg_.payload_bytes) + " leaves no room for the " +
                       "--key-file tag and the short header: size=" +
                       std::to_string(wire::kMinPayloadBytes + wire::kTagBytes) + " or more");
    net::UdpEndpoints& ep = cfg_.endpoints;
    ep.src_mac = kNoWireDstMac;
    ep.dst_mac = kNoWireSrcMac;
    ep.src_ip = make_address(o.ipv6 ? "2001:db8::1" : "192.0.2.1", 0).ip();  // documentation prefixes
    ep.dst_ip = o.bind.ip();
    ep.dst_port = o.port;
  }
  std::string tapped(const std::string&) const override { return "no interface: synthesised frames"; }
  std::vector<std::string> buffer_lines(const RxWorkerInfo&) const override {
    return {"receive buffer: none: the null backend synthesises " + std::to_string(cfg_.payload_bytes) +
            " B payloads, one stream per worker, no I/O"};
  }

 private:
  NullRxConfig cfg_;
  unsigned threads_ = 1;
  uint64_t expect_ = 0;
};

}  // namespace

extern const BackendDescriptor null_backend = {
    .name = "null",
    .detail_tx = "no I/O: the engine's own cost",
    .detail_rx = "no I/O: the engine's own cost",
    .frames = true,
    .kernel_interface = false,
    .pins_workers = false,
    .auto_tx = 0,
    .auto_rx = 0,
    .auto_skip = nullptr,
    .fallback = nullptr,
    .why_not = [] { return std::string(); },
    .capabilities = [] { return std::vector<int>{}; },
    .open_tx = [](const TxOptions& o) -> std::unique_ptr<TxBackend> { return std::make_unique<NullTx>(o); },
    .open_rx = [](const RxOptions& o) -> std::unique_ptr<RxBackend> { return std::make_unique<NullRx>(o); },
    .cleanup = nullptr,
    .moves_packets = false,
    .replays = true,
};

}  // namespace rateline::drivers
