// pktgen's configuration, parsed and validated once (options.cpp). The
// workers read only the per-worker plan built from it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/frame.hpp"
#include "net/ip_range.hpp"
#include "net/pcap_file.hpp"
#include "report/metrics_server.hpp"
#include "util/units.hpp"
#include "wire/packet_tag.hpp"

namespace rateline::pktgen {

// Streams (one per flow) one run may have (rx tracks 256 by default: --max-streams).
inline constexpr uint32_t kMaxFlows = 4096;

enum class RateLayer { payload, l2, l1 };

struct Config {
  uint32_t burst = 100;
  uint64_t delay_ns = 0;
  uint64_t count = 0;        // 0 = until --duration or Ctrl-C
  uint64_t duration_ns = 0;  // 0 = no limit
  uint32_t size = 1400;      // UDP payload bytes; a size mix: its largest
  // A size mix (--size a,b,c, --imix): UDP payload bytes and weights, in the
  // order given. Empty: every packet is `size`.
  std::vector<uint32_t> mix_sizes;
  std::vector<uint32_t> mix_weights;
  bool sizes_as_l2 = false;  // --size-layer l2: the sizes were given as Ethernet frames (for the report)
  std::optional<units::Rate> rate;
  RateLayer rate_layer = RateLayer::payload;
  std::string dst = "127.0.0.1";  // a --dst range: its first address
  net::IpRange dst_range;         // --dst as given: one address or a range, one flow per address
  uint16_t port = 9000;
  std::optional<units::PortRange> src_ports;
  std::optional<units::PortRange> dst_ports;  // --port A-B: a range of destination ports (port = its first)
  std::optional<uint64_t> flows_random_seed;  // --flows-random: flow turns in a random order per round
  bool ipv6 = false;
  unsigned threads = 1;
  std::string cores;         // "" = not pinned, "auto", or a list
  std::string backend = "auto";
  uint32_t batch = 32;
  int sndbuf_bytes = 0;
  std::string device;
  std::string dst_mac;       // raw backends: destination MAC; default from the neighbour table (a range: its first)
  std::optional<net::MacRange> dst_mac_range;  // --dst-mac A-B: one flow per MAC (raw backends)
  std::string src_ip;        // raw backends: source address; default the kernel's choice towards dst (a range: its first)
  std::optional<net::IpRange> src_range;  // --src-ip A-B: one flow per address (raw backends)
  // --vlan: 802.1Q tag control words (PCP << 13 | VID), outermost first;
  // two are QinQ (an 802.1ad S-tag, then a C-tag). Raw backends only.
  std::vector<uint16_t> vlan_tci;
  std::vector<std::string> dpdk_args;  // EAL arguments: --dpdk-args split at spaces, then all after "--"
  uint32_t end_markers = 3;
  bool gso = false;
  bool rtt = false;  // --rtt: read the packets a receiver reflects (rx --reflect) and report round trips
  // --key-file: every packet starts with this key's tag (wire/packet_tag.hpp);
  // --size and the mix's sizes count it (the test payload is kTagBytes shorter).
  std::string key_file;
  std::optional<wire::PacketKey> tag_key;
  uint32_t tag_bytes() const { return tag_key ? wire::kTagBytes : 0; }
  std::string json_path;
  std::string csv_path;  // --csv: progress and result records as CSV rows
  bool quiet = false;
  std::string pcap_out;  // --pcap-out: the frames go to this pcap file (the pcap backend)
  std::string replay_path;  // --replay: send this capture's frames as they are
  std::shared_ptr<const net::PcapFrames> replay;  // its frames, read and checked by parse_options
  bool replay_stamp = false;  // --replay-stamp: our payload in its UDP frames (engine/replay_stamps.hpp)
  report::MetricsOptions metrics;  // --metrics, --metrics-textfile, --metrics-linger
  // --device a,b: a port set, one whole run per device (its own backend,
  // workers and counts, as TRex and Pktgen-DPDK run one per port), all in
  // this process and started together; --dst x,y pairs with the devices (one
  // --dst: every port's). --count and --rate are each port's. DPDK ports
  // share the process's one EAL (--dpdk-args names them all).
  struct Port {
    std::string device, dst;
    net::IpRange dst_range;
  };
  std::vector<Port> port_set;
  std::string port_device;  // one port's copy of a port set's config: its device ("" outside a set)

  // Flows: one per source port x source address x destination port x destination address x destination MAC.
  uint64_t flow_count() const {
    return uint64_t{src_ports ? src_ports->count() : 1} * (src_range ? src_range->count : 1) *
           (dst_ports ? dst_ports->count() : 1) * dst_range.count * (dst_mac_range ? dst_mac_range->count : 1);
  }
  bool has_flow_ranges() const { return src_ports || src_range || dst_ports || dst_range.count > 1 || dst_mac_range; }

  // A packet of `payload` bytes at each layer, VLAN tags included.
  net::FrameSizes frame_sizes(uint32_t payload) const {
    return net::FrameSizes::for_payload(payload, ipv6, static_cast<unsigned>(vlan_tci.size()));
  }
};

// The line that refuses --vlan on a backend that sends through the IP stack.
std::string vlan_needs_frames(const std::string& backend);
// The same for a --src-ip range: the kernel picks a socket's source address.
std::string src_range_needs_frames(const std::string& backend);
// The same for a --dst-mac range: the kernel picks a socket's next hop.
std::string mac_range_needs_frames(const std::string& backend);
// The line that refuses --key-file on a backend whose packets BPF writes.
std::string key_needs_user_space(const std::string& backend);
// The line that refuses --rtt on a backend whose replies cannot be read.
std::string rtt_needs_replies(const std::string& backend);

// One config per port of a port set (each with its device, destination and
// port_device), or cfg itself when there is no set.
std::vector<Config> port_configs(const Config& cfg);

// Parses argv into cfg. Returns -1 to run, else the exit code (help: 0, bad input: 2).
int parse_options(int argc, char** argv, Config& cfg);

}  // namespace rateline::pktgen
