// The pcap backend: `pktgen --pcap-out FILE` writes the frames it would
// send (headers, payload, checksums, end markers, in send order, paced as
// asked) to a classic pcap file instead of a wire (pcap_queues.hpp). TX
// only; one worker; needs no privilege. Its MACs are the kernel's when
// --device and a neighbour entry give them, else locally administered ones
// (--dst-mac still applies).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "backend.hpp"
#include "engine/tx_loop.hpp"
#include "net/pcap_file.hpp"
#include "pcap/pcap_queues.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "util/owned.hpp"

namespace rateline::drivers {
namespace {

class PcapTx : public TxBackend {
 public:
  explicit PcapTx(const TxOptions& o) : path_(o.pcap_path), batch_(o.batch), slot_bytes_(o.slot_bytes) {
    fd_.reset(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd_) throw SetupError("Couldn't create " + path_ + ": " + errno_text(errno));
    const auto header = net::pcap_file_header();
    if (::write(fd_.get(), header.data(), header.size()) != static_cast<ssize_t>(header.size()))
      throw SetupError("Couldn't write " + path_ + ": " + errno_text(errno));
  }
  FramePath frame_path(const TxOptions& o) const override {
    return o.kernel_path.why_not.empty() ? o.kernel_path : no_wire_frame_path(o, "pcap");
  }
  std::vector<std::string> start_lines() const override {
    return {"pcap backend: frames go to " + path_ + " (classic pcap, Ethernet, ns stamps = send stamps), not to a wire"};
  }
  engine::TxResult run(const TxWorker&, const engine::TxPlan& plan, stats::TxSnapshotRing& snapshots,
                       const std::atomic<bool>& stop, const std::function<void()>& ready) override {
    PcapTxConfig c;
    c.fd = fd_.get();
    c.batch = batch_;
    c.headers_len = static_cast<uint32_t>(net::headers_len(plan.ipv6, plan.vlan_tags));
    c.frame_bytes = std::max(c.headers_len + slot_bytes_, plan.replay ? plan.replay->max_len : 0);
    c.epoch_offset_ns = realtime_minus_monotonic_ns();
    PcapTxQueue q(c);
    ready();
    engine::TxResult r = engine::run_tx(q, plan, snapshots, stop);
    if (q.lost()) {  // a write failed (a full disk): those records are not in the file
      r.counters.failed += q.lost();
      r.counters.last_error = q.error();
    }
    written_ = r.counters.packets + r.counters.end_markers - q.lost();
    return r;
  }
  std::vector<std::string> end_lines() const override {
    return {"pcap: " + std::to_string(written_) + " frames written to " + path_};
  }
  void add_to_result(nlohmann::json& j) const override {
    j["pcap_out"] = path_;
    j["pcap_frames"] = written_;
  }

 private:
  std::string path_;
  uint32_t batch_;
  uint32_t slot_bytes_;
  OwnedFd fd_;
  uint64_t written_ = 0;  // set by the one worker before it ends, read after join
};

}  // namespace

extern const BackendDescriptor pcap_backend = {
    .name = "pcap",
    .detail_tx = "frames to a pcap file (--pcap-out)",
    .detail_rx = nullptr,
    .frames = true,
    .kernel_interface = false,
    .pins_workers = false,
    .auto_tx = 0,
    .auto_rx = 0,
    .auto_skip = nullptr,
    .fallback = nullptr,
    .why_not = [] { return std::string(); },
    .capabilities = [] { return std::vector<int>{}; },
    .open_tx = [](const TxOptions& o) -> std::unique_ptr<TxBackend> { return std::make_unique<PcapTx>(o); },
    .open_rx = [](const RxOptions&) -> std::unique_ptr<RxBackend> {
      throw SetupError("--backend pcap only sends (pktgen --pcap-out FILE); rx reads frames from an interface");
    },
    .cleanup = nullptr,
    .moves_packets = false,
    .replays = true,
};

}  // namespace rateline::drivers
