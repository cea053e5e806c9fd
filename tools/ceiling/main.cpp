// ceiling: the receive ceiling of a host, RFC 2544 style. Binary search for
// the highest offered rate with zero loss (NDR) and with loss <= a threshold
// (PDR), per frame size, each final trial repeated; the back-to-back test;
// a drop ledger for every trial. It drives the real pktgen and rx, so every
// trial is the code path a user runs by hand.
//
// Process layout:
//   local  : this process (root namespace) makes the lab and re-runs itself
//            as the sender in the lab's sender namespace (`--lab-child`),
//            which starts the receiver agent (`--serve-stdio`) in the other
//            namespace and talks to it over pipes. This process only waits,
//            and removes the lab whatever happened to the child.
//   remote : the sender runs here, the agent (`--serve PORT`) on the
//            receiver, over TCP. Same code as the lab child.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <optional>

#include "backend.hpp"
#include "config.hpp"
#include "lab.hpp"
#include "lab_sender.hpp"
#include "link.hpp"
#include "process.hpp"
#include "socket/udp_socket.hpp"
#include "report.hpp"
#include "report/json_lines.hpp"
#include "report/link.hpp"
#include "report/output_file.hpp"
#include "runner.hpp"
#include "server.hpp"
#include "trial.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "util/stop_signal.hpp"
#include "verdict.hpp"

using namespace rateline;
using namespace rateline::ceiling;

namespace {

// The interface that leaves towards `dst` (numeric address), via a connected UDP socket.
std::string device_towards(const std::string& dst) {
  try {
    const drivers::SocketAddress a = drivers::make_address(dst, 9);
    const int fd = ::socket(a.storage.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return {};
    std::string dev;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a.storage), a.len) == 0) {
      sockaddr_storage local{};
      socklen_t l = sizeof local;
      char buf[INET6_ADDRSTRLEN] = {};
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &l) == 0) {
        if (local.ss_family == AF_INET) inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&local)->sin_addr, buf, sizeof buf);
        else inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr, buf, sizeof buf);
        dev = report::device_for_local_address(buf);
      }
    }
    ::close(fd);
    return dev;
  } catch (const std::exception&) {
    return {};
  }
}

int run_sender(const Config& given) {
  Config cfg = given;
  if (cfg.mode == Mode::lab_child && cfg.tx_dpdk_args.empty())
    cfg.tx_dpdk_args = "--no-pci --vdev=net_af_packet0,iface=" + cfg.lab_device;
  install_stop_signals();
  signal(SIGPIPE, SIG_IGN);
  report::JsonLines json(cfg.json_path);
  std::unique_ptr<ReceiverLink> link;
  RunInfo info;
  if (cfg.mode == Mode::lab_child) {
    // DPDK in the lab: the AF_PACKET PMD on each veth end (hugepages when free, else --no-huge: drivers/dpdk).
    const std::string rx_eal = !cfg.rx_dpdk_args.empty() ? cfg.rx_dpdk_args
                             : "--no-pci --vdev=net_af_packet0,iface=" + cfg.lab_peer_device + ",framecnt=16384,blocksz=65536";
    link = ReceiverLink::spawn_agent({"ip", "netns", "exec", cfg.lab_rx_ns, self_exe(), "--serve-stdio", "--rx-bind", cfg.dst,
                                      "--rx", cfg.rx_bin, "--rx-dpdk-args", rx_eal});
    info.mode = "local lab (veth pair " + cfg.lab_device + " -> " + cfg.lab_peer_device + ")";
    info.sender_device = cfg.device.empty() ? cfg.lab_device : cfg.device;
    info.shape = cfg.shape;
  } else {
    link = ReceiverLink::connect_tcp(cfg.remote, 10 * kNsPerSec);
    info.mode = "remote (control " + cfg.remote + ", test traffic to " + cfg.dst + ")";
    info.sender_device = cfg.device.empty() ? device_towards(cfg.dst) : cfg.device;
  }
  link->hello(cfg.mode == Mode::remote ? cfg.key : std::nullopt);
  info.link = report::link_info(info.sender_device);
  json.write({{"type", "start"}, {"tool", "ceiling"}, {"mode", info.mode}, {"dst", cfg.dst}, {"port", cfg.port},
              {"sender_device", info.sender_device}, {"link", info.link.text()},
              {"link_speed_mbps", info.link.speed_mbps ? nlohmann::json(*info.link.speed_mbps) : nlohmann::json(nullptr)},
              {"link_nominal", info.link.nominal}, {"shape", cfg.shape}, {"trial_s", static_cast<double>(cfg.trial_ns) / 1e9},
              {"resolution_pct", cfg.resolution * 100}, {"pdr_pct", cfg.pdr_threshold * 100},
              {"tx_backend", cfg.tx_backend}, {"rx_backend", cfg.rx_backend},
              {"tests", {{"throughput", cfg.throughput}, {"back_to_back", cfg.back_to_back}}}});
  if (!cfg.quiet) {
    std::printf("ceiling: %s; sender %s; %zu size(s); trials of %s\n", info.mode.c_str(), info.link.text().c_str(),
                cfg.sizes.size(), units::duration_text(cfg.trial_ns).c_str());
    std::fflush(stdout);
  }
  TrialRunner trials(*link, cfg, info.sender_device);
  Runner runner(trials, cfg, info, json);
  const std::vector<SizeResult> results = runner.run();
  std::printf("%s", format_table(results, cfg, info).c_str());
  if (stop_flag().load()) std::printf("interrupted: the table holds what was measured so far\n");
  std::optional<RunVerdict> verdict;
  if (cfg.min_ndr) {
    // Every size asked for: one the run did not reach (interrupted) has no NDR.
    std::vector<NdrFinding> findings;
    for (size_t i = 0; i < cfg.sizes.size(); ++i) {
      if (i < results.size()) {
        findings.push_back(ndr_finding(results[i]));
      } else {
        NdrFinding f;
        f.payload = cfg.sizes[i].payload;
        f.frame = net::FrameSizes::for_payload(f.payload, cfg.ipv6);
        f.state = "not measured: the run was interrupted";
        findings.push_back(f);
      }
    }
    verdict = judge_run(findings, *cfg.min_ndr);
    std::printf("%s\n", verdict->line().c_str());
    json.write(verdict->json(*cfg.min_ndr));
  }
  std::fflush(stdout);
  // After the table, and each on its own: one output that cannot be written costs no other.
  bool errors = false;
  auto save = [&](const std::string& path, const char* what, auto&& text) {
    if (path.empty()) return;
    try {
      report::write_whole_file(path, text(), what);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ceiling: %s\n", e.what());
      errors = true;
    }
  };
  save(cfg.csv_path, "CSV file", [&] { return summary_csv(results, info); });
  save(cfg.csv_trials_path, "CSV file", [&] { return trials_csv(results, cfg); });
  save(cfg.svg_path, "SVG file", [&] { return loss_svg(results, cfg, info); });
  if (const std::string e = json.finish(); !e.empty()) {
    std::fprintf(stderr, "ceiling: %s\n", e.c_str());
    errors = true;
  }
  for (const auto& r : results) errors |= !r.error.empty();
  // A run that did not finish is exit 1 whatever its verdict says; a whole run that missed --min-ndr is 3.
  if (errors || stop_flag().load()) return 1;
  return verdict && !verdict->passed ? 3 : 0;
}

volatile sig_atomic_t g_parent_signal = 0;
void on_parent_signal(int sig) { g_parent_signal = sig; }

// The local lab's parent: make the lab, run the sender in it, always remove it.
int run_local(const Config& cfg) {
  if (geteuid() != 0) {
    std::fprintf(stderr, "ceiling: the local lab makes network namespaces: run as root (or use --remote/--serve between two hosts)\n");
    return 1;
  }
  struct sigaction sa {};
  sa.sa_handler = on_parent_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  if (stop_flag().load()) g_parent_signal = stop_signal_number();  // one that came before these handlers
  for (const std::string& left : remove_stale_labs())
    std::fprintf(stderr, "ceiling: removed %s, a lab namespace left by a killed ceiling\n", left.c_str());
  VethLab lab;
  int rc = 1;
  try {
    lab.create();
    if (!cfg.shape.empty()) lab.shape(cfg.shape);
    std::vector<std::string> args = cfg.argv;
    std::string tx_backend = cfg.tx_backend;
    std::string sender_note;
    // Shaping sits in the sender's qdisc, which the raw senders pass by: with --shape, pktgen chooses.
    if (tx_backend == "auto" && cfg.shape.empty()) {
      const LabSender s = fastest_lab_sender(lab, cfg.pktgen_bin);
      sender_note = s.note;
      if (!s.backend.empty()) {
        tx_backend = s.backend;
        args.insert(args.end(), {"--tx-backend", s.backend});
      }
    }
    const bool peer_napi = drivers::describe_backend(tx_backend).tx_needs_peer_napi;
    if (peer_napi) lab.enable_receiver_napi();
    if (!cfg.quiet)
      std::printf("ceiling: lab %s (%s, %s) <-> %s (%s, %s)%s%s\n", lab.ns_tx.c_str(), lab.if_tx.c_str(), lab.ip_tx.c_str(),
                  lab.ns_rx.c_str(), lab.if_rx.c_str(), lab.ip_rx.c_str(), cfg.shape.empty() ? "" : "; shaped: ",
                  cfg.shape.c_str());
    if (!cfg.quiet && peer_napi)
      std::printf("ceiling: GRO on %s: a veth takes XDP-sent frames only with NAPI on (plain UDP is not merged)\n",
                  lab.if_rx.c_str());
    std::fflush(stdout);
    if (!cfg.quiet && !sender_note.empty()) std::printf("ceiling: %s\n", sender_note.c_str());
    std::fflush(stdout);
    std::vector<std::string> argv = {"ip", "netns", "exec", lab.ns_tx, self_exe()};
    argv.insert(argv.end(), args.begin(), args.end());
    for (const auto& a : {std::string("--lab-child"), std::string("--dst"), lab.ip_rx, std::string("--lab-rx-ns"), lab.ns_rx,
                          std::string("--lab-device"), lab.if_tx, std::string("--lab-peer"), lab.if_rx, std::string("--lab-peer-mac"), lab.mac_rx, std::string("--pktgen"),
                          cfg.pktgen_bin, std::string("--rx"), cfg.rx_bin})
      argv.push_back(a);
    SpawnSpec s;
    s.argv = argv;
    s.inherit_stdout = true;
    s.hold_stop_signals = true;  // a Ctrl-C from now on ends the child's run with its report, never before it
    Child child = spawn(s);
    bool forwarded = false;
    uint64_t kill_at = 0;
    for (;;) {
      int status = 0;
      const pid_t r = waitpid(child.pid, &status, WNOHANG);
      if (r == child.pid) {
        rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (r < 0 && errno != EINTR) break;
      if (g_parent_signal && !forwarded) {
        // Ctrl-C reaches the child through the terminal too; a TERM sent to us alone is passed on.
        signal_child(child, SIGINT);
        forwarded = true;
        kill_at = now_ns() + 60 * kNsPerSec;
      }
      if (kill_at && now_ns() > kill_at) {
        signal_child(child, SIGKILL);
        kill_at = 0;
      }
      timespec ts{0, 50'000'000};
      nanosleep(&ts, nullptr);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ceiling: %s\n", e.what());
    rc = 1;
  }
  lab.destroy();
  if (!cfg.quiet) std::printf("ceiling: lab removed\n");
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  // First of all: a Ctrl-C from here on is a request to stop with a report, never a silent death (the local
  // lab's parent takes it over below).
  install_stop_signals();
  Config cfg;
  if (const int rc = parse_options(argc, argv, cfg); rc >= 0) return rc;
  try {
    switch (cfg.mode) {
      case Mode::serve:
      case Mode::serve_stdio: {
        install_stop_signals();
        ServeConfig s;
        s.listen = cfg.mode == Mode::serve ? cfg.listen : "";
        s.rx_bind = cfg.rx_bind;
        s.rx_bin = cfg.rx_bin;
        s.rx_dpdk_args = cfg.rx_dpdk_args;
        s.verbose = cfg.mode == Mode::serve;
        if (cfg.mode == Mode::serve) {
          s.limits = cfg.serve_limits;
          s.dpdk_device = cfg.serve_dpdk_device;
          s.idle_ns = cfg.serve_idle_ns;
          s.session_ns = cfg.serve_session_ns;
          s.key = cfg.key;
          s.max_clients = cfg.serve_max_clients;
          s.metrics = cfg.serve_metrics;
        } else {
          s.idle_ns = 600 * kNsPerSec;  // the lab's own agent: hang up only on a sender gone quiet for good
        }
        return serve(s);
      }
      case Mode::local: return run_local(cfg);
      case Mode::remote:
      case Mode::lab_child: return run_sender(cfg);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ceiling: %s\n", e.what());
    return 1;
  }
  return 1;
}
