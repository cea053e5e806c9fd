#include <CLI/CLI.hpp>

#include <cinttypes>
#include <cstdio>
#include <sstream>
#include <string_view>

#include "engine/rx_loop.hpp"
#include "backend.hpp"
#include "report/metrics_options.hpp"
#include "rx_config.hpp"
#include "topo/topology.hpp"
#include "util/cli.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "util/key_file.hpp"
#include "util/units.hpp"

namespace rateline::rx {

namespace {
// MemAvailable from /proc/meminfo, in bytes (0 when unknown).
uint64_t mem_available_bytes() {
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kib = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %" SCNu64 " kB", &kib) == 1) break;
  std::fclose(f);
  return kib * 1024;
}
}  // namespace

namespace {

// The longest --port range: each port of it is held by a guard socket.
constexpr uint64_t kMaxPortRange = 1024;

// Why a receiver cannot be one port of a set ("" when it can).
std::string port_set_refusal(const std::string& backend, bool frames) {
  if (frames) return "";
  return "a port set takes each device with a raw receiver (afpacket, afxdp, xdp or dpdk); the " + backend +
         " backend reads sockets, not a device: run one rx per port, or give --backend afpacket";
}

}  // namespace

std::string key_counted_in_kernel(const std::string& backend) {
  return "--key-file: the " + backend + " receiver counts in a BPF program, which cannot check a tag: receive with "
         "afxdp, afpacket, dpdk or a socket backend";
}

int parse_options(int argc, char** argv, Config& cfg) {
  CLI::App app{"rx: receive a pktgen stream, check every packet, count what arrived and what was missed", "rx"};
  std::string port = "9000", count, rcvbuf = "4M", idle = "10", duration, max_size = "9000", max_streams = "256", batch = "64", pcap_max = "1000";
  auto* count_opt = app.add_option("-n,--count", count,
                                   "count packets (the default mode); with a value N, expect N packets: stop once N "
                                   "arrived and count N minus received as lost when no end marker came");
  count_opt->expected(0, 1);
  app.add_option("--bind", cfg.bind, "local address to receive on (default 0.0.0.0, :: with --ipv6)");
  app.add_option("-p,--port", port, "UDP port, or a range 9000-9003 (raw receivers: a flow per port, as pktgen --port sends)")
      ->capture_default_str();
  app.add_flag("-6,--ipv6", cfg.ipv6, "receive on IPv6 (and IPv4-mapped)");
  app.add_option("--threads", cfg.threads, "receiving workers (one SO_REUSEPORT socket each)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--cores", cfg.cores, "pin workers: auto or a list 1,3-4");
  app.add_option("--backend", cfg.backend, "I/O backend")
      ->check(CLI::IsMember(drivers::backend_choices()))
      ->capture_default_str();
  app.add_option("--rcvbuf", rcvbuf, "socket receive buffer (forced past rmem_max when root); 0 = kernel default")
      ->capture_default_str();
  app.add_option("--idle", idle, "end this long after the last packet: s by default, 0 = never")->capture_default_str();
  app.add_option("-d,--duration", duration, "end after this long in all");
  app.add_option("--max-size", max_size, "largest UDP payload kept whole (bigger ones count as malformed)")
      ->capture_default_str();
  app.add_option("--max-streams", max_streams, "stream ids tracked (pktgen: one per source port or thread)")
      ->capture_default_str();
  app.add_option("--batch", batch, "datagrams per backend call")->capture_default_str();
  std::string max_loss;
  app.add_option("--max-loss", max_loss,
                 "verdict: exit 3 when loss exceeds this percentage (also when --count or --expect-senders "
                 "was given and nothing arrived)");
  app.add_option("--expect-senders", cfg.expect_senders,
                 "senders (pktgen runs) to wait for before end markers end the run; fewer: exit 3 with --max-loss")
      ->check(CLI::Range(1, 65536));
  app.add_option("--device", cfg.device, "receive only on this interface (SO_BINDTODEVICE; dpdk: the port, by id or name)");
  std::string dpdk_args;
  app.add_option("--dpdk-args", dpdk_args,
                 "--backend dpdk: EAL arguments, e.g. \"--no-pci --vdev=net_tap0,iface=rltap0\" (also: all after --)");
  app.add_option("--json", cfg.json_path, "write JSON lines to this file (- for stdout)");
  app.add_option("--pcap-out", cfg.pcap_out,
                 "write the first --pcap-max frames received, and the bad ones after them (corrupt, malformed, wrong "
                 "UDP checksum; per worker up to 1000 or --pcap-max), to this pcap file when the run ends (socket backends: with headers "
                 "made from the sender's address)");
  app.add_option("--pcap-max", pcap_max, "frames --pcap-out keeps from the start (and bad ones after)")->capture_default_str();
  bool reflect = false;
  std::string reflect_every;
  app.add_flag("--reflect", reflect,
               "send each data packet back to its sender unchanged (stamps untouched), for pktgen --rtt's round "
               "trip; only packets that passed every check go back (socket, uring, afpacket)");
  app.add_option("--reflect-every", reflect_every, "with --reflect: send back every Nth data packet only (default 1)");
  app.add_option("--key-file", cfg.key_file,
                 "count only packets that start with this file's tag (pktgen --key-file with the same file); the "
                 "rest are `unauthenticated` and touch no stream. Not with --backend xdp (it counts in BPF)");
  app.add_option("--csv", cfg.csv_path,
                 "write the progress and result records as CSV to this file (- for stdout): columns are the JSON "
                 "field names, nested ones joined with '.'; written whole at the end");
  app.add_flag("-q,--quiet", cfg.quiet, "no live progress line");
  app.add_option("--test-slow-us", cfg.test_slow_us,
                 "TEST AID, not for measurements: sleep N us after each received batch (a slow consumer on "
                 "purpose, to provoke socket drops)")
      ->check(CLI::Range(0, 1000000));
  app.add_flag("--layers", cfg.layers,
               "--backend xdp: count our packets at the driver (XDP, then passed on) and again at the sockets; "
               "the report shows both and the difference");
  app.add_option("--xdp-cleanup", cfg.xdp_cleanup,
                 "detach any XDP program from this interface and exit (for programs left by other tools or old kernels)");
  report::MetricsOptionParser metrics;
  metrics.add_to(app);
  app.set_version_flag("--version", "rx (rateline) 0.1.0");

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
    if (!count.empty())
      cfg.expect = in_range<uint64_t>("--count", convert("--count", [&] { return units::parse_count(count); }), 1, 1'000'000'000'000'000ull);
    cfg.rcvbuf_bytes = static_cast<int>(in_range<uint64_t>("--rcvbuf", convert("--rcvbuf", [&] { return units::parse_bytes(rcvbuf); }), 0, 1ull << 30));
    cfg.idle_ns = in_range<uint64_t>("--idle", convert("--idle", [&] { return units::parse_duration_ns(idle, kNsPerSec); }), 0, 86400 * kNsPerSec);
    if (!duration.empty())
      cfg.duration_ns = in_range<uint64_t>("--duration", convert("--duration", [&] { return units::parse_duration_ns(duration, kNsPerSec); }), 1, 366ull * 86400 * kNsPerSec);
    cfg.max_size = static_cast<uint32_t>(in_range<uint64_t>("--max-size", convert("--max-size", [&] { return units::parse_bytes(max_size); }), 64, 65535));
    cfg.max_streams = static_cast<uint32_t>(in_range<uint64_t>("--max-streams", convert("--max-streams", [&] { return units::parse_count(max_streams); }), 1, 65536));
    cfg.batch = static_cast<uint32_t>(in_range<uint64_t>("--batch", convert("--batch", [&] { return units::parse_count(batch); }), 1, 1024));
    if (!max_loss.empty()) {
      cfg.max_loss_pct = convert("--max-loss", [&] {
        std::size_t used = 0;
        const double v = std::stod(max_loss, &used);
        if (used != max_loss.size() && !(used + 1 == max_loss.size() && max_loss.back() == '%'))
          throw std::invalid_argument("not a percentage");
        return v;
      });
      if (!(cfg.max_loss_pct >= 0 && cfg.max_loss_pct <= 100))
        throw cli::UsageError("--max-loss " + max_loss + ": give a percentage from 0 to 100");
    }
    // Stream state is bounded up front: refuse a setting the host cannot hold.
    const uint64_t workers = drivers::describe_backend(cfg.backend).rx_one_reader && !cfg.layers ? 1 : cfg.threads;
    cfg.stream_state_bytes = workers * uint64_t{cfg.max_streams} * engine::kStreamStateBytes;
    if (const uint64_t avail = mem_available_bytes(); avail && cfg.stream_state_bytes > avail / 2)
      throw cli::UsageError("--threads " + std::to_string(cfg.threads) + " x --max-streams " +
                            std::to_string(cfg.max_streams) + " may need " +
                            std::to_string(cfg.stream_state_bytes >> 20) + " MiB of stream state; this host has " +
                            std::to_string(avail >> 20) + " MiB available (at most half of it may go to streams)");
    const units::PortRange ports = convert("--port", [&] { return units::parse_port_range(port); });
    cfg.port = ports.first;
    cfg.port_count = static_cast<uint16_t>(in_range<uint64_t>("--port range", ports.count(), 1, kMaxPortRange));
    if (cfg.port_count > 1 && !drivers::describe_backend(cfg.backend).frames)
      throw cli::UsageError("--port " + port + ": a range needs a raw receiver, which takes every port of it on one "
                            "device: --backend afpacket, afxdp, xdp or dpdk (sockets listen on one port)");
    if (cfg.layers && cfg.port_count > 1) throw cli::UsageError("--layers counts again at a socket, which listens on one port: drop the --port range");
    if (cfg.layers && !drivers::describe_backend(cfg.backend).rx_layers) throw cli::UsageError("--layers needs --backend xdp (the driver layer is an XDP program)");
    if (cfg.bind.empty()) cfg.bind = cfg.ipv6 ? "::" : "0.0.0.0";
    // A bad address is bad usage: refused here, before any socket or program is set up.
    try {
      drivers::make_address(cfg.bind, cfg.port);
    } catch (const SetupError& e) {
      throw cli::UsageError(std::string("--bind: ") + e.what());
    }
    // A bad CPU list is a usage error: found here, not at setup.
    if (!cfg.cores.empty() && cfg.cores != "auto")
      convert("--cores", [&] { return topo::place_workers(cfg.threads, cfg.cores).text; });
    cfg.pcap_max = static_cast<uint32_t>(in_range<uint64_t>("--pcap-max", convert("--pcap-max", [&] { return units::parse_count(pcap_max); }), 1, 100'000));
    if (!cfg.pcap_out.empty()) {
      const uint64_t keep = workers * engine::frame_keeper_bytes(cfg.pcap_max, cfg.kept_frame_bytes());
      if (const uint64_t avail = mem_available_bytes(); avail && cfg.stream_state_bytes + keep > avail / 2)
        throw cli::UsageError("--pcap-max " + std::to_string(cfg.pcap_max) + " with --max-size " + std::to_string(cfg.max_size) +
                              " may keep " + std::to_string(keep >> 20) + " MiB of frames; this host has " +
                              std::to_string(avail >> 20) + " MiB available (at most half of it may go to rx's state)");
    }
    if (!cfg.pcap_out.empty() && drivers::describe_backend(cfg.backend).rx_in_kernel)
      throw cli::UsageError("--pcap-out: --backend " + cfg.backend + " counts in the kernel, no frame reaches rx; "
                            "receive with afxdp, afpacket, socket, uring or dpdk to keep frames");
    if (!reflect_every.empty() && !reflect) throw cli::UsageError("--reflect-every needs --reflect");
    if (reflect) {
      cfg.reflect_every = reflect_every.empty() ? 1 : static_cast<uint32_t>(in_range<uint64_t>(
          "--reflect-every", convert("--reflect-every", [&] { return units::parse_count(reflect_every); }), 1, 1'000'000));
      if (cfg.backend != "auto" && !drivers::describe_backend(cfg.backend).rx_reflects)
        throw cli::UsageError("--reflect: --backend " + cfg.backend + " cannot send packets back; receive with socket, uring, afpacket, afxdp, dpdk or xdp");
      if (cfg.layers) throw cli::UsageError("--reflect with --layers: a frame sent back cannot also go on to the sockets; drop one");
    }
    if (!cfg.key_file.empty()) {
      if (cfg.backend != "auto" && !drivers::describe_backend(cfg.backend).packet_tags)
        throw cli::UsageError(key_counted_in_kernel(cfg.backend));
      cfg.tag_key = cli::file_option([&] { return wire::packet_key(secret::load_key_file(cfg.key_file)); });
    }
    cfg.metrics = metrics.parse();
    cfg.port_set = cli::port_devices(cfg.device);
    if (!cfg.port_set.empty()) {
      const std::string set = "--device " + cfg.device;
      const drivers::BackendDescriptor& b = drivers::describe_backend(cfg.backend);
      if (cfg.backend == "auto")
        throw cli::UsageError(set + ": give the raw receiver each port runs: --backend afpacket, afxdp, xdp or dpdk");
      if (const std::string no = port_set_refusal(cfg.backend, b.frames); !no.empty())
        throw cli::UsageError(set + ": " + no);
      if (!cfg.pcap_out.empty()) throw cli::UsageError(set + ": --pcap-out writes one run's frames: run one rx per port");
      if (cfg.metrics.endpoint || !cfg.metrics.textfile.empty())
        throw cli::UsageError(set + ": --metrics serves one run's page: run one rx per port to scrape each");
      cfg.device = cfg.port_set.front();
    }
  } catch (const cli::UsageError& e) {
    std::fprintf(stderr, "rx: %s\n", e.what());
    return cli::kUsageExit;
  }
  return -1;
}

std::vector<Config> port_configs(const Config& cfg) {
  if (cfg.port_set.empty()) return {cfg};
  std::vector<Config> ports;
  for (const std::string& device : cfg.port_set) {
    Config& c = ports.emplace_back(cfg);
    c.port_set.clear();
    c.device = c.port_device = device;
    c.port_checked = ports.size() > 1;
  }
  return ports;
}

}  // namespace rateline::rx
