// The contract between the programs (pktgen, rx, ceiling) and the I/O
// backends: one descriptor per drivers/<backend>/ folder, listed once in
// backend_table.cpp. The programs ask the table; they never name a backend.
//
// Two levels, as DPDK's eth_dev_ops (slow path) and rte_eth_fp_ops (fast path):
// - BackendDescriptor: what a backend is and whether it works here, read
//   before anything opens (names, flags, capabilities, why not).
// - TxBackend / RxBackend: one per run, made by the descriptor once the
//   options are resolved; owns what the run shares (a DPDK port, a BPF
//   program), gives its start-up lines and its part of the report, and runs
//   each worker in that worker's thread. Virtual calls happen per run and
//   per worker; the per-packet loop inside run() is engine::run_tx/run_rx,
//   a template over the backend's concrete queue (engine/queue.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/rx_loop.hpp"
#include "engine/tx_plan.hpp"
#include "net/frame.hpp"
#include "net/iface.hpp"
#include "report/link.hpp"
#include "report/rx_summary.hpp"
#include "socket/udp_socket.hpp"
#include "stats/counters.hpp"
#include "topo/topology.hpp"

namespace rateline::drivers {

enum class Direction { tx, rx };

// Where whole Ethernet frames go: the interface, both ends' addresses, or
// why they cannot be built (no interface, no neighbour entry, MTU).
struct FramePath {
  net::Interface iface;
  net::UdpEndpoints endpoints;
  std::string why_not;
};

// pktgen's options, resolved once, in the terms every backend shares.
struct TxOptions {
  SocketAddress dst;
  std::string device;                 // --device as given ("" = none)
  FramePath kernel_path;              // what the kernel's tables say about frames towards dst
  std::string local_ip;               // --src-ip, or the kernel's source address towards dst
  std::string dst_mac;                // --dst-mac as given
  std::string pcap_path;              // --pcap-out: the file the pcap backend writes
  uint32_t payload_bytes = 0;         // data packets' UDP payload (--size)
  uint32_t slot_bytes = 0;            // largest UDP payload a slot holds (data or end marker)
  uint32_t batch = 32;
  int sndbuf_bytes = 0;
  bool gso = false;
  bool ipv6 = false;
  uint8_t vlan_tags = 0;              // --vlan: tags in each frame's headers
  uint16_t streams = 1;               // stream ids 0 .. streams-1 over all workers
  std::vector<std::string> eal_args;  // --dpdk-args
  topo::Placement placement;
  ReplyListener* replies = nullptr;   // pktgen --rtt: a socket backend's sockets, a DPDK port's RX queues are read there
};

// One sending worker: its index and the source port of each of its flows
// (TxFlow::queue_flow indexes these lists; 0 = the kernel's choice).
struct TxWorker {
  unsigned index = 0;
  std::vector<uint16_t> src_ports;
  std::vector<SocketAddress> dsts;  // each flow's destination (--dst range); empty: TxOptions::dst for all
};

// Locally administered MACs for frames that reach no wire (null, pcap).
inline constexpr net::MacAddress kNoWireSrcMac{0x02, 0, 0, 0, 0, 0x01};
inline constexpr net::MacAddress kNoWireDstMac{0x02, 0, 0, 0, 0, 0x02};

// The path of frames that reach no wire: interface `name` with those MACs
// (the destination --dst-mac when given), --dst and its port, --src-ip or
// the kernel's source address (the unspecified one when none).
FramePath no_wire_frame_path(const TxOptions& o, const char* name);

class TxBackend {
 public:
  virtual ~TxBackend() = default;
  // Where frames go when the backend knows better than the kernel (a DPDK
  // port has its own MAC and no kernel route). Throws SetupError if it cannot tell.
  virtual FramePath frame_path(const TxOptions& o) const { return o.kernel_path; }
  virtual std::optional<report::LinkInfo> link() const { return std::nullopt; }
  // Extra start-up lines ("pktgen: " is prepended).
  virtual std::vector<std::string> start_lines() const { return {}; }
  // Who stamps packets when it is not the engine (the kernel, for XDP).
  virtual std::optional<std::string> stamp_source() const { return std::nullopt; }
  // Worker w's whole run, in its own thread: opens what is per worker there
  // (io_uring rings are single-issuer), calls ready() once set up, then
  // runs the plan. Throws on setup failure (before ready()).
  virtual engine::TxResult run(const TxWorker& w, const engine::TxPlan& plan, stats::TxSnapshotRing& snapshots,
                               const std::atomic<bool>& stop, const std::function<void()>& ready) = 0;
  // After the table: lines for stdout, advice for stderr, fields for the JSON result.
  virtual std::vector<std::string> end_lines() const { return {}; }
  virtual std::string advice() const { return {}; }
  virtual void add_to_result(nlohmann::json&) const {}
};

// rx's options, resolved once.
struct RxOptions {
  SocketAddress bind;
  uint16_t port = 9000;
  uint16_t port_count = 1;            // --port A-B: ports port .. port + port_count - 1 (raw receivers)
  bool ipv6 = false;
  std::string device;                 // --device as given
  net::Interface iface;               // the interface raw backends tap (when known)
  uint32_t slot_bytes = 9001;         // largest datagram kept whole, plus one (longer = truncated)
  uint32_t batch = 64;
  int rcvbuf_bytes = 4 << 20;         // asked; 0 = kernel default
  uint32_t max_streams = 256;
  uint64_t expect = 0;                // --count: packets expected (0 = learn from end markers)
  bool layers = false;                // --layers: count at the driver and again at the sockets
  uint32_t reflect_every = 0;         // --reflect-every (1 with --reflect alone, 0 without): rx_reflects backends
  std::optional<wire::PacketKey> tag_key;  // --key-file (the workers check it: engine::RxPlan); null synthesises tagged packets
  unsigned threads = 1;
  std::vector<std::string> eal_args;
  topo::Placement placement;
};

// What one receiving worker reports besides its counts.
struct RxWorkerInfo {
  RxSocketInfo socket;             // socket backends: the granted buffer
  std::string mode;                // how it runs ("multishot recvmsg", "native"...)
  uint64_t buffer_ring_empty = 0;  // io_uring: times the provided-buffer ring ran dry
};

class RxBackend {
 public:
  virtual ~RxBackend() = default;
  // Workers to start for --threads n (an in-kernel counter is read by one).
  virtual unsigned workers(unsigned threads) const { return threads; }
  // Whether the workers see whole frames (the ledger attributes losses by it).
  virtual bool workers_see_frames() const = 0;
  // The name rx says it taps in its first line (for frames backends).
  virtual std::string tapped(const std::string& iface) const { return iface; }
  // The "receive buffer" start-up line(s), from the first worker's info ("rx: " is prepended).
  virtual std::vector<std::string> buffer_lines(const RxWorkerInfo& first) const = 0;
  // Whether its workers count a provided-buffer ring running dry (RxWorkerInfo::buffer_ring_empty).
  virtual bool has_buffer_ring() const { return false; }
  // Where a packet's receive time comes from (latency is that minus its send stamp).
  virtual const char* receive_stamps() const { return "one clock read per received batch"; }
  virtual std::vector<std::string> start_lines() const { return {}; }
  // True when the workers send no per-stream events: the run ends by the totals.
  virtual bool ends_by_totals() const { return false; }
  // A reason to end the run now that only this backend knows (polled by the
  // reporter, never by a worker); `app_data` = packets the workers counted.
  virtual std::optional<std::string> end_now(uint64_t /*app_data*/, uint64_t /*now_ns*/) { return std::nullopt; }
  // Worker `index`'s whole run in its own thread: sets info, calls ready()
  // once set up, then counts until stop. Throws on setup failure (before ready()).
  virtual engine::RxResult run(unsigned index, const engine::RxPlan& plan, stats::RxSnapshotRing& snapshots,
                               const std::atomic<bool>& stop, RxWorkerInfo& info,
                               const std::function<void()>& ready) = 0;
  // After the workers joined: results the backend adds or lends (--layers).
  virtual void finish(std::vector<engine::RxResult>&) {}
  // After the table: lines for stdout and fields for the JSON result.
  virtual std::string end_text(const report::RxSummary&) const { return {}; }
  virtual void add_to_result(nlohmann::json&, const report::RxSummary&) const {}
};

struct BackendDescriptor {
  const char* name;
  const char* detail_tx;       // said with "as asked" ("sendmmsg/recvmmsg"); nullptr = nothing
  const char* detail_rx;
  bool frames;                 // moves whole Ethernet frames (needs MACs)
  bool kernel_interface;       // its frames go through a kernel interface (resolved by the kernel's tables)
  bool pins_workers;           // workers are always pinned (DPDK lcores)
  int auto_tx, auto_rx;        // the order auto tries it in (1 first); 0 = auto never picks it
  const char* auto_skip;       // why auto passes over it, said in the note (nullptr = silent)
  const char* fallback;        // used instead when this one cannot work here (nullptr = an error)
  // "" when it can work here as far as can be told before opening; else why not.
  std::string (*why_not)();
  // The capabilities it still uses once set up (util/privileges.hpp drops the rest).
  std::vector<int> (*capabilities)();
  std::unique_ptr<TxBackend> (*open_tx)(const TxOptions&);
  std::unique_ptr<RxBackend> (*open_rx)(const RxOptions&);
  // rx --xdp-cleanup IFACE: removes what a killed run left on IFACE;
  // returns what it did, ok = nothing of ours is left. nullptr = nothing to clean.
  std::string (*cleanup)(const std::string& iface, bool& ok);
  bool moves_packets = true;   // false: no I/O at all (null): nothing a path measurement can use
  bool eal_args = false;       // takes EAL arguments (--dpdk-args): its ports are not the kernel's
  bool tx_needs_peer_napi = false;  // its frames reach a veth peer only with NAPI on there (XDP-sent frames)
  bool rx_one_reader = false;  // without --layers one worker reads what the kernel counted (--threads ignored)
  bool rx_layers = false;      // --layers: counts at the driver and again at the sockets
  // Its receiver counts our frames in an XDP program and drops them there:
  // the device's xdp_drop counters are the receiving, not a loss (ledger).
  bool rx_drops_in_xdp = false;
  bool replays = false;        // pktgen --replay: its queue takes whole frames of any length up to its slots
  bool rx_in_kernel = false;   // its receiver counts in the kernel: no frame reaches rx (rx --pcap-out is refused)
  bool rx_reflects = false;    // rx --reflect: its receive queue sends packets back (engine::ReflectingRxQueue; xdp: XDP_TX)
  // pktgen --rtt: the replies to its packets can be read here. Socket
  // backends read them from their own sockets; frames sent through a kernel
  // interface come back to the kernel, where a socket bound to the source
  // port reads them (pktgen/setup.cpp); a port of its own (DPDK) hands its
  // received frames to the listener (TxOptions::replies).
  bool tx_rtt = false;
  // --key-file: its sender writes, and its receiver checks, each packet's tag
  // (wire/packet_tag.hpp) in user space. false: packets are made or counted in BPF.
  bool packet_tags = true;
};

// The descriptor named, or one with every flag false for a name the table does not have.
const BackendDescriptor& describe_backend(const std::string& name);

// Every backend, in the order --backend lists them.
std::span<const BackendDescriptor* const> backends();
// nullptr when no backend has that name.
const BackendDescriptor* find_backend(const std::string& name);
// Names --backend accepts, "auto" first.
std::vector<std::string> backend_choices();
// The same without the backends that move no packets (a path measurement's choices).
std::vector<std::string> path_backend_choices();

struct BackendChoice {
  const BackendDescriptor* backend = nullptr;
  std::string note;  // why this one (and why others were skipped), printed at start
};

// "auto" tries the backends in their auto order and says why it skipped
// others; a named one that cannot work throws BackendUnavailable with the
// reason, unless it names a fallback. `frames_ok`: the caller can build
// whole frames through a kernel interface; when false, `frames_why` says why not.
BackendChoice choose_backend(const std::string& requested, Direction dir, bool frames_ok,
                             const std::string& frames_why);

}  // namespace rateline::drivers
