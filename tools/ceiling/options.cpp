#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "auth.hpp"
#include "config.hpp"
#include "net/frame.hpp"
#include "process.hpp"
#include "backend.hpp"
#include "report/metrics_options.hpp"
#include "report/output_file.hpp"
#include "server.hpp"
#include "util/cli.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "wire/test_payload.hpp"

namespace rateline::ceiling {

namespace {

double parse_percent(const char* option, std::string text, double lo, double hi) {
  if (!text.empty() && text.back() == '%') text.pop_back();
  double v = 0;
  try {
    size_t used = 0;
    v = std::stod(text, &used);
    if (used != text.size()) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw cli::UsageError(std::string(option) + ": '" + text + "' is not a percentage (e.g. 0.5%)");
  }
  if (v < lo || v > hi)
    throw cli::UsageError(std::string(option) + ": " + text + "% is out of range (" + std::to_string(lo) + ".." +
                          std::to_string(hi) + "%)");
  return v / 100.0;
}

std::vector<std::string> split_list(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    size_t start = 0;
    while (start <= item.size()) {
      const size_t c = item.find(',', start);
      const std::string part = item.substr(start, c == std::string::npos ? std::string::npos : c - start);
      if (!part.empty()) out.push_back(part);
      if (c == std::string::npos) break;
      start = c + 1;
    }
  }
  return out;
}

// A numeric address option: bad usage, found before anything is built.
void check_address(const char* option, const std::string& ip) {
  try {
    drivers::make_address(ip, 0);
  } catch (const SetupError& e) {
    throw cli::UsageError(std::string(option) + ": " + e.what());
  }
}

// The program that runs each trial's sender or receiver. Named (on the command
// line or in $PKTGEN/$RX) and missing: bad usage. Found nowhere: a setup error.
void check_program(const std::string& program, const char* option, const char* env_var, bool given) {
  if (runnable(program)) return;
  const std::string name = option + 2;  // "--pktgen" -> "pktgen"
  if (given)
    throw cli::UsageError(std::string(option) + " " + program + ": no such executable file (give the path to a built " +
                          name + ")");
  const char* env = std::getenv(env_var);
  if (env && *env)
    throw cli::UsageError(std::string("$") + env_var + "=" + program + ": no such executable file (give --" + name +
                          " PATH, or fix $" + env_var + ")");
  throw SetupError("Couldn't find " + name + " ($" + env_var + ", next to ceiling in the build tree, PATH): give " +
                   option + " PATH");
}

}  // namespace

int parse_options(int argc, char** argv, Config& cfg) {
  for (int i = 1; i < argc; ++i) cfg.argv.emplace_back(argv[i]);
  CLI::App app{
      "ceiling: the highest UDP rate a receiver takes with zero loss (NDR) and with loss <= 0.5% (PDR), per frame "
      "size (RFC 2544 26.1), and the longest back-to-back burst (26.4), with a drop ledger per trial.\n"
      "Modes: (default) local lab: both ends in network namespaces made here;\n"
      "       --remote HOST:PORT --dst ADDR: send from here to a receiver running `ceiling --serve PORT`;\n"
      "       --serve [ADDR:]PORT: the receiver's agent (runs one rx per trial; binds 127.0.0.1 unless given ADDR,\n"
      "       and any other address needs --key-file on both ends: make one with `ceiling --make-key FILE`).",
      "ceiling"};
  std::string remote, listen, trial = "2s", resolution = "1%", pdr = "0.5%", max_rate, min_rate = "10", rate_layer = "l1";
  std::string burst = "auto", tests = "throughput,back-to-back", b2b_max = "65536", b2b_repeats = "5", b2b_gap = "100ms";
  std::string drain = "1s", max_trials = "20", rx_rcvbuf, rate_trials = "1", exceed_ratio = "0";
  std::string min_ndr, serve_idle = "10s", serve_session = "600s", max_threads = "4", max_rcvbuf = "64M",
              ports = "9000-9099", max_trial = "60s", max_clients = "8", make_key;
  std::vector<std::string> frame_sizes_in, sizes_in;
  bool serve_stdio = false, lab_child = false;

  app.add_option("--remote", remote, "send from here to HOST:PORT, a receiver running `ceiling --serve PORT`");
  app.add_option("--serve", listen,
                 "be the receiver's agent on TCP [ADDR:]PORT (ADDR default 127.0.0.1, [::] for IPv6; one session at a time)");
  app.add_option("--key-file", cfg.key_file,
                 "--serve / --remote: the shared secret (32+ random bytes, mode 0600) both ends prove they hold, "
                 "per session (HMAC challenge-response); needed to serve on any non-loopback address")
      ->option_text("FILE");
  app.add_option("--make-key", make_key, "write a new random key to FILE (mode 0600) and exit: copy it to the other host")
      ->option_text("FILE");
  app.add_option("--dst", cfg.dst, "--remote: the receiver's test address (where its rx listens)");
  app.add_option("--frame-sizes", frame_sizes_in,
                 "RFC 2544 frame sizes, L2 bytes incl. FCS, sent as IPv4/UDP exactly as named (payload = frame - 46; "
                 "64 carries the short header; to an IPv6 --dst frame - 66, from 84); 'none' for none")
      ->delimiter(',');
  app.add_option("-s,--size", sizes_in, "UDP payload sizes to test as well (repeat, or a comma list); default 1400")
      ->delimiter(',');
  app.add_option("--trial", trial, "trial length (RFC 2544 asks 60s; the short default suits CI)")->capture_default_str();
  app.add_option("--resolution", resolution, "search ends when the bracket is this narrow, in % of the rate")
      ->capture_default_str();
  app.add_option("--pdr", pdr, "loss ratio that still passes for the PDR")->capture_default_str();
  app.add_option("--max-rate", max_rate, "rate of the first trial (pps, or bit/s: see --rate-layer); default: unpaced");
  app.add_option("--min-rate", min_rate, "lowest rate worth trying")->capture_default_str();
  app.add_option("--rate-layer", rate_layer, "which bits a bit/s --max-rate / --min-rate counts: l1 (line rate), l2, payload")
      ->check(CLI::IsMember({"payload", "l2", "l1"}))
      ->capture_default_str();
  app.add_option("--max-trials", max_trials, "budget of rates tried per size and search")->capture_default_str();
  app.add_option("--rate-trials", rate_trials,
                 "judge each rate over up to N trials (MLRsearch); 1 = RFC 2544: one trial per rate")
      ->capture_default_str();
  app.add_option("--exceed-ratio", exceed_ratio,
                 "with --rate-trials N: a rate still passes when at most this share of its N trials lost packets "
                 "(MLRsearch's goal exceed ratio, 0 .. 0.9; 0 = any lossy trial fails it)")
      ->capture_default_str();
  app.add_option("-b,--burst", burst,
                 "packets per burst in rate trials: auto (about 1 ms of traffic, 1..64), or N (1 = evenly spaced, as "
                 "RFC 2544 has it)")
      ->capture_default_str();
  app.add_option("--tests", tests, "which tests: throughput, back-to-back (comma list)")->capture_default_str();
  app.add_option("--b2b-max", b2b_max, "longest burst the back-to-back test tries")->capture_default_str();
  app.add_option("--b2b-repeats", b2b_repeats, "bursts per back-to-back trial, all must arrive (RFC 2544: 50)")
      ->capture_default_str();
  app.add_option("--b2b-gap", b2b_gap, "pause between those bursts, for queues to drain")->capture_default_str();
  app.add_option("--drain", drain, "rx ends this long after the last packet when no end marker came")->capture_default_str();
  app.add_option("-p,--port", cfg.port, "UDP test port")->capture_default_str()->check(CLI::Range(1024, 65535));
  app.add_option("--tx-backend", cfg.tx_backend, "pktgen --backend (afpacket bypasses the qdisc: use socket to test through tc shaping)")
      ->check(CLI::IsMember(drivers::path_backend_choices()))
      ->capture_default_str();
  app.add_option("--rx-backend", cfg.rx_backend, "rx --backend")
      ->check(CLI::IsMember(drivers::path_backend_choices()))
      ->capture_default_str();
  app.add_option("--tx-dpdk-args", cfg.tx_dpdk_args,
                 "--tx-backend dpdk: pktgen's EAL arguments (local lab default: --no-pci --vdev=net_af_packet0,iface=<sender veth>)");
  app.add_option("--rx-dpdk-args", cfg.rx_dpdk_args,
                 "--serve (or the local lab) with rx backend dpdk: rx's EAL arguments, set on the receiver only (the "
                 "control protocol never carries them; lab default: net_af_packet on the receiver's veth)");
  app.add_option("--sndbuf", cfg.sndbuf, "pktgen --sndbuf");
  app.add_option("--device", cfg.device, "the sender's interface (pktgen --device; the ledger reads its counters)");
  app.add_option("--rx-rcvbuf", rx_rcvbuf, "rx --rcvbuf");
  app.add_option("--rx-threads", cfg.rx_threads, "rx --threads")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--rx-test-slow-us", cfg.rx_test_slow_us,
                 "TEST AID: rx --test-slow-us N (the receiver sleeps N us per batch: a slow consumer on purpose)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--rx-bind", cfg.rx_bind, "--serve: the address rx listens on")->capture_default_str();
  app.add_option("--shape", cfg.shape,
                 "local lab: shape the sender's veth: `tc qdisc add dev VETH root <this>`, e.g. \"tbf rate 20mbit burst "
                 "32kbit latency 10ms\"");
  app.add_option("--pktgen", cfg.pktgen_bin, "pktgen program (default: $PKTGEN, the build tree, PATH)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--rx", cfg.rx_bin, "rx program (default: $RX, the build tree, PATH)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--json", cfg.json_path, "JSON lines: start, every trial with its ledger, one result per size");
  app.add_option("--csv", cfg.csv_path, "CSV: one row per size (the table)");
  app.add_option("--csv-trials", cfg.csv_trials_path, "CSV: one row per trial");
  app.add_option("--svg", cfg.svg_path, "SVG plot: loss vs offered rate, one panel per size");
  app.add_flag("-q,--quiet", cfg.quiet, "no live progress line");
  app.add_option("--min-ndr", min_ndr,
                 "verdict: every size's NDR must reach this rate (pps, or bit/s: see --rate-layer), else print "
                 "'verdict: FAILED' and exit 3");
  // The agent's limits: what one client may hold on the receiver, and for how long.
  const char* agent = "Receiver agent (--serve) limits";
  app.add_option("--serve-idle", serve_idle, "drop a client that sends no request for this long between trials")
      ->capture_default_str()->group(agent);
  app.add_option("--serve-session", serve_session, "close a session this long after it opened (the next client waits)")
      ->capture_default_str()->group(agent);
  app.add_option("--max-threads", max_threads, "refuse a trial asking rx for more threads")->capture_default_str()->group(agent);
  app.add_option("--max-rcvbuf", max_rcvbuf, "refuse a trial asking a larger rx receive buffer")
      ->capture_default_str()->group(agent);
  app.add_option("--ports", ports, "UDP ports a trial may ask rx to listen on (LO-HI)")->capture_default_str()->group(agent);
  app.add_option("--max-trial", max_trial,
                 "refuse a trial whose hard limit (max_ms) is longer; a sender's --trial T asks about 2T + drain + 10s")
      ->capture_default_str()->group(agent);
  app.add_option("--max-clients", max_clients,
                 "connections held at once: handshakes in progress plus the one session; more are refused")
      ->capture_default_str()->group(agent);
  app.add_flag("--serve-allow-test-aids", cfg.serve_limits.allow_test_aids,
               "take test aids (slow_us: a receiver slow on purpose) from clients; for tests only")->group(agent);
  report::MetricsOptionParser metrics;
  metrics.add_to(app);
  app.add_option("--serve-dpdk-device", cfg.serve_dpdk_device,
                 "offer backend=dpdk on this device only (rx --device; EAL -a NAME unless --rx-dpdk-args); without it, "
                 "dpdk trials are refused")->group(agent);
  // Internal: how the local lab runs its two ends.
  app.add_flag("--serve-stdio", serve_stdio)->group("");
  app.add_flag("--lab-child", lab_child)->group("");
  app.add_option("--lab-rx-ns", cfg.lab_rx_ns)->group("");
  app.add_option("--lab-peer", cfg.lab_peer_device)->group("");
  app.add_option("--lab-device", cfg.lab_device)->group("");
  app.add_option("--lab-peer-mac", cfg.lab_peer_mac)->group("");
  app.set_version_flag("--version", "ceiling (rateline) 0.1.0");

  if (const int rc = cli::parse(app, argc, argv); rc >= 0) return rc;
  try {
    using cli::convert;
    using cli::in_range;
    if (!make_key.empty()) {
      try {
        auth::make_key_file(make_key);
      } catch (const std::exception& e) {
        throw SetupError(e.what());
      }
      std::printf("ceiling: wrote a new %zu-byte key to %s (mode 0600); copy it to the other host over a safe channel "
                  "and give both ends --key-file %s\n", auth::kKeyBytes, make_key.c_str(), make_key.c_str());
      return 0;
    }
    if (serve_stdio) cfg.mode = Mode::serve_stdio;
    else if (lab_child) cfg.mode = Mode::lab_child;
    else if (!listen.empty()) cfg.mode = Mode::serve;
    else if (!remote.empty()) cfg.mode = Mode::remote;
    if (!listen.empty() && !remote.empty()) throw cli::UsageError("--serve and --remote: a host is one end or the other");
    cfg.remote = remote;
    cfg.listen = listen;
    if (cfg.mode == Mode::remote && cfg.dst.empty())
      throw cli::UsageError("--remote needs --dst, the receiver's test address");
    if (cfg.mode == Mode::local && !cfg.dst.empty())
      throw cli::UsageError("--dst is for --remote; the local lab picks its own addresses");
    if (cfg.mode != Mode::local && cfg.mode != Mode::lab_child && !cfg.shape.empty())
      throw cli::UsageError("--shape shapes the local lab's veth; across hosts, shape with tc yourself");
    // Addresses are checked here, so a bad one stops the run before a lab, a socket or a program exists.
    if (!cfg.key_file.empty()) {
      if (cfg.mode != Mode::serve && cfg.mode != Mode::remote)
        throw cli::UsageError("--key-file authenticates --serve and --remote; the local lab needs none");
      cfg.key = cli::file_option([&] { return auth::load_key_file(cfg.key_file); });
    }
    if (cfg.mode == Mode::serve) {
      drivers::SocketAddress addr;
      try {
        addr = listen_address(listen);
      } catch (const SetupError& e) {
        throw cli::UsageError(std::string("--serve: ") + e.what());
      }
      // Anyone who reaches the agent starts rx on this host: beyond this host, only those who hold the key.
      if (!cfg.key && !is_loopback(addr))
        throw cli::UsageError("--serve " + listen + ": an agent other hosts can reach must authenticate them: make a "
                              "key (ceiling --make-key FILE), give both ends --key-file FILE, or listen on 127.0.0.1");
    }
    cfg.serve_metrics = metrics.parse();
    if ((cfg.serve_metrics.endpoint || !cfg.serve_metrics.textfile.empty()) && cfg.mode != Mode::serve)
      throw cli::UsageError("--metrics and --metrics-textfile are the receiver agent's (--serve); the sender's numbers are "
                            "in --json and --csv");
    if (cfg.serve_metrics.linger_ns)
      throw cli::UsageError("--metrics-linger: the agent serves its page until it is stopped, there is nothing to linger for");
    // The agent's limits mean nothing to a sender: named there, they are a mistake worth saying.
    for (const char* o : {"--serve-idle", "--serve-session", "--max-threads", "--max-rcvbuf", "--ports", "--max-trial",
                          "--serve-allow-test-aids", "--serve-dpdk-device", "--max-clients"})
      if (app.count(o) && cfg.mode != Mode::serve)
        throw cli::UsageError(std::string(o) + " limits the receiver's agent: give it with --serve");
    if (cfg.mode == Mode::serve) {
      cfg.serve_idle_ns = in_range<uint64_t>("--serve-idle", convert("--serve-idle", [&] { return units::parse_duration_ns(serve_idle, kNsPerSec); }),
                                             kNsPerSec, 86400 * kNsPerSec);
      cfg.serve_session_ns = in_range<uint64_t>("--serve-session", convert("--serve-session", [&] { return units::parse_duration_ns(serve_session, kNsPerSec); }),
                                                kNsPerSec, 7 * 86400 * kNsPerSec);
      TrialLimits& l = cfg.serve_limits;
      l.max_threads = static_cast<uint32_t>(in_range<uint64_t>("--max-threads", convert("--max-threads", [&] { return units::parse_count(max_threads); }), 1, 64));
      l.max_rcvbuf = static_cast<int64_t>(in_range<uint64_t>("--max-rcvbuf", convert("--max-rcvbuf", [&] { return units::parse_bytes(max_rcvbuf); }), 0, 1ull << 30));
      const units::PortRange pr = convert("--ports", [&] { return units::parse_port_range(ports); });
      if (pr.first < 1024 || pr.last < pr.first)
        throw cli::UsageError("--ports " + ports + ": give LO-HI within 1024-65535, LO <= HI");
      l.port_lo = pr.first;
      l.port_hi = pr.last;
      l.max_trial_ms = static_cast<uint32_t>(in_range<uint64_t>("--max-trial", convert("--max-trial", [&] { return units::parse_duration_ns(max_trial, kNsPerSec); }),
                                                                kNsPerSec, 3600 * kNsPerSec) / kNsPerMs);
      l.allow_dpdk = !cfg.serve_dpdk_device.empty();
      // Each held connection is a descriptor: 512 stays clear of the usual 1024 limit, where accept() would fail.
      cfg.serve_max_clients = static_cast<uint32_t>(
          in_range<uint64_t>("--max-clients", convert("--max-clients", [&] { return units::parse_count(max_clients); }), 1, 512));
    }
    if (cfg.mode == Mode::remote) {
      const size_t c = remote.rfind(':');
      const std::string port = c == std::string::npos ? "" : remote.substr(c + 1);
      if (c == 0 || port.empty() || port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 ||
          std::stoul(port) == 0 || std::stoul(port) > 65535)
        throw cli::UsageError("--remote " + remote + ": expected HOST:PORT (the receiver's `ceiling --serve PORT`)");
    }
    if (!cfg.dst.empty()) check_address("--dst", cfg.dst);
    cfg.ipv6 = cfg.mode == Mode::remote && drivers::make_address(cfg.dst, 0).is_v6();
    check_address("--rx-bind", cfg.rx_bind);

    const auto frames = split_list(frame_sizes_in);
    const auto sizes = split_list(sizes_in);
    std::vector<std::string> frame_items = frames;
    if (frame_items.size() == 1 && frame_items[0] == "none") frame_items.clear();
    // 64 B, RFC 2544's smallest, is exactly the short payload form's minimum
    // (18 B + 46 B of IPv4/UDP/Ethernet): every size is sent as named. Over
    // IPv6 the headers take 20 B more, so the smallest frame is 84 B: the
    // default list starts there instead of at 64 (RFC 5180 has IPv6 frames
    // start above 64 B too).
    static_assert(wire::kMinPayloadBytes + kIpv4FrameOverhead == 64);
    const uint32_t overhead = cfg.ipv6 ? kIpv6FrameOverhead : kIpv4FrameOverhead;
    const uint32_t min_frame = wire::kMinPayloadBytes + overhead;
    if (frame_sizes_in.empty())
      for (uint32_t f : kRfc2544Frames) frame_items.push_back(std::to_string(std::max(f, min_frame)));
    for (const auto& f : frame_items) {
      const auto v = static_cast<uint32_t>(
          in_range<uint64_t>("--frame-sizes", convert("--frame-sizes", [&] { return units::parse_bytes(f); }), 64, 9018));
      if (v < min_frame)
        throw cli::UsageError("--frame-sizes " + f + ": over IPv6 the smallest frame that carries a test packet is " +
                              std::to_string(min_frame) + " B (" + std::to_string(wire::kMinPayloadBytes) + " B payload + " +
                              std::to_string(overhead) + " B of Ethernet/IPv6/UDP headers and FCS)");
      SizePlan p;
      p.rfc_frame = v;
      p.payload = v - overhead;
      cfg.sizes.push_back(p);
    }
    for (const auto& s : sizes.empty() ? std::vector<std::string>{"1400"} : sizes) {
      SizePlan p;
      p.payload = static_cast<uint32_t>(in_range<uint64_t>(
          "--size", convert("--size", [&] { return units::parse_bytes(s); }), wire::kMinPayloadBytes, 8972));
      cfg.sizes.push_back(p);
    }
    // One entry per payload: an RFC frame and a --size that land on the same payload run once.
    std::vector<SizePlan> unique;
    for (const auto& p : cfg.sizes)
      if (std::none_of(unique.begin(), unique.end(), [&](const SizePlan& u) { return u.payload == p.payload; }))
        unique.push_back(p);
    cfg.sizes = unique;

    cfg.trial_ns = in_range<uint64_t>("--trial", convert("--trial", [&] { return units::parse_duration_ns(trial, kNsPerSec); }),
                                      50 * kNsPerMs, 3600 * kNsPerSec);
    cfg.resolution = parse_percent("--resolution", resolution, 0.01, 50);
    cfg.pdr_threshold = parse_percent("--pdr", pdr, 0.0001, 50);
    if (!max_rate.empty()) cfg.max_rate = convert("--max-rate", [&] { return units::parse_rate(max_rate); });
    const units::Rate min_r = convert("--min-rate", [&] { return units::parse_rate(min_rate); });
    if (min_r.unit == units::RateUnit::bits_per_sec)
      throw cli::UsageError("--min-rate: give packets/s (e.g. 10 or 1kpps)");
    cfg.min_pps = std::max(1.0, min_r.value);
    cfg.max_trials = static_cast<uint32_t>(in_range<uint64_t>("--max-trials", convert("--max-trials", [&] { return units::parse_count(max_trials); }), 2, 1000));
    cfg.load.trials = static_cast<uint32_t>(in_range<uint64_t>("--rate-trials", convert("--rate-trials", [&] { return units::parse_count(rate_trials); }), 1, 20));
    {
      char* end = nullptr;
      errno = 0;
      const double x = std::strtod(exceed_ratio.c_str(), &end);
      if (exceed_ratio.empty() || errno || !end || *end || !(x >= 0 && x <= 0.9))
        throw cli::UsageError("--exceed-ratio: '" + exceed_ratio + "' is not a share between 0 and 0.9 (e.g. 0.5)");
      cfg.load.exceed_ratio = x;
    }
    if (cfg.load.exceed_ratio > 0 && cfg.load.trials < 2)
      throw cli::UsageError("--exceed-ratio needs --rate-trials 2 or more (one trial cannot exceed a share)");
    if (burst != "auto")
      cfg.burst = static_cast<uint32_t>(in_range<uint64_t>("--burst", convert("--burst", [&] { return units::parse_count(burst); }), 1, 100000));
    cfg.throughput = cfg.back_to_back = false;
    for (const auto& t : split_list({tests})) {
      if (t == "throughput") cfg.throughput = true;
      else if (t == "back-to-back" || t == "b2b") cfg.back_to_back = true;
      else throw cli::UsageError("--tests: '" + t + "' is not one of throughput, back-to-back");
    }
    if (!cfg.throughput && !cfg.back_to_back) throw cli::UsageError("--tests: name at least one test");
    if (!min_ndr.empty()) {
      if (cfg.mode == Mode::serve || cfg.mode == Mode::serve_stdio)
        throw cli::UsageError("--min-ndr judges a search: give it to the sender (the local lab or --remote)");
      if (!cfg.throughput) throw cli::UsageError("--min-ndr judges the NDR: it needs --tests throughput");
      MinNdr m;
      m.rate = convert("--min-ndr", [&] { return units::parse_rate(min_ndr); });
      if (!(m.rate.value > 0)) throw cli::UsageError("--min-ndr " + min_ndr + ": give a rate above 0");
      m.text = min_ndr;
      m.layer = rate_layer;
      cfg.min_ndr = m;
    }
    cfg.b2b_max = static_cast<uint32_t>(in_range<uint64_t>("--b2b-max", convert("--b2b-max", [&] { return units::parse_count(b2b_max); }), 2, 10'000'000));
    cfg.b2b_repeats = static_cast<uint32_t>(in_range<uint64_t>("--b2b-repeats", convert("--b2b-repeats", [&] { return units::parse_count(b2b_repeats); }), 1, 1000));
    cfg.b2b_gap_ns = in_range<uint64_t>("--b2b-gap", convert("--b2b-gap", [&] { return units::parse_duration_ns(b2b_gap, kNsPerMs); }), kNsPerMs, 60 * kNsPerSec);
    cfg.drain_ns = in_range<uint64_t>("--drain", convert("--drain", [&] { return units::parse_duration_ns(drain, kNsPerSec); }), 50 * kNsPerMs, 60 * kNsPerSec);
    if (!rx_rcvbuf.empty())
      cfg.rx_rcvbuf = static_cast<int64_t>(in_range<uint64_t>("--rx-rcvbuf", convert("--rx-rcvbuf", [&] { return units::parse_bytes(rx_rcvbuf); }), 0, 1ull << 30));
    if (!cfg.sndbuf.empty())  // pktgen's own bounds: every trial would fail on it
      in_range<uint64_t>("--sndbuf", convert("--sndbuf", [&] { return units::parse_bytes(cfg.sndbuf); }), 4096, 1ull << 30);
    cfg.rate_layer = rate_layer;
    // The first trial's rate must not be below the lowest one worth trying, at any size.
    if (cfg.max_rate)
      for (const SizePlan& p : cfg.sizes) {
        const net::FrameSizes f = net::FrameSizes::for_payload(p.payload, cfg.ipv6);
        const uint32_t bytes = rate_layer == "payload" ? f.payload : rate_layer == "l2" ? f.l2 : f.l1;
        const double pps = cfg.max_rate->unit == units::RateUnit::pps ? cfg.max_rate->value : cfg.max_rate->value / (8.0 * bytes);
        if (pps < cfg.min_pps)
          throw cli::UsageError("--max-rate " + max_rate + " is below --min-rate " + min_rate +
                                (cfg.max_rate->unit == units::RateUnit::pps
                                     ? std::string()
                                     : " at " + std::to_string(p.payload) + " B payload (" + units::si(pps, 3) + " pps)") +
                                ": give a --max-rate above it, or a lower --min-rate");
      }

    // Programs and output files last: they are looked up on this host, and only by the side that uses them.
    const bool sends = cfg.mode == Mode::local || cfg.mode == Mode::lab_child || cfg.mode == Mode::remote;
    const bool receives = cfg.mode != Mode::remote;
    if (cfg.pktgen_bin.empty()) cfg.pktgen_bin = find_program("pktgen", "PKTGEN");
    if (cfg.rx_bin.empty()) cfg.rx_bin = find_program("rx", "RX");
    if (sends) check_program(cfg.pktgen_bin, "--pktgen", "PKTGEN", app.count("--pktgen") > 0);
    if (receives) check_program(cfg.rx_bin, "--rx", "RX", app.count("--rx") > 0);
    if (sends)
      for (const auto& [path, what] : {std::pair{cfg.json_path, "JSON file"}, {cfg.csv_path, "CSV file"},
                                       {cfg.csv_trials_path, "CSV file"}, {cfg.svg_path, "SVG file"}})
        if (const std::string why = report::OutputFile::probe(path, what); !why.empty()) throw SetupError(why);
  } catch (const cli::UsageError& e) {
    std::fprintf(stderr, "ceiling: %s\n", e.what());
    return cli::kUsageExit;
  } catch (const SetupError& e) {
    std::fprintf(stderr, "ceiling: %s\n", e.what());
    return 1;
  }
  return -1;
}

}  // namespace rateline::ceiling
