// pktgen's command line: every option declared once (CLI11), read into a Config,
// then checked (option_checks.cpp) before anything opens.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "engine/replay_stamps.hpp"
#include "engine/size_mix.hpp"
#include "net/frame.hpp"
#include "net/iface.hpp"
#include "option_checks.hpp"
#include "pktgen_config.hpp"
#include "report/metrics_options.hpp"
#include "backend.hpp"
#include "topo/topology.hpp"
#include "util/cli.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "util/key_file.hpp"
#include "wire/test_payload.hpp"

namespace rateline::pktgen {

int parse_options(int argc, char** argv, Config& cfg) {
  CLI::App app{"pktgen: send bursts of numbered, timestamped, checksummed UDP packets (udp_bench b-t-n-s)", "pktgen"};
  std::string burst = "100", delay = "0", count, duration, size = "1400", rate, rate_layer = "payload";
  std::string weights, size_layer = "payload";
  bool imix = false;
  std::string dst_ports = "9000", src_ports, flows_random, batch = "32", sndbuf, end_markers = "3";
  std::string dst, vlan;
  app.add_option("-b,--burst", burst, "packets per burst (udp_bench b)")->capture_default_str();
  app.add_option("-t,--delay", delay, "wait between bursts (udp_bench t): ms by default, or 250us, 1.5ms, 2s, 0")
      ->capture_default_str();
  app.add_option("-n,--count", count, "packets in all (udp_bench n), e.g. 100000 or 100k; default: until --duration or Ctrl-C");
  app.add_option("-d,--duration", duration, "stop after this long: s by default, or 500ms, 2min");
  app.add_option("-s,--size", size, "UDP payload bytes per packet (udp_bench s), at least 18 (a 64 B IPv4 frame; below 32 the short header, docs/wire-format.md); a list 64,594,1518 mixes sizes (--weights)")->capture_default_str();
  app.add_option("--weights", weights, "a size list's shares, one per size, e.g. 7,4,1 (default: equal); the sizes "
                 "interleave in a fixed cycle of sum(weights) packets");
  app.add_flag("--imix", imix, "the simple IMIX: 64, 594 and 1518 B Ethernet frames 7:4:1 "
               "(--size 64,594,1518 --size-layer l2 --weights 7,4,1)");
  app.add_option("--size-layer", size_layer, "what --size counts: payload (UDP payload bytes) or l2 (Ethernet frame "
                 "incl. FCS, as RFC 2544 names sizes)")
      ->check(CLI::IsMember({"payload", "l2"}))
      ->capture_default_str();
  app.add_option("-r,--rate", rate, "packets/s (100k, 10kpps) or bits/s (100Mbit, 1Gbps); excludes --delay");
  app.add_option("--rate-layer", rate_layer, "which bits a bit/s --rate counts: payload, l2 or l1")
      ->check(CLI::IsMember({"payload", "l2", "l1"}))
      ->capture_default_str();
  app.add_option("--dst,--dst-ip", dst, "destination IPv4/IPv6 address (default 127.0.0.1, ::1 with --ipv6), or a "
                 "range 10.0.0.1-10.0.0.8: one flow, and one stream, per address");
  app.add_option("-p,--port,--dst-port", dst_ports, "destination UDP port, or a range (9000-9003): one flow per port")
      ->capture_default_str();
  app.add_option("--src-port", src_ports, "source port or range (5000-5007): one flow, and one stream, per port");
  app.add_option("--flows-random", flows_random,
                 "SEED: each round of flow turns (one batch per flow) in a random order drawn from SEED; the flows "
                 "still share evenly");
  app.add_flag("-6,--ipv6", cfg.ipv6, "send over IPv6");
  app.add_option("--threads", cfg.threads, "sending workers")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--cores", cfg.cores, "pin workers: auto (one per physical core, not the main one) or a list 1,3-4");
  app.add_option("--backend", cfg.backend, "I/O backend")
      ->check(CLI::IsMember(drivers::backend_choices()))
      ->capture_default_str();
  app.add_option("--batch", batch, "packets per backend call")->capture_default_str();
  app.add_option("--sndbuf", sndbuf, "socket send buffer bytes (4M, 256k)");
  app.add_option("--device", cfg.device, "send through this interface (SO_BINDTODEVICE; raw backends: the interface; dpdk: the port, by id or name)");
  app.add_option("--dst-mac", cfg.dst_mac, "raw backends: destination MAC (default: the kernel's neighbour entry), or "
                 "a range 02:00:00:00:00:01-02:00:00:00:00:08: one flow per MAC");
  app.add_option("--vlan", vlan, "raw backends: an 802.1Q tag ID[:PCP] (100, 100:5), or QinQ outer,inner "
                 "(200,100:5); the socket path cannot tag (send to a VLAN interface instead)");
  app.add_option("--src-ip", cfg.src_ip, "raw backends: source address (default: the kernel's choice towards --dst), "
                 "or a range 10.0.0.1-10.0.0.8: one flow per address");
  std::string dpdk_args;
  app.add_option("--dpdk-args", dpdk_args,
                 "--backend dpdk: EAL arguments, e.g. \"--no-pci --vdev=net_tap0,iface=rltap0\" (also: all after --)");
  app.add_option("--end-markers", end_markers, "end-marker copies per stream (they carry the exact total)")
      ->capture_default_str();
  app.add_option("--json", cfg.json_path, "write JSON lines to this file (- for stdout)");
  app.add_option("--csv", cfg.csv_path,
                 "write the progress and result records as CSV to this file (- for stdout): columns are the JSON "
                 "field names, nested ones joined with '.'; written whole at the end");
  app.add_flag("-q,--quiet", cfg.quiet, "no live progress line");
  app.add_flag("--gso", cfg.gso,
               "socket backend: UDP GSO, one sendmsg per batch cut into datagrams by the kernel (a veth/lo counts "
               "such a batch as one packet unless tx-udp-segmentation is off on it)");
  app.add_flag("--rtt", cfg.rtt,
               "round-trip latency under this load: read the packets rx --reflect sends back and report their round "
               "trip (this host's clock at both ends); socket, uring, afpacket, afxdp");
  app.add_option("--pcap-out", cfg.pcap_out,
                 "write the frames instead of sending them: to this classic pcap file (Ethernet, ns stamps = send "
                 "stamps, in stamp order across --threads), end markers included, paced as asked; needs --count or --duration");
  app.add_option("--replay", cfg.replay_path,
                 "send this pcap capture's frames byte for byte, in file order (--backend afpacket or afxdp, "
                 "--device IF, or dpdk); --count = frames, looping over the file (default: the file once)");
  app.add_option("--key-file", cfg.key_file,
                 "start every packet with an 8 B tag keyed by this file's secret (SipHash-2-4; rx --key-file with "
                 "the same file counts only tagged packets); the tag is part of --size. Make one: ceiling --make-key FILE");
  app.add_flag("--replay-stamp", cfg.replay_stamp,
               "with --replay: each UDP frame with 18 B of payload or more carries our numbered, stamped payload "
               "instead of its own (one stream per UDP flow of the file, with end markers), so rx counts it exactly");
  report::MetricsOptionParser metrics;
  metrics.add_to(app);
  app.set_version_flag("--version", "pktgen (rateline) 0.1.0");

  // Everything after a lone "--" goes to DPDK's EAL untouched.
  std::vector<std::string> eal_tail;
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--") {
      eal_tail.assign(argv + i + 1, argv + argc);
      argc = i;
      break;
    }
  if (const int rc = cli::parse(app, argc, argv); rc >= 0) return rc;
  std::istringstream words(dpdk_args);
  for (std::string w; words >> w;) cfg.dpdk_args.push_back(w);
  cfg.dpdk_args.insert(cfg.dpdk_args.end(), eal_tail.begin(), eal_tail.end());
  try {
    using cli::convert;
    using cli::in_range;
    cfg.burst = static_cast<uint32_t>(in_range<uint64_t>("--burst", convert("--burst", [&] { return units::parse_count(burst); }), 1, 1'000'000));
    cfg.delay_ns = in_range<uint64_t>("--delay", convert("--delay", [&] { return units::parse_duration_ns(delay, kNsPerMs); }), 0, 3600 * kNsPerSec);
    if (!count.empty())
      cfg.count = in_range<uint64_t>("--count", convert("--count", [&] { return units::parse_count(count); }), 1, 1'000'000'000'000'000ull);
    if (cfg.count && cfg.count < cfg.threads)
      throw cli::UsageError("--count " + std::to_string(cfg.count) + " is less than --threads " + std::to_string(cfg.threads));
    if (!duration.empty())
      cfg.duration_ns = in_range<uint64_t>("--duration", convert("--duration", [&] { return units::parse_duration_ns(duration, kNsPerSec); }), 1, 366ull * 86400 * kNsPerSec);
    // Largest UDP payload: IPv4 65535 - 20 - 8; IPv6 payload-length field 65535 - 8 (no jumbograms).
    const uint64_t max_payload = cfg.ipv6 ? 65527 : 65507;
    if (imix) {
      if (app.get_option("--size")->count() || app.get_option("--weights")->count() || app.get_option("--size-layer")->count())
        throw cli::UsageError("--imix sets --size 64,594,1518 --size-layer l2 --weights 7,4,1: give those or --imix, not both");
      size = "64,594,1518";
      size_layer = "l2";
      weights = "7,4,1";
    }
    if (!vlan.empty()) {
      cfg.vlan_tci = parse_vlan(vlan);
      // auto: checked once it has chosen (setup.cpp).
      if (cfg.backend != "auto" && !drivers::describe_backend(cfg.backend).frames) throw cli::UsageError(vlan_needs_frames(cfg.backend));
      if (!cfg.replay_path.empty()) throw cli::UsageError("--replay sends the capture's frames byte for byte: drop --vlan");
    }
    parse_sizes(cfg, size, weights, size_layer == "l2", max_payload);
    if (!rate.empty()) {
      if (cfg.delay_ns) throw cli::UsageError("--rate and --delay both space bursts: give one of them");
      cfg.rate = convert("--rate", [&] { return units::parse_rate(rate); });
    }
    cfg.rate_layer = rate_layer == "l1" ? RateLayer::l1 : rate_layer == "l2" ? RateLayer::l2 : RateLayer::payload;
    if (cfg.rate) {
      // Bursts at most an hour apart (the --delay limit): a slower rate overflows the pacer's ns deadlines.
      const net::FrameSizes fs = cfg.frame_sizes(cfg.size);
      const uint32_t bytes = cfg.rate_layer == RateLayer::l1 ? fs.l1 : cfg.rate_layer == RateLayer::l2 ? fs.l2 : fs.payload;
      const double pps = cfg.rate->unit == units::RateUnit::pps ? cfg.rate->value : cfg.rate->value / (8.0 * bytes);
      if (cfg.burst / pps > 3600.0)
        throw cli::UsageError("--rate: " + rate + " is too slow for --burst " + std::to_string(cfg.burst) +
                              ": bursts would start more than 1 h apart");
    }
    // A bad CPU list is a usage error: found here, not at setup.
    if (!cfg.cores.empty() && cfg.cores != "auto")
      convert("--cores", [&] { return topo::place_workers(cfg.threads, cfg.cores).text; });
    // --device a,b (--dst x,y): a port set. Each destination gets the checks below; every later check sees
    // port 0's device and destination, which stand for the set's (the options are the same for every port).
    const std::vector<std::string> devices = cli::port_devices(cfg.device);
    std::vector<std::string> dsts;
    for (size_t pos = 0; !dst.empty();) {
      const size_t comma = dst.find(',', pos);
      dsts.push_back(dst.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    if (dsts.size() > 1 && dsts.size() != devices.size())
      throw cli::UsageError("--dst " + dst + ": a list names one destination per port of --device a,b, in the "
                            "same order; " + std::to_string(dsts.size()) + " destinations for " +
                            std::to_string(std::max<size_t>(devices.size(), 1)) + " device(s)");
    if (!devices.empty()) check_port_set(cfg, dst.empty());
    const auto parse_dst = [&](const std::string& text, std::string& addr, net::IpRange& range) {
      addr = text.empty() ? (cfg.ipv6 ? "::1" : "127.0.0.1") : text;
      if (addr.find('-') != std::string::npos) {
        range = convert("--dst", [&] { return net::parse_ip_range(addr, kMaxFlows); });
        addr = net::ip_text(range.first);
      }
      // A bad address is bad usage: refused here, before anything is opened or sent.
      bool dst_v6 = false;
      try {
        dst_v6 = drivers::make_address(addr, cfg.port).is_v6();
      } catch (const SetupError& e) {
        throw cli::UsageError("--dst: " + std::string(e.what()));
      }
      if (dst_v6 != cfg.ipv6)
        throw cli::UsageError("--dst " + addr + (cfg.ipv6 ? " is not an IPv6 address (drop --ipv6 or give one)" : " is IPv6: add --ipv6"));
      if (range.count == 1) range = net::parse_ip_range(addr, 1);
    };
    for (size_t i = 0; i < devices.size(); ++i) {
      Config::Port& p = cfg.port_set.emplace_back();
      p.device = devices[i];
      parse_dst(dsts.size() > 1 ? dsts[i] : dst, p.dst, p.dst_range);
    }
    if (!devices.empty()) cfg.device = devices[0];
    parse_dst(dsts.size() > 1 ? dsts[0] : dst, cfg.dst, cfg.dst_range);
    if (cfg.gso && cfg.backend != "socket") throw cli::UsageError("--gso needs --backend socket");
    if (!cfg.mix_sizes.empty()) {
      if (cfg.gso) throw cli::UsageError("--gso cuts a batch into equal datagrams: it cannot send a size mix");
      if (!cfg.replay_path.empty()) throw cli::UsageError("--replay sends the capture's own frames: drop the size list");
    }
    if (cfg.rtt) {
      if (!cfg.replay_path.empty()) throw cli::UsageError("--rtt measures our own packets: it cannot time a --replay");
      if (!cfg.pcap_out.empty()) throw cli::UsageError("--rtt needs packets on a wire: drop --pcap-out");
      if (cfg.backend != "auto" && !drivers::describe_backend(cfg.backend).tx_rtt)
        throw cli::UsageError(rtt_needs_replies(cfg.backend));
    }
    if (cfg.dst_mac.find('-') != std::string::npos) {
      cfg.dst_mac_range = convert("--dst-mac", [&] { return net::parse_mac_range(cfg.dst_mac, kMaxFlows); });
      cfg.dst_mac = net::mac_text(cfg.dst_mac_range->first);
      // auto: checked once it has chosen (setup.cpp).
      if (cfg.backend != "auto" && !drivers::describe_backend(cfg.backend).frames)
        throw cli::UsageError(mac_range_needs_frames(cfg.backend));
    }
    if (!cfg.dst_mac.empty()) convert("--dst-mac", [&] { return net::parse_mac(cfg.dst_mac); });
    if (cfg.src_ip.find('-') != std::string::npos) {
      cfg.src_range = convert("--src-ip", [&] { return net::parse_ip_range(cfg.src_ip, kMaxFlows); });
      cfg.src_ip = net::ip_text(cfg.src_range->first);
      if (cfg.src_range->first.is_v6 != cfg.ipv6) throw cli::UsageError("--src-ip and --dst are not the same IP version");
      // auto: checked once it has chosen (setup.cpp).
      if (cfg.backend != "auto" && !drivers::describe_backend(cfg.backend).frames)
        throw cli::UsageError(src_range_needs_frames(cfg.backend));
      if (cfg.rtt) throw cli::UsageError("--rtt reads replies on this host's own address: it cannot take a --src-ip range");
    }
    if (!cfg.src_ip.empty()) {
      try {
        drivers::make_address(cfg.src_ip, 0);
      } catch (const SetupError& e) {
        throw cli::UsageError(std::string("--src-ip: ") + e.what());
      }
    }
    if (!src_ports.empty()) cfg.src_ports = convert("--src-port", [&] { return units::parse_port_range(src_ports); });
    const units::PortRange ports = convert("--port", [&] { return units::parse_port_range(dst_ports); });
    cfg.port = ports.first;
    if (ports.count() > 1) cfg.dst_ports = ports;
    if (cfg.has_flow_ranges()) {
      const uint64_t flows = cfg.flow_count();
      if (flows > kMaxFlows)
        throw cli::UsageError("--src-port, --src-ip, --port, --dst and --dst-mac ranges make " + std::to_string(flows) +
                              " flows (one per port x source x port x destination x MAC): at most " +
                              std::to_string(kMaxFlows));
      if (flows < cfg.threads)
        throw cli::UsageError(std::to_string(flows) + " flows for " + std::to_string(cfg.threads) +
                              " threads: give each thread at least one flow (a longer --src-port, --src-ip or --dst range)");
      if (!cfg.replay_path.empty() && (cfg.src_range || cfg.dst_range.count > 1 || cfg.dst_ports || cfg.dst_mac_range))
        throw cli::UsageError("--replay sends the capture's frames byte for byte: drop the address ranges");
    }
    if (!flows_random.empty()) {
      if (flows_random.find_first_not_of("0123456789") != std::string::npos || flows_random.size() > 19)
        throw cli::UsageError("--flows-random: the seed is a whole number below 10^19, e.g. --flows-random 1");
      cfg.flows_random_seed = std::stoull(flows_random);
    }
    cfg.batch = static_cast<uint32_t>(in_range<uint64_t>("--batch", convert("--batch", [&] { return units::parse_count(batch); }), 1, 1024));
    if (!sndbuf.empty())
      cfg.sndbuf_bytes = static_cast<int>(in_range<uint64_t>("--sndbuf", convert("--sndbuf", [&] { return units::parse_bytes(sndbuf); }), 4096, 1ull << 30));
    cfg.end_markers = static_cast<uint32_t>(in_range<uint64_t>("--end-markers", convert("--end-markers", [&] { return units::parse_count(end_markers); }), 0, 100));
    check_file_options(cfg);
    check_key_file(cfg);
    cfg.metrics = metrics.parse();
    if (!cfg.port_set.empty()) check_port_set(cfg, false);
  } catch (const cli::UsageError& e) {
    std::fprintf(stderr, "pktgen: %s\n", e.what());
    return cli::kUsageExit;
  }
  return -1;
}

std::vector<Config> port_configs(const Config& cfg) {
  if (cfg.port_set.empty()) return {cfg};
  std::vector<Config> ports;
  for (const Config::Port& p : cfg.port_set) {
    Config& c = ports.emplace_back(cfg);
    c.port_set.clear();
    c.device = c.port_device = p.device;
    c.dst = p.dst;
    c.dst_range = p.dst_range;
  }
  return ports;
}

}  // namespace rateline::pktgen
