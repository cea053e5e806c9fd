// rx's configuration, parsed and validated once (options.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "net/frame.hpp"
#include "report/metrics_server.hpp"
#include "wire/packet_tag.hpp"

namespace rateline::rx {

struct Config {
  uint64_t expect = 0;        // --count N: packets expected (0 = learn the total from end markers)
  std::string bind;           // "" = 0.0.0.0, or :: with --ipv6
  uint16_t port = 9000;
  uint16_t port_count = 1;  // --port A-B: the ports A..B (raw receivers only)
  bool ipv6 = false;
  unsigned threads = 1;
  std::string cores;
  std::string backend = "auto";
  int rcvbuf_bytes = 4 << 20;
  uint64_t idle_ns = 10'000'000'000ull;  // end after this long without a packet (once one arrived); 0 = never
  uint64_t duration_ns = 0;              // 0 = no limit
  uint32_t max_size = 9000;               // largest UDP payload received whole
  uint32_t max_streams = 256;  // per worker: sender x stream pairs tracked
  double max_loss_pct = -1;    // --max-loss: exit 3 when loss exceeds it (< 0: no verdict)
  uint32_t expect_senders = 0; // --expect-senders: wait for (and require) this many senders
  uint64_t stream_state_bytes = 0;  // worst case of all workers' stream state, checked at parse time
  uint32_t batch = 64;
  std::string device;
  std::string json_path;
  std::string csv_path;  // --csv: progress and result records as CSV rows
  bool quiet = false;
  uint32_t test_slow_us = 0;  // TEST AID: --test-slow-us N sleeps N us after each batch (a slow consumer on purpose)
  bool layers = false;        // --layers (--backend xdp): count at the driver (XDP) and again at the sockets
  std::string xdp_cleanup;    // --xdp-cleanup IFACE: detach XDP from IFACE and exit
  std::vector<std::string> dpdk_args;  // EAL arguments: --dpdk-args split at spaces, then all after "--"
  report::MetricsOptions metrics;  // --metrics, --metrics-textfile, --metrics-linger
  std::string pcap_out;       // --pcap-out: copies of the first --pcap-max frames and of the bad ones after them (engine/frame_keeper.hpp)
  uint32_t pcap_max = 1000;
  uint32_t reflect_every = 0; // --reflect [--reflect-every N]: send every Nth data packet back (0: off)
  std::string key_file;       // --key-file: count only packets with this key's tag (wire/packet_tag.hpp)
  std::optional<wire::PacketKey> tag_key;
  // --device a,b: a port set, one whole run per device (its own backend,
  // workers, streams and counts), all in this process; --count and
  // --expect-senders are each port's. Raw receivers only (each takes its
  // device); DPDK ports share the process's one EAL.
  std::vector<std::string> port_set;
  std::string port_device;  // one port's copy of a port set's config: its device ("" outside a set)
  bool port_checked = false;  // a later port of a set: the UDP port is free of others (the first port's guard holds it)

  // The longest frame --pcap-out keeps whole: the largest payload with any headers.
  uint32_t kept_frame_bytes() const { return max_size + static_cast<uint32_t>(net::kMaxHeadersBytes); }
};

int parse_options(int argc, char** argv, Config& cfg);

// The line that refuses --key-file on a receiver that counts in BPF.
std::string key_counted_in_kernel(const std::string& backend);

// One config per port of a port set (each with its device and
// port_device), or cfg itself when there is no set.
std::vector<Config> port_configs(const Config& cfg);

// Exit codes (README "Exit codes").
inline constexpr int kExitVerdict = 3;  // --max-loss exceeded, or nothing arrived that was asked for

}  // namespace rateline::rx
