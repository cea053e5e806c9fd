#include "backend.hpp"
#include "trial.hpp"

#include <poll.h>
#include <signal.h>

#include <cerrno>
#include <cmath>
#include <cstdio>

#include "process.hpp"
#include "util/clock.hpp"

namespace rateline::ceiling {

const char* kind_name(TrialKind k) {
  switch (k) {
    case TrialKind::throughput: return "throughput";
    case TrialKind::confirm: return "confirm";
    case TrialKind::back_to_back: return "back-to-back";
  }
  return "?";
}

TrialRunner::TrialRunner(ReceiverLink& link, const Config& cfg, std::string sender_device)
    : link_(link), cfg_(cfg), device_(std::move(sender_device)) {}

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

struct PktgenRun {
  int rc = -1;
  nlohmann::json start, result;
  std::string err_tail;
};

PktgenRun run_pktgen(const std::vector<std::string>& argv, uint64_t timeout_ns) {
  SpawnSpec s;
  s.argv = argv;
  s.pipe_fd3 = true;
  s.pipe_stderr = true;
  Child c = spawn(s);
  PktgenRun r;
  std::string json_buf;
  bool js_open = true, er_open = true;
  const uint64_t deadline = now_ns() + timeout_ns;
  bool signalled = false;
  while (js_open || er_open) {
    if (!signalled && now_ns() > deadline) {
      signal_child(c, SIGINT);  // pktgen writes its result on SIGINT
      signalled = true;
    }
    pollfd p[2];
    nfds_t n = 0;
    int ji = -1, ei = -1;
    if (js_open) { ji = static_cast<int>(n); p[n++] = {c.fd3, POLLIN, 0}; }
    if (er_open) { ei = static_cast<int>(n); p[n++] = {c.err, POLLIN, 0}; }
    const int pr = poll(p, n, 200);
    if (pr < 0 && errno != EINTR) break;
    if (pr <= 0) continue;
    if (ji >= 0 && (p[ji].revents & (POLLIN | POLLHUP | POLLERR)))
      if (!read_some(c.fd3, json_buf, 4u << 20)) js_open = false;
    if (ei >= 0 && (p[ei].revents & (POLLIN | POLLHUP | POLLERR)))
      if (!read_some(c.err, r.err_tail, 2048)) er_open = false;
  }
  r.rc = wait_child(c, 5 * kNsPerSec);
  if (r.rc == -1) r.rc = stop_child(c, 2 * kNsPerSec);
  size_t pos = 0, nl;
  while ((nl = json_buf.find('\n', pos)) != std::string::npos) {
    try {
      nlohmann::json j = nlohmann::json::parse(json_buf.substr(pos, nl - pos));
      if (j.value("type", "") == "start") r.start = std::move(j);
      else if (j.value("type", "") == "result") r.result = std::move(j);
    } catch (const std::exception&) {
    }
    pos = nl + 1;
  }
  return r;
}

std::string last_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (const size_t nl = s.rfind('\n'); nl != std::string::npos) s = s.substr(nl + 1);
  return s;
}

}  // namespace

TrialOutcome TrialRunner::run(const TrialSpec& spec) {
  TrialOutcome o;
  o.k = ++k_;
  o.spec = spec;
  const uint64_t expect_ns =
      spec.count && spec.rate_pps > 0 ? static_cast<uint64_t>(static_cast<double>(spec.count) / spec.rate_pps * 1e9)
                                      : spec.duration_ns;
  const uint64_t idle_ns = spec.kind == TrialKind::back_to_back ? std::max(cfg_.drain_ns, 2 * spec.delay_ns) : cfg_.drain_ns;

  proto::TrialRequest req;
  req.id = next_id_++;
  req.size = spec.size;
  req.port = cfg_.port;
  req.idle_ms = static_cast<uint32_t>(std::clamp<uint64_t>(idle_ns / kNsPerMs, 50, 60000));
  req.max_ms = static_cast<uint32_t>(std::clamp<uint64_t>((2 * expect_ns + idle_ns) / kNsPerMs + 10000, 100, 3'600'000));
  req.backend = cfg_.rx_backend;
  req.rcvbuf = cfg_.rx_rcvbuf;
  req.slow_us = cfg_.rx_test_slow_us;
  req.threads = cfg_.rx_threads;
  try {
    link_.start(req, 15 * kNsPerSec);
  } catch (const std::exception& e) {
    o.error = e.what();
    return o;
  }

  ledger::Scope scope;
  if (!device_.empty()) scope.devices.push_back(device_);
  scope.qdisc = true;
  const ledger::Counters before = ledger::read_counters(scope);

  std::vector<std::string> argv = {cfg_.pktgen_bin, "--dst", cfg_.dst, "--port", std::to_string(cfg_.port),
                                   "--size", std::to_string(spec.size), "--burst", std::to_string(spec.burst),
                                   "--backend", cfg_.tx_backend, "--json", "/dev/fd/3", "--quiet"};
  // pktgen asks for --ipv6 with an IPv6 --dst (a typo'd address must not silently change the family).
  if (cfg_.ipv6) argv.push_back("--ipv6");
  if (spec.rate_pps > 0) {
    argv.push_back("--rate");
    argv.push_back(fmt("%.3f", spec.rate_pps));
  } else if (spec.delay_ns) {
    argv.push_back("--delay");
    argv.push_back(std::to_string(spec.delay_ns / 1000) + "us");
  }
  if (spec.count) {
    argv.push_back("--count");
    argv.push_back(std::to_string(spec.count));
  }
  if (spec.duration_ns) {
    argv.push_back("--duration");
    argv.push_back(std::to_string(spec.duration_ns / kNsPerMs) + "ms");
  }
  if (!cfg_.sndbuf.empty()) {
    argv.push_back("--sndbuf");
    argv.push_back(cfg_.sndbuf);
  }
  if (!cfg_.device.empty()) {
    argv.push_back("--device");
    argv.push_back(cfg_.device);
  }
  const drivers::BackendDescriptor& tx_backend = drivers::describe_backend(cfg_.tx_backend);
  if (tx_backend.eal_args && !cfg_.tx_dpdk_args.empty()) {
    argv.push_back("--dpdk-args");
    argv.push_back(cfg_.tx_dpdk_args);
  }
  if (tx_backend.eal_args && !cfg_.lab_peer_mac.empty()) {
    // DPDK's AF_PACKET PMD takes its interface down and up when it stops, and
    // the kernel flushes that interface's neighbours then, permanent ones too:
    // from the second trial on there would be no entry to read.
    argv.push_back("--dst-mac");
    argv.push_back(cfg_.lab_peer_mac);
  }
  PktgenRun tx;
  for (int attempt = 0;; ++attempt) {
    try {
      tx = run_pktgen(argv, 2 * expect_ns + 30 * kNsPerSec);
      break;
    } catch (const std::exception& e) {
      // A rebuild relinking pktgen under us (ETXTBSY, EACCES) is worth a second look.
      tx.err_tail = e.what();
      if (attempt == 2) break;
      timespec ts{1, 0};
      nanosleep(&ts, nullptr);
    }
  }
  nlohmann::json rx;
  try {
    rx = link_.result(req.id, idle_ns + 3 * kNsPerSec, idle_ns + 20 * kNsPerSec);
  } catch (const std::exception& e) {
    o.error = e.what();
    return o;
  }
  // Only now: pktgen has exited, but a shaping qdisc may still hold a queue
  // of its packets (tbf: up to rate * latency). rx ends after the end markers,
  // which queue behind them, so the sender's counters are final by then.
  const ledger::Counters after = ledger::read_counters(scope);
  if (tx.result.is_null()) {
    o.error = "pktgen exited with " + std::to_string(tx.rc) + " without a result" +
              (tx.err_tail.empty() ? "" : ": " + last_line(tx.err_tail));
    return o;
  }
  o.ok = true;
  o.tx_backend = tx.start.value("backend", "");
  o.sent = tx.result.value("sent", uint64_t{0});
  o.failed = tx.result.value("failed", uint64_t{0});
  o.achieved_pps = tx.result.value("pps", 0.0);
  o.tx_seconds = tx.result.value("time_s", 0.0);
  o.pace_slips = tx.result.value("pace_slips", uint64_t{0});
  const auto number_or_0 = [&](const char* key) {
    const auto it = tx.result.find(key);
    return it != tx.result.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  o.in_burst_pps = number_or_0("in_burst_pps");
  o.in_burst_peak_pps = number_or_0("in_burst_peak_pps");
  o.received = rx.value("received", uint64_t{0});
  o.end_markers_sent = tx.result.value("end_markers", uint64_t{0});
  o.end_markers_received = rx.value("end_markers", uint64_t{0});
  o.rx_pps = rx.value("pps", 0.0);
  o.rx_backend = rx.value("backend", "");
  o.lost = o.sent > o.received ? o.sent - o.received : 0;

  ledger::Path path;
  path.missing = o.lost;
  path.sent = o.sent;
  path.received = o.received;
  path.sender_failed = o.failed;
  path.corrupt = rx.value("corrupt", uint64_t{0});
  path.socket_drops = rx.value("socket_drops", uint64_t{0});
  path.bad_udp_checksum = rx.value("bad_udp_checksum", uint64_t{0});
  path.fragments = rx.value("fragments", uint64_t{0});
  // Backends that take frames below the UDP layer: the stack's UDP counters are not on their path.
  const drivers::BackendDescriptor* rx_backend = drivers::find_backend(o.rx_backend);
  path.raw_receiver = rx_backend && rx_backend->frames;
  path.receiver_backend = o.rx_backend;
  path.receiver_drops_in_xdp = rx_backend && rx_backend->rx_drops_in_xdp;
  path.sender = ledger::delta(before, after);
  path.sender_device = device_;
  try {
    if (rx.contains("ledger") && rx["ledger"].contains("counters") && rx["ledger"]["counters"].contains("receiver") &&
        !rx["ledger"]["counters"]["receiver"].is_null())
      path.receiver = ledger::counters_from_json(rx["ledger"]["counters"]["receiver"]);
  } catch (const std::exception&) {
    path.receiver.reset();
  }
  o.ledger = ledger::reconcile(path);
  if (!rx.value("sent", nlohmann::json()).is_null() && rx["sent"].get<uint64_t>() != o.sent)
    o.ledger.notes.push_back("rx learned sent=" + std::to_string(rx["sent"].get<uint64_t>()) + " from the end markers, pktgen says " +
                             std::to_string(o.sent));
  o.ledger_json = ledger::to_json(o.ledger, path.sender, path.receiver);
  return o;
}

}  // namespace rateline::ceiling
