// pktgen --backend xdp: in-kernel generation with BPF_PROG_RUN and
// BPF_F_TEST_XDP_LIVE_FRAMES (Linux >= 5.18).
//
// This backend does not fit the TxQueue concept: the kernel runs the
// per-packet loop (xdp_tx.bpf.c). Its step is "n frames of flow f", one
// BPF_PROG_RUN call on that flow's template frame; the engine's burst loop
// (engine/burst_loop.hpp, the one run_tx uses) does pacing, quota,
// progress, stop and end markers around it. A burst is one call when paced
// (--burst frames) and large calls when unpaced; after each call the
// per-stream sequence is read from an mmapped map, and the result is the
// common TxResult. Userspace never touches a packet after the template.
// A size mix (--size a,b,c, --imix): the template is the largest size, and
// the program cuts each frame to the class the worker's cycle names.
//
// No backpressure: XDP transmit drops what the device ring cannot take.
// Two raw tracepoints (xdp_devmap_xmit, xdp_redirect_err) count per worker
// what the driver accepted and refused, so `failed` is exact; where they
// cannot be attached, note() says so and failed is unknown (0).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/tx_plan.hpp"
#include "net/iface.hpp"
#include "stats/counters.hpp"

struct bpf_link;
struct rl_tx_stream;

namespace rateline::drivers {

class BpfObject;

struct XdpTxConfig {
  net::Interface iface;     // egress: BPF_PROG_RUN's "ingress" device, XDP_TX sends out of it
  bool ipv6 = false;
  uint32_t payload_len = 0;  // data packets' UDP payload
  uint32_t streams = 1;      // stream ids 0 .. streams-1
  uint32_t batch = 64;       // frames per kernel batch (devmap flush), at most 256
  net::UdpEndpoints l2;      // MACs and 802.1Q tags (--vlan) of every frame
};

class XdpTxProgram {
 public:
  // Loads the generator and attaches the drop-counting tracepoints. Throws
  // BackendUnavailable with the reason (privileges, verifier, frame size).
  explicit XdpTxProgram(const XdpTxConfig& cfg);
  ~XdpTxProgram();
  XdpTxProgram(const XdpTxProgram&) = delete;
  XdpTxProgram& operator=(const XdpTxProgram&) = delete;

  // One worker's run, from its own thread (any number of workers at once,
  // each with its own flows). Same semantics and result as engine::run_tx.
  engine::TxResult run(engine::TxPlan plan, stats::TxSnapshotRing& snapshots, const std::atomic<bool>& stop);

  // How it runs here: "XDP live frames on IF, batch B; driver drops counted ...".
  const std::string& note() const { return note_; }
  // After the run: what to do about frames the driver refused (empty when none).
  std::string advice() const;

 private:
  // One BPF_PROG_RUN call of `frames` runs on `buf` (metadata + frame); returns its errno (0 = ok).
  int send(const std::vector<uint8_t>& buf, uint32_t frames) const;
  // A size mix: the cycle and classes (tx_mix, tx_mix_classes), then per
  // flow its bases per class (tx_mix_streams) and its template, the largest.
  void set_up_mix(const engine::TxPlan& plan);
  std::vector<uint8_t> set_up_mix_flow(const engine::TxFlow& f, const engine::TxPlan& plan);

  XdpTxConfig cfg_;
  std::unique_ptr<BpfObject> obj_;
  int prog_fd_ = -1;
  int xmit_fd_ = -1;
  rl_tx_stream* streams_ = nullptr;  // mmap of tx_streams
  size_t streams_bytes_ = 0;
  bpf_link* links_[2] = {nullptr, nullptr};
  bool counting_drops_ = false;
  int pin_fd_ = -1;  // generic-mode XDP link that keeps the program in the dispatcher
  std::string pin_where_;
  std::string note_;
  mutable std::mutex advice_mu_;
  std::string advice_;
};

}  // namespace rateline::drivers
