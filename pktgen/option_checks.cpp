// What pktgen's option values mean and whether they fit together: sizes and
// weights, VLAN tags, port sets, --pcap-out and --replay, --key-file, and the
// one-line refusals a backend's descriptor calls for. parse_options()
// (options.cpp) declares the options and calls these once they are read.
#include "option_checks.hpp"

#include <algorithm>
#include <stdexcept>

#include "engine/replay_stamps.hpp"
#include "engine/size_mix.hpp"
#include "net/frame.hpp"
#include "net/iface.hpp"
#include "backend.hpp"
#include "util/cli.hpp"
#include "util/errors.hpp"
#include "util/key_file.hpp"
#include "wire/test_payload.hpp"

namespace rateline::pktgen {

namespace {

// One size of --size, in UDP payload bytes (as_l2: given as an Ethernet
// frame incl. FCS: less the Ethernet, IP and UDP headers and the FCS).
uint32_t payload_of_size(const Config& cfg, const std::string& text, bool as_l2, uint64_t max_payload) {
  const uint64_t given = cli::convert("--size", [&] { return units::parse_bytes(text); });
  if (!as_l2) return static_cast<uint32_t>(cli::in_range<uint64_t>("--size", given, wire::kMinPayloadBytes, max_payload));
  // A frame size names the untagged frame (RFC 2544's sizes; 802.1Q makes a
  // tagged frame 4 B longer: 1518 B untagged is 1522 B tagged).
  const uint64_t headers = net::FrameSizes::for_payload(wire::kMinPayloadBytes, cfg.ipv6).l2 - wire::kMinPayloadBytes;
  if (given < headers + wire::kMinPayloadBytes)
    throw cli::UsageError("--size " + text + " --size-layer l2: a " + text + " B frame leaves " +
                          (given > headers ? std::to_string(given - headers) : std::string("no")) + " B of UDP payload" +
                          (cfg.ipv6 ? " over IPv6" : "") + "; rateline's header needs 18 (the smallest frame here is " +
                          std::to_string(headers + wire::kMinPayloadBytes) + " B)");
  return static_cast<uint32_t>(cli::in_range<uint64_t>("--size", given - headers, wire::kMinPayloadBytes, max_payload));
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  for (size_t comma; (comma = text.find(',', start)) != std::string::npos; start = comma + 1)
    items.push_back(text.substr(start, comma - start));
  items.push_back(text.substr(start));
  return items;
}

}  // namespace

// --size (one size or a list), --weights, --size-layer into cfg.size and,
// for a list, cfg.mix_sizes / mix_weights.
void parse_sizes(Config& cfg, const std::string& size, const std::string& weights, bool as_l2, uint64_t max_payload) {
  const std::vector<std::string> sizes = split_list(size);
  cfg.sizes_as_l2 = as_l2;
  if (sizes.size() == 1) {
    if (!weights.empty()) throw cli::UsageError("--weights " + weights + " needs a size list (--size 64,594,1518)");
    cfg.size = payload_of_size(cfg, sizes[0], as_l2, max_payload);
    return;
  }
  if (sizes.size() > engine::kMaxMixSizes)
    throw cli::UsageError("--size: " + std::to_string(sizes.size()) + " sizes; a mix has at most " +
                          std::to_string(engine::kMaxMixSizes));
  for (const std::string& s : sizes) {
    const uint32_t payload = payload_of_size(cfg, s, as_l2, max_payload);
    for (uint32_t earlier : cfg.mix_sizes)
      if (earlier == payload) throw cli::UsageError("--size " + size + " lists " + s + " twice: give each size once, with its weight");
    cfg.mix_sizes.push_back(payload);
  }
  if (weights.empty()) {
    cfg.mix_weights.assign(sizes.size(), 1);
  } else {
    const std::vector<std::string> ws = split_list(weights);
    if (ws.size() != sizes.size())
      throw cli::UsageError("--weights " + weights + ": " + std::to_string(ws.size()) + " weights for " +
                            std::to_string(sizes.size()) + " sizes (" + size + "): give one per size");
    uint64_t total = 0;
    for (const std::string& w : ws) {
      if (w.empty() || w.size() > 4 || w.find_first_not_of("0123456789") != std::string::npos || std::stoul(w) == 0)
        throw cli::UsageError("--weights " + weights + ": each weight is a whole number from 1 to " +
                              std::to_string(engine::kMaxMixCycle));
      cfg.mix_weights.push_back(static_cast<uint32_t>(std::stoul(w)));
      total += cfg.mix_weights.back();
    }
    if (total > engine::kMaxMixCycle)
      throw cli::UsageError("--weights " + weights + ": they add up to " + std::to_string(total) + "; at most " +
                            std::to_string(engine::kMaxMixCycle) + " (the cycle the sizes follow)");
  }
  cfg.size = *std::max_element(cfg.mix_sizes.begin(), cfg.mix_sizes.end());
}


std::string vlan_needs_frames(const std::string& backend) {
  return "--vlan: --backend " + backend + " sends through the kernel's IP stack, which cannot tag; give a raw " +
         "backend (afpacket, afxdp, xdp, dpdk) or send to the address of a VLAN interface (ip link add link IF " +
         "name IF.ID type vlan id ID)";
}

std::string src_range_needs_frames(const std::string& backend) {
  return "--src-ip: --backend " + backend + " sends from the kernel's own source address; a range of source "
         "addresses needs a raw backend (afpacket, afxdp, xdp, dpdk)";
}

// --vlan ID[:PCP][,ID[:PCP]]: one 802.1Q tag, or QinQ (outer first).
std::vector<uint16_t> parse_vlan(const std::string& text) {
  const std::vector<std::string> tags = split_list(text);
  if (tags.size() > net::kMaxVlanTags)
    throw cli::UsageError("--vlan " + text + ": at most two tags (QinQ: outer,inner)");
  std::vector<uint16_t> tci;
  for (const std::string& tag : tags) {
    const size_t colon = tag.find(':');
    const std::string id = tag.substr(0, colon), pcp = colon == std::string::npos ? "0" : tag.substr(colon + 1);
    const auto number = [](const std::string& s) {
      return !s.empty() && s.size() <= 5 && s.find_first_not_of("0123456789") == std::string::npos ? std::stoul(s) : ~0ul;
    };
    if (number(id) > 4094)
      throw cli::UsageError("--vlan " + text + ": a VLAN id is a whole number from 0 to 4094 (4095 is reserved)");
    if (number(pcp) > 7) throw cli::UsageError("--vlan " + text + ": a priority (PCP, after the colon) is 0 to 7");
    tci.push_back(static_cast<uint16_t>(number(pcp) << 13 | number(id)));
  }
  return tci;
}

// What a port set cannot do (yet), said before anything opens.
void check_port_set(const Config& cfg, bool no_dst) {
  std::string set = "--device ";
  for (const Config::Port& p : cfg.port_set) set += (&p == &cfg.port_set.front() ? "" : ",") + p.device;
  if (cfg.port_set.empty()) set += cfg.device;
  if (no_dst) throw cli::UsageError(set + ": give each port its destination (--dst x,y, in the devices' order)");
  const drivers::BackendDescriptor& b = drivers::describe_backend(cfg.backend);
  // Ports on a wire: kernel interfaces, or DPDK ports sharing the process's one EAL (not null, not pcap's file).
  if (cfg.backend != "auto" && (!b.moves_packets || (b.frames && !b.kernel_interface && !b.eal_args)))
    throw cli::UsageError(set + ": a port set sends on interfaces or DPDK ports (socket, uring, afpacket, afxdp, xdp, "
                          "dpdk); --backend " + cfg.backend + " runs one port per process");
  if (!cfg.replay_path.empty() || !cfg.pcap_out.empty())
    throw cli::UsageError(set + ": --replay and --pcap-out take one device: run one pktgen per port");
  if (cfg.metrics.endpoint || !cfg.metrics.textfile.empty())
    throw cli::UsageError(set + ": --metrics serves one run's page: run one pktgen per port to scrape each");
}

// --pcap-out and --replay: which backend, how long, and the capture itself
// (read and checked here, so a bad file sends nothing and exits 2).
void check_file_options(Config& cfg) {
  if (!cfg.pcap_out.empty()) {
    if (cfg.backend == "auto") cfg.backend = "pcap";
    if (cfg.backend != "pcap")
      throw cli::UsageError("--pcap-out writes frames to a file, not through --backend " + cfg.backend + ": drop --backend");
    if (!cfg.count && !cfg.duration_ns)
      throw cli::UsageError("--pcap-out needs --count or --duration: the file must not grow without end");
  } else if (cfg.backend == "pcap") {
    throw cli::UsageError("--backend pcap needs --pcap-out FILE");
  }
  if (cfg.replay_path.empty()) {
    if (cfg.replay_stamp) throw cli::UsageError("--replay-stamp stamps the frames of a --replay FILE: give one");
    return;
  }
  if (!cfg.pcap_out.empty()) throw cli::UsageError("--replay and --pcap-out: give one of them");
  if (cfg.threads != 1) throw cli::UsageError("--replay sends one file in order: --threads 1 only");
  const drivers::BackendDescriptor& b = drivers::describe_backend(cfg.backend);
  if (!b.replays)
    throw cli::UsageError("--replay sends whole Ethernet frames: " +
                          (cfg.backend == "auto" ? std::string("give --backend afpacket, afxdp or dpdk")
                                                 : "--backend " + cfg.backend + " cannot (use afpacket, afxdp or dpdk)"));
  if (b.kernel_interface && cfg.device.empty()) throw cli::UsageError("--replay needs --device IF: the interface to send on");
  try {
    cfg.replay = std::make_shared<const net::PcapFrames>(net::read_pcap_file(cfg.replay_path));
  } catch (const net::PcapError& e) {
    throw cli::UsageError(std::string("--replay ") + e.what());
  }
  if (cfg.replay_stamp) {
    try {
      engine::plan_replay_stamps(*cfg.replay, 0, kMaxFlows);  // checked here; set_up plans it with the sender id
    } catch (const std::invalid_argument& e) {
      throw cli::UsageError("--replay-stamp: " + cfg.replay_path + " " + e.what());
    }
  }
  if (!b.kernel_interface) return;
  uint32_t mtu = 0;
  try {
    mtu = net::interface_info(cfg.device).mtu;
  } catch (const std::exception& e) {
    throw cli::UsageError(std::string("--device: ") + e.what());
  }
  const net::PcapFrames& f = *cfg.replay;
  for (size_t i = 0; mtu && i < f.size(); ++i)
    if (f.frame(i).size() > mtu + net::kEthHeaderBytes)
      throw cli::UsageError("--replay " + cfg.replay_path + ": frame " + std::to_string(i) + " is " +
                            std::to_string(f.frame(i).size()) + " B, longer than " + cfg.device + "'s MTU " +
                            std::to_string(mtu) + " + 14 B of Ethernet header");
}

// --key-file: read the key, and check that every packet has room for the
// tag before the smallest test payload and a sender that writes tags.
void check_key_file(Config& cfg) {
  if (cfg.key_file.empty()) return;
  if (!cfg.replay_path.empty()) throw cli::UsageError("--replay sends the capture's frames byte for byte: drop --key-file");
  // auto: checked once it has chosen (setup.cpp).
  if (cfg.backend != "auto" && !drivers::describe_backend(cfg.backend).packet_tags)
    throw cli::UsageError(key_needs_user_space(cfg.backend));
  const uint32_t smallest = cfg.mix_sizes.empty() ? cfg.size : *std::min_element(cfg.mix_sizes.begin(), cfg.mix_sizes.end());
  const uint32_t need = wire::kMinPayloadBytes + wire::kTagBytes;
  if (smallest < need)
    throw cli::UsageError("--key-file puts an 8 B tag before the test payload: a " + std::to_string(smallest) +
                          " B payload leaves " + std::to_string(smallest - wire::kTagBytes) + " B, the short header needs " +
                          std::to_string(wire::kMinPayloadBytes) + " (--size " + std::to_string(need) +
                          " or more: a " + std::to_string(cfg.frame_sizes(need).l2) + " B frame)");
  cfg.tag_key = cli::file_option([&] { return wire::packet_key(secret::load_key_file(cfg.key_file)); });
}


std::string mac_range_needs_frames(const std::string& backend) {
  return "--dst-mac range: --backend " + backend + " sends through the IP stack, which picks the MAC: send with "
         "afpacket, afxdp, xdp or dpdk";
}

std::string rtt_needs_replies(const std::string& backend) {
  return "--rtt: --backend " + backend + " cannot read the replies; send with socket, uring, afpacket, afxdp, xdp or dpdk";
}

std::string key_needs_user_space(const std::string& backend) {
  return "--key-file: --backend " + backend + " makes its packets in a BPF program, which cannot tag them: send with "
         "afxdp, afpacket or a socket backend";
}

}  // namespace rateline::pktgen
