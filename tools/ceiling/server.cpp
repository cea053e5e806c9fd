#include "server.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "agent_metrics.hpp"
#include "gate.hpp"
#include "process.hpp"
#include "protocol.hpp"
#include "rx_command.hpp"
#include "socket/udp_socket.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "util/stop_signal.hpp"
#include "util/units.hpp"

namespace rateline::ceiling {

namespace {

constexpr uint64_t kStopGraceNs = 3 * kNsPerSec;      // SIGINT to rx, then SIGKILL after this
// A client can send a refused request as fast as it likes: the log names the first ones, then says it stops.
constexpr uint32_t kMaxLoggedRefusals = 20;
constexpr size_t kRxJsonMax = 8u << 20;               // rx's JSON lines (progress is off: start + result)

// A client that stops reading would block a reply, and with it every limit: on a TCP session a reply must be
// taken within this, all of it (a per-send timeout would restart with every few bytes the client takes).
constexpr uint64_t kReplyTimeoutNs = 5 * kNsPerSec;

struct Trial {
  proto::TrialRequest req;
  Child rx;
  std::string json_buf;
  std::string err_tail;
  bool ready = false;
  bool json_open = true, err_open = true;
  std::optional<nlohmann::json> result;
  uint64_t deadline_ns = 0;  // max_ms plus slack: then SIGINT
  uint64_t kill_ns = 0;      // after SIGINT: then SIGKILL
};

class Session {
 public:
  // The local lab's agent: one session on stdin/stdout, no gate, no limits.
  Session(int in, int out, const ServeConfig& cfg) : in_(in), out_(out), cfg_(cfg), peer_("stdio") {}
  // A TCP client the gate let through; the gate keeps serving other connections while this session runs.
  Session(Admitted a, const ServeConfig& cfg, Gate& gate)
      : in_(a.fd), out_(a.fd), cfg_(cfg), gate_(&gate), peer_(std::move(a.peer)), lines_(std::move(a.lines)),
        greeted_(a.greeted) {}
  void run();

 private:
  void send(const std::string& line);
  void error(const char* code, const std::string& text, uint64_t id = 0);
  void handle(const proto::LineSplitter::Item& item);
  void start_trial(const proto::TrialRequest& req);
  void pump(Trial& t, bool json_ready, bool err_ready);
  void finish();
  // The idle and session limits: true when the session is to end now (said and logged).
  bool over_time_limits();
  void log(const std::string& what) const;

  int in_, out_;
  const ServeConfig& cfg_;
  Gate* gate_ = nullptr;  // TCP only
  std::string peer_;  // the client's address, for the log
  proto::LineSplitter lines_{proto::kMaxRequestBytes};
  bool greeted_ = false, closing_ = false, peer_gone_ = false;
  uint64_t partial_since_ns_ = 0;  // when the request still incomplete began arriving; 0 = none
  bool muted_ = false;  // the session was ended by a limit: nothing more goes to the client
  std::optional<Trial> trial_;
  const uint64_t opened_ns_ = now_ns();
  uint64_t quiet_since_ns_ = now_ns();  // the last request, or the end of the last trial
  uint32_t refusals_ = 0;
};

void Session::log(const std::string& what) const {
  if (gate_) gate_->log(peer_, what);
  else if (cfg_.verbose) std::fprintf(stderr, "ceiling serve: %s: %s\n", peer_.c_str(), what.c_str());
}

void Session::send(const std::string& line) {
  if (peer_gone_ || muted_) return;
  const std::string text = line + "\n";
  // stdio (the local lab's pipes) has no limits to keep: plain blocking writes.
  if (!gate_ ? write_all(out_, text) : send_by(out_, text, now_ns() + kReplyTimeoutNs)) return;
  if (errno == ETIMEDOUT) log("dropped: it stopped reading replies (a reply not taken within 5 s)");
  peer_gone_ = closing_ = true;
}

void Session::error(const char* code, const std::string& text, uint64_t id) {
  if (cfg_.counts) cfg_.counts->err_reply(code);
  if (++refusals_ <= kMaxLoggedRefusals)
    log(std::string("refused (code=") + code + (id ? " id=" + std::to_string(id) : std::string()) + "): " + text);
  else if (refusals_ == kMaxLoggedRefusals + 1)
    log("more refusals in this session, not logged");
  send(std::string("ERR code=") + code + (id ? " id=" + std::to_string(id) : std::string()) + " " + text);
}

void Session::handle(const proto::LineSplitter::Item& item) {
  quiet_since_ns_ = now_ns();
  if (item.too_long) {
    error("too-long", "request longer than " + std::to_string(proto::kMaxRequestBytes) + " bytes: ignored");
    return;
  }
  if (item.line.empty()) return;
  std::string why;
  const auto m = proto::parse(item.line, &why);
  if (!m) {
    error("malformed", why);
    return;
  }
  if (m->verb == "PING") {
    send("PONG");
    return;
  }
  if (m->verb == "HELLO") {
    const std::string* v = m->get("version");
    if (greeted_) error("out-of-order", "HELLO twice");
    else if (!v || *v != std::to_string(proto::kVersion))
      error("bad-value", "this receiver speaks version=" + std::to_string(proto::kVersion));
    else {
      greeted_ = true;
      send("OK version=" + std::to_string(proto::kVersion));
    }
    return;
  }
  if (m->verb != "TRIAL" && m->verb != "STOP" && m->verb != "BYE") {
    error("unknown-verb", m->verb + " is not a request (HELLO, PING, TRIAL, STOP, BYE)");
    return;
  }
  // Errors about a trial carry its id, so the sender can tell them from late replies to older requests.
  uint64_t req_id = 0;
  if (const std::string* id = m->get("id"); id && id->size() <= 18 && id->find_first_not_of("0123456789") == std::string::npos)
    req_id = std::stoull(*id);
  if (!greeted_) {
    error("out-of-order", "send HELLO version=" + std::to_string(proto::kVersion) + " first", req_id);
    return;
  }
  if (m->verb == "BYE") {
    send("OK bye");
    closing_ = true;
    return;
  }
  if (m->verb == "STOP") {
    const std::string* id = m->get("id");
    if (!trial_ || !id || *id != std::to_string(trial_->req.id)) {
      error("out-of-order", trial_ ? "STOP names another trial than the running one (id=" + std::to_string(trial_->req.id) + ")"
                                   : "no trial is running", req_id);
      return;
    }
    signal_child(trial_->rx, SIGINT);
    if (!trial_->kill_ns) trial_->kill_ns = now_ns() + kStopGraceNs;
    return;
  }
  // TRIAL
  if (trial_) {
    error("out-of-order", "trial " + std::to_string(trial_->req.id) + " is still running: wait for its RESULT", req_id);
    return;
  }
  std::string code;
  const auto req = proto::trial_from(*m, &code, &why);
  if (!req) {
    error(code.c_str(), why, req_id);
    return;
  }
  if (const auto no = check_limits(*req, cfg_.limits)) {
    error(no->code.c_str(), no->text, req_id);
    return;
  }
  start_trial(*req);
}

void Session::start_trial(const proto::TrialRequest& req) {
  const std::vector<std::string> argv = rx_command(req, cfg_);
  Trial t;
  t.req = req;
  SpawnSpec s;
  s.argv = argv;
  s.pipe_fd3 = true;
  s.pipe_stderr = true;
  for (int attempt = 0;; ++attempt) {
    try {
      t.rx = spawn(s);
      break;
    } catch (const std::exception& e) {
      // A rebuild relinking rx under us (ETXTBSY, EACCES) is worth a second look.
      if (attempt == 2) {
        error("rx-failed", e.what(), req.id);
        if (cfg_.counts) cfg_.counts->trial_ended(nullptr);
        return;
      }
      timespec ts{1, 0};
      nanosleep(&ts, nullptr);
    }
  }
  t.deadline_ns = now_ns() + uint64_t{req.max_ms} * kNsPerMs + 5 * kNsPerSec;
  if (cfg_.verbose)
    std::fprintf(stderr, "ceiling serve: trial %llu: rx pid %d, %u B on port %u\n", static_cast<unsigned long long>(req.id),
                 t.rx.pid, req.size, req.port);
  trial_ = std::move(t);
  if (cfg_.counts) cfg_.counts->trial_started();
}

void Session::pump(Trial& t, bool json_ready, bool err_ready) {
  if (json_ready && t.json_open) {
    if (!read_some(t.rx.fd3, t.json_buf, kRxJsonMax)) t.json_open = false;
    size_t nl;
    while ((nl = t.json_buf.find('\n')) != std::string::npos) {
      const std::string line = t.json_buf.substr(0, nl);
      t.json_buf.erase(0, nl + 1);
      try {
        nlohmann::json j = nlohmann::json::parse(line);
        const std::string type = j.value("type", "");
        if (type == "start" && !t.ready) {
          t.ready = true;
          send("READY id=" + std::to_string(t.req.id));
        } else if (type == "result") {
          t.result = std::move(j);
        }
      } catch (const std::exception&) {
        // Not ours to judge: rx writes one JSON object per line.
      }
    }
  }
  if (err_ready && t.err_open)
    if (!read_some(t.rx.err, t.err_tail, 2048)) t.err_open = false;
}

void Session::finish() {
  Trial& t = *trial_;
  int rc = wait_child(t.rx, kStopGraceNs);
  if (rc == -1) rc = stop_child(t.rx, kStopGraceNs);
  const uint64_t id = t.req.id;
  if (t.result) {
    nlohmann::json r = std::move(*t.result);
    r.erase("streams");
    r["rx_exit"] = rc;
    std::string text = r.dump(-1, ' ', true);
    if (text.size() + 64 > proto::kMaxReplyBytes && r.contains("ledger")) {
      r["ledger"].erase("counters");
      text = r.dump(-1, ' ', true);
    }
    const bool fits = text.size() + 64 <= proto::kMaxReplyBytes;
    if (!fits) error("rx-failed", "rx's result is too large to send", id);
    else send("RESULT id=" + std::to_string(id) + " " + text);
    if (cfg_.counts) cfg_.counts->trial_ended(fits ? &r : nullptr);
  } else {
    std::string why = t.err_tail;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    if (const size_t nl = why.rfind('\n'); nl != std::string::npos) why = why.substr(nl + 1);
    for (char& c : why)
      if (c < 0x20 || c > 0x7e) c = ' ';
    error("rx-failed", "rx exited with " + std::to_string(rc) + (t.ready ? " without a result" : " before listening") +
                           (why.empty() ? "" : ": " + why),
          id);
    if (cfg_.counts) cfg_.counts->trial_ended(nullptr);
  }
  if (cfg_.verbose)
    std::fprintf(stderr, "ceiling serve: trial %llu done (rx exit %d)\n", static_cast<unsigned long long>(id), rc);
  trial_.reset();
  quiet_since_ns_ = now_ns();  // the client's turn again: its idle time starts now
}

bool Session::over_time_limits() {
  const uint64_t now = now_ns();
  if (cfg_.session_ns && now - opened_ns_ > cfg_.session_ns) {
    const std::string why = "session longer than " + units::duration_text(cfg_.session_ns) +
                            " (this receiver's --serve-session): closing";
    log("dropped: " + why);
    // With the trial's id, so the sender counts the trial as failed rather than take a cut-short rx result.
    if (cfg_.counts) cfg_.counts->err_reply("timeout");
    send("ERR code=timeout" + (trial_ ? " id=" + std::to_string(trial_->req.id) : std::string()) + " " + why);
    muted_ = closing_ = true;
    return true;
  }
  if (gate_ && partial_since_ns_ && now - partial_since_ns_ > kRequestTimeoutNs) {
    // Per request, not per byte: a client that trickles a byte a second would never trip the idle limit.
    const std::string why = "a request begun " + units::duration_text(kRequestTimeoutNs) +
                            " ago is still not complete (a slow or stalled client): closing";
    log("dropped: " + why);
    if (cfg_.counts) cfg_.counts->err_reply("timeout");
    send("ERR code=timeout " + why);
    muted_ = closing_ = true;
    return true;
  }
  if (!trial_ && cfg_.idle_ns && now - quiet_since_ns_ > cfg_.idle_ns) {
    const std::string why = "no request for " + units::duration_text(cfg_.idle_ns) +
                            " (this receiver's --serve-idle): closing";
    log("dropped: " + why);
    if (cfg_.counts) cfg_.counts->err_reply("timeout");
    send("ERR code=timeout " + why);
    muted_ = closing_ = true;
    return true;
  }
  return false;
}

void Session::run() {
  bool in_open = true;
  // Requests that came with the client's AUTH, before the gate handed it over.
  while (auto item = lines_.next()) {
    handle(*item);
    if (closing_) break;
  }
  if (lines_.has_partial()) partial_since_ns_ = now_ns();
  while (!closing_ || trial_) {
    if (stop_flag().load() && trial_ && !trial_->kill_ns) {
      signal_child(trial_->rx, SIGINT);
      trial_->kill_ns = now_ns() + kStopGraceNs;
    }
    if (stop_flag().load() && !trial_) break;
    if ((closing_ || !in_open) && trial_ && !trial_->kill_ns) {
      // The sender hung up mid-trial: end rx, its result has nowhere to go.
      signal_child(trial_->rx, SIGINT);
      trial_->kill_ns = now_ns() + kStopGraceNs;
    }
    std::vector<pollfd> p;
    int in_i = -1, js_i = -1, er_i = -1;
    if (in_open && !closing_) { in_i = static_cast<int>(p.size()); p.push_back({in_, POLLIN, 0}); }
    if (trial_ && trial_->json_open) { js_i = static_cast<int>(p.size()); p.push_back({trial_->rx.fd3, POLLIN, 0}); }
    if (trial_ && trial_->err_open) { er_i = static_cast<int>(p.size()); p.push_back({trial_->rx.err, POLLIN, 0}); }
    if (gate_) gate_->add_poll_fds(p);
    const int r = poll(p.data(), p.size(), 100);
    if (r < 0 && errno != EINTR) break;
    auto ready = [&](int i) { return r > 0 && i >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR)); };
    if (gate_) {
      if (r < 0) for (pollfd& f : p) f.revents = 0;
      gate_->service(p, &peer_);  // with this session running, nothing comes back: others are refused busy
    }
    if (ready(in_i)) {
      char buf[4096];
      const ssize_t got = ::read(in_, buf, sizeof buf);
      if (got > 0) {
        const bool was_partial = lines_.has_partial();
        lines_.feed({buf, static_cast<size_t>(got)});
        bool whole = false;
        while (auto item = lines_.next()) {
          whole = true;
          handle(*item);
          if (closing_) break;
        }
        if (!lines_.has_partial()) partial_since_ns_ = 0;
        else if (whole || !was_partial) partial_since_ns_ = now_ns();
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        in_open = false;
        if (!trial_) break;
      }
    }
    if (trial_) {
      pump(*trial_, ready(js_i), ready(er_i));
      const uint64_t now = now_ns();
      if (!trial_->json_open && !trial_->err_open) finish();
      else if (trial_->kill_ns && now > trial_->kill_ns) {
        signal_child(trial_->rx, SIGKILL);
        trial_->kill_ns = now + kStopGraceNs;
      } else if (!trial_->kill_ns && now > trial_->deadline_ns) {
        signal_child(trial_->rx, SIGINT);
        trial_->kill_ns = now + kStopGraceNs;
      }
    } else if (!in_open) {
      break;
    }
    if (!muted_) over_time_limits();
    if (cfg_.counts) cfg_.counts->tick();
  }
}

}  // namespace

int serve(const ServeConfig& cfg) {
  signal(SIGPIPE, SIG_IGN);
  if (cfg.listen.empty()) {
    Session s(STDIN_FILENO, STDOUT_FILENO, cfg);
    s.run();
    return 0;
  }
  const drivers::SocketAddress addr = listen_address(cfg.listen);
  const std::string auth_text =
      cfg.key ? "clients authenticate with the key file (HMAC challenge-response)"
              : "NO authentication (loopback only; give --key-file to serve other hosts)";
  // The gate and the sessions count into this copy's AgentMetrics.
  ServeConfig counted = cfg;
  std::optional<AgentMetrics> metrics;
  if (cfg.metrics.endpoint || !cfg.metrics.textfile.empty()) {
    metrics.emplace(cfg.metrics, std::map<std::string, std::string>{
                                     {"listen", addr.text()}, {"auth", cfg.key ? "key" : "none"}, {"rx_bind", cfg.rx_bind}});
    counted.counts = &*metrics;
  }
  const int fd = listen_on(addr);
  const TrialLimits& l = cfg.limits;
  std::fprintf(stderr,
               "ceiling serve: control on tcp %s; %s; rx binds %s; one session at a time, at most %s, dropped after %s "
               "silent; at most %u connections, a handshake or request must be whole within %s; trials: threads <= "
               "%u, rcvbuf <= %lld B, ports %u-%u, max_ms <= %u, test aids %s, dpdk %s\n",
               addr.text().c_str(), auth_text.c_str(), cfg.rx_bind.c_str(), units::duration_text(cfg.session_ns).c_str(),
               units::duration_text(cfg.idle_ns).c_str(), cfg.max_clients,
               units::duration_text(kHandshakeTimeoutNs).c_str(), l.max_threads, static_cast<long long>(l.max_rcvbuf),
               l.port_lo, l.port_hi, l.max_trial_ms, l.allow_test_aids ? "on" : "off",
               l.allow_dpdk ? ("on " + cfg.dpdk_device).c_str() : "off");
  if (metrics) {
    metrics->start();
    std::fprintf(stderr, "ceiling serve: %s\n", metrics->start_line().c_str());
    metrics->tick();
  }
  Gate gate(fd, counted);
  while (!stop_flag().load()) {
    std::vector<pollfd> p;
    gate.add_poll_fds(p);
    if (poll(p.data(), p.size(), 100) < 0)
      for (pollfd& f : p) f.revents = 0;  // EINTR: only the deadlines to look at
    std::optional<Admitted> admitted = gate.service(p, nullptr);
    if (metrics) metrics->tick();
    if (!admitted) continue;
    const int c = admitted->fd;
    const std::string who = admitted->peer;
    if (cfg.verbose) std::fprintf(stderr, "ceiling serve: %s: session opened\n", who.c_str());
    if (metrics) metrics->session(true);
    Session s(std::move(*admitted), counted, gate);
    s.run();
    ::close(c);
    if (metrics) metrics->session(false);
    if (cfg.verbose) std::fprintf(stderr, "ceiling serve: %s: session closed\n", who.c_str());
  }
  ::close(fd);
  if (metrics) metrics->tick(true);
  return 0;
}

}  // namespace rateline::ceiling
