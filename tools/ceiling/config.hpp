// ceiling's configuration, parsed and validated once (options.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "auth.hpp"
#include "limits.hpp"
#include "report/metrics_server.hpp"
#include "search.hpp"
#include "util/units.hpp"
#include "verdict.hpp"

namespace rateline::ceiling {

enum class Mode {
  local,        // both ends in network namespaces made here (the default)
  remote,       // this host sends; a `ceiling --serve` on the receiver runs rx
  serve,        // the receiver's agent on TCP
  serve_stdio,  // the receiver's agent on stdin/stdout (the local lab's receiver namespace)
  lab_child,    // internal: the local lab's sender side, run inside the sender namespace
};

// RFC 2544 9.1 frame sizes (L2, FCS included).
inline const std::vector<uint32_t> kRfc2544Frames = {64, 128, 256, 512, 1024, 1280, 1518};
// UDP/IPv4 frame overhead: 14 Ethernet + 20 IPv4 + 8 UDP + 4 FCS.
inline constexpr uint32_t kIpv4FrameOverhead = 46;
// UDP/IPv6: 14 Ethernet + 40 IPv6 + 8 UDP + 4 FCS. The smallest frame that
// carries a test packet (18 B payload) is then 84 B, not RFC 2544's 64.
inline constexpr uint32_t kIpv6FrameOverhead = 66;

struct SizePlan {
  uint32_t payload = 0;                 // UDP payload bytes sent
  std::optional<uint32_t> rfc_frame;    // the RFC 2544 frame size asked for, when it came from --frame-sizes
};

struct Config {
  Mode mode = Mode::local;
  std::vector<SizePlan> sizes;

  // Search.
  uint64_t trial_ns = 2 * 1'000'000'000ull;  // RFC 2544: 60 s; short by default for CI
  double resolution = 0.01;                   // relative
  double pdr_threshold = 0.005;               // loss ratio
  std::optional<units::Rate> max_rate;        // first trial; default: unpaced (as fast as the sender goes)
  std::string rate_layer = "l1";            // which bits a bit/s --max-rate counts
  double min_pps = 10;
  uint32_t max_trials = 20;                   // per size and search (rates tried)
  LoadPolicy load;                            // how many trials judge one rate (search.hpp): RFC 2544's one by default
  uint32_t burst = 0;                         // 0 = auto
  bool throughput = true, back_to_back = true;
  uint32_t b2b_max = 65536;
  uint32_t b2b_repeats = 5;
  uint64_t b2b_gap_ns = 100'000'000;
  uint64_t drain_ns = 1'000'000'000;          // rx --idle: wait this long after the last packet
  std::optional<MinNdr> min_ndr;              // --min-ndr: every size's NDR must reach it, else exit 3

  // Sender (pktgen) and receiver (rx).
  std::string dst;                  // remote: the receiver's test address
  bool ipv6 = false;                // remote to an IPv6 --dst: pktgen --ipv6, frame sizes with IPv6 headers
  uint16_t port = 9000;
  std::string tx_backend = "auto", rx_backend = "auto";
  std::string sndbuf;               // pktgen --sndbuf
  std::string device;               // pktgen --device; also the ledger's sender interface
  int64_t rx_rcvbuf = -1;
  uint32_t rx_test_slow_us = 0;     // TEST AID: rx --test-slow-us
  uint32_t rx_threads = 1;
  std::string pktgen_bin, rx_bin;
  std::string tx_dpdk_args;         // pktgen --dpdk-args (local lab default: net_af_packet on the sender's veth)
  std::string rx_dpdk_args;         // --serve / local lab: rx --dpdk-args (lab default: net_af_packet on the receiver's veth)

  // Modes.
  std::string remote;               // HOST:PORT of `ceiling --serve`
  std::string listen;               // --serve [ADDR:]PORT
  std::string rx_bind = "0.0.0.0";  // --serve: address rx binds
  TrialLimits serve_limits = TrialLimits::serve_defaults();  // --serve: what one TRIAL may ask (limits.hpp)
  uint64_t serve_idle_ns = 10'000'000'000ull;      // --serve: drop a client silent this long between trials
  uint64_t serve_session_ns = 600'000'000'000ull;  // --serve: close a session this old
  std::string serve_dpdk_device;    // --serve: the one device backend=dpdk may use (rx --device)
  uint32_t serve_max_clients = 8;   // --serve: connections held at once (handshakes plus the session)
  std::optional<auth::Key> key;     // --key-file: --serve asks clients to prove they hold it; --remote proves it
  std::string key_file;             // its path, for messages
  report::MetricsOptions serve_metrics;  // --serve --metrics / --metrics-textfile: the agent's Prometheus page
  std::string shape;                // local: qdisc spec on the sender's veth ("tbf rate 20mbit burst 32kbit latency 50ms")
  std::string lab_rx_ns;            // lab_child: the receiver namespace
  std::string lab_peer_device;      // lab_child: the receiver's veth
  std::string lab_device;           // lab_child: the sender's veth (the ledger's sender interface)
  std::string lab_peer_mac;         // lab_child: the receiver veth's MAC (pktgen --dst-mac for dpdk)
  std::string lab_shape_text;       // lab_child: for the report

  // Output.
  std::string json_path, csv_path, csv_trials_path, svg_path;
  bool quiet = false;

  std::vector<std::string> argv;    // as given, for the lab child
};

int parse_options(int argc, char** argv, Config& cfg);

}  // namespace rateline::ceiling
