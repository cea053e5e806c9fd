// rx --backend xdp: in-kernel counting (xdp_rx.bpf.c on the receiving
// interface, attached through a bpf_link: detached when rx exits, however
// it exits, SIGKILL included).
//
// Like the TX side, this backend does not fit the RxQueue concept: the
// kernel runs the per-packet loop. Userspace reads the maps for progress
// and at the end, and builds the engine's RxResult from them, so the report
// (src/report/rx_summary.cpp) is the same as for every backend.
//
// rx --reflect: the program returns every Nth counted data packet by XDP_TX,
// turned around in place; the driver's failures to send one are counted by
// two tp_btf programs (xdp_exception, xdp_bulk_tx) for this interface: the
// report's reflected is what the driver took, reflect_failed what it did not.
//
// rx --layers: the program counts our frames and passes them on; the socket
// path counts them again; report::layers_table() shows per stream what reached the
// driver, what reached the application, and the difference.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/rx_loop.hpp"
#include "net/iface.hpp"
#include "stats/counters.hpp"

struct bpf_link;
struct rl_stream_key;
struct rl_rx_stream;

namespace rateline::drivers {

class BpfObject;

struct XdpRxConfig {
  net::Interface iface;
  uint16_t port = 9000;
  uint16_t port_count = 1;  // rx --port A-B
  uint32_t max_streams = 256;
  bool pass_counted = false;  // rx --layers: XDP_PASS our frames after counting them
  uint32_t max_payload = 65535;  // rx --max-size
  uint32_t reflect_every = 0;    // rx --reflect: every Nth data packet (per CPU) goes back as XDP_TX
};

class XdpRxProgram {
 public:
  static constexpr uint32_t kMaxStreams = 4096;  // each stream holds a 2 KiB window and a 4 KiB histogram

  // Loads and attaches; throws BackendUnavailable with the reason (no
  // privileges, verifier, another XDP program on the interface).
  explicit XdpRxProgram(const XdpRxConfig& cfg);
  ~XdpRxProgram();
  XdpRxProgram(const XdpRxProgram&) = delete;
  XdpRxProgram& operator=(const XdpRxProgram&) = delete;

  // The maps in the engine's shape; `with_latency` also reads the
  // histograms (end of run). Per-CPU totals are summed, streams are read
  // under their lock (BPF_F_LOCK), so every count is consistent.
  engine::RxResult read(bool with_latency) const;

  // rx's worker thread for --backend xdp: publishes a snapshot from the maps
  // every plan.publish_every_ns until stop, then returns read(true).
  engine::RxResult run(const engine::RxPlan& plan, stats::RxSnapshotRing& snapshots,
                       const std::atomic<bool>& stop) const;

  const std::string& mode() const { return mode_; }  // native, generic
  const XdpRxConfig& config() const { return cfg_; }

 private:
  XdpRxConfig cfg_;
  std::unique_ptr<BpfObject> obj_;
  bpf_link* link_ = nullptr;
  struct LinkCloser {
    void operator()(bpf_link* l) const;
  };
  std::unique_ptr<bpf_link, LinkCloser> tx_failures_[2];  // --reflect: the xdp_exception and xdp_bulk_tx tracepoints
  int totals_fd_ = -1, streams_fd_ = -1;
  std::string mode_;

  // One stream of the map, in the engine's shape, added to r.
  static void add_stream(engine::RxResult& r, const rl_stream_key& key, const rl_rx_stream& s, bool with_latency);
};

// --layers: the sender's totals are the same at both layers, so streams
// whose end markers the socket never got (dropped with the rest of an
// overflowing buffer) borrow them from the driver layer: the application
// layer's loss stays exact. Adds one result that carries only end markers.
void lend_end_markers(const engine::RxResult& driver, std::vector<engine::RxResult>& app);

}  // namespace rateline::drivers
