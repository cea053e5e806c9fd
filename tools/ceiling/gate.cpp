#include "gate.hpp"

#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "agent_metrics.hpp"
#include "server.hpp"
#include "socket/udp_socket.hpp"
#include "util/clock.hpp"

namespace rateline::ceiling {

namespace {

// Handshake replies are a line each into an empty socket buffer: a peer that cannot take one in this long is gone.
constexpr uint64_t kHandshakeSendNs = 1 * kNsPerSec;
constexpr uint64_t kLogWindowNs = 10 * kNsPerSec;

}  // namespace

std::string peer_text(const sockaddr_storage& addr, socklen_t len) {
  drivers::SocketAddress a;
  a.storage = addr;
  a.len = len;
  return addr.ss_family == AF_INET || addr.ss_family == AF_INET6 ? a.text() : "(unknown address)";
}

bool send_by(int fd, std::string_view data, uint64_t deadline_ns) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    const uint64_t now = now_ns();
    if (now >= deadline_ns) {
      errno = ETIMEDOUT;
      return false;
    }
    pollfd p{fd, POLLOUT, 0};
    poll(&p, 1, static_cast<int>((deadline_ns - now) / kNsPerMs + 1));
  }
  return true;
}

void RefusalLog::line(const std::string& peer, const std::string& what) {
  const uint64_t now = now_ns();
  if (now - window_start_ns_ > kLogWindowNs) {
    if (unlogged_)
      std::fprintf(stderr, "ceiling serve: %u more refused or dropped clients in the last %llu s, not logged one by one\n",
                   unlogged_, static_cast<unsigned long long>(kLogWindowNs / kNsPerSec));
    window_start_ns_ = now;
    lines_ = unlogged_ = 0;
  }
  if (++lines_ > kMaxLinesPerWindow) {
    ++unlogged_;
    return;
  }
  std::fprintf(stderr, "ceiling serve: %s: %s\n", peer.c_str(), what.c_str());
}

Gate::Gate(int listen_fd, const ServeConfig& cfg) : listen_fd_(listen_fd), cfg_(cfg) {}

Gate::~Gate() {
  for (const auto& p : pending_)
    if (p->fd >= 0) ::close(p->fd);
}

void Gate::add_poll_fds(std::vector<pollfd>& fds) {
  first_fd_index_ = fds.size();
  fds.push_back({listen_fd_, POLLIN, 0});
  for (const auto& p : pending_) fds.push_back({p->fd, POLLIN, 0});
  polled_ = pending_.size();
}

void Gate::refuse(Pending& p, const char* code, const std::string& text) {
  if (cfg_.counts) cfg_.counts->err_reply(code);
  log_.line(p.peer, std::string("refused (code=") + code + "): " + text);
  send_by(p.fd, std::string("ERR code=") + code + " " + text + "\n", now_ns() + kHandshakeSendNs);
  ::close(p.fd);
  p.fd = -1;
  p.finished = true;
}

void Gate::step(Pending& p, const proto::LineSplitter::Item& item, bool& busy, std::optional<Admitted>& admitted,
                const std::string* session_peer) {
  // Before a client has proved it holds the key it gets one chance: any error closes the connection.
  if (item.too_long) {
    refuse(p, "too-long", "request longer than " + std::to_string(proto::kMaxRequestBytes) + " bytes before authentication");
    return;
  }
  std::string why;
  const auto m = proto::parse(item.line, &why);
  if (!m) {
    refuse(p, "malformed", why + " (before authentication)");
    return;
  }
  const std::string version = std::to_string(proto::kVersion);
  if (!p.challenged) {
    if (m->verb != "HELLO") {
      refuse(p, "auth", m->verb + " before authentication: this agent takes HELLO version=" + version +
                            ", then AUTH, from clients with its key (--key-file)");
      return;
    }
    const std::string* v = m->get("version");
    if (!v || *v != version) {
      refuse(p, "bad-value", "this receiver speaks version=" + version);
      return;
    }
    p.agent_nonce = auth::fresh_nonce();
    p.challenged = true;
    if (!send_by(p.fd, "CHALLENGE nonce=" + auth::to_hex(p.agent_nonce.data(), p.agent_nonce.size()) + "\n",
                 now_ns() + kHandshakeSendNs)) {
      log_.line(p.peer, "dropped: it did not take the challenge");
      ::close(p.fd);
      p.fd = -1;
      p.finished = true;
    }
    return;
  }
  if (m->verb != "AUTH") {
    refuse(p, "auth", m->verb + " instead of AUTH: answer the challenge first (a client needs --key-file)");
    return;
  }
  const std::string* nonce_hex = m->get("nonce");
  const std::string* mac_hex = m->get("mac");
  auth::Nonce client_nonce{};
  if (!nonce_hex || !mac_hex || !auth::parse_hex(*nonce_hex, client_nonce.data(), client_nonce.size()) ||
      mac_hex->size() != 2 * auth::kMacBytes) {
    refuse(p, "malformed", "AUTH takes nonce=<64 hex digits> mac=<64 hex digits>");
    return;
  }
  if (!auth::verify(*cfg_.key, auth::Role::client, p.agent_nonce, client_nonce, *mac_hex)) {
    refuse(p, "auth", "wrong key: the client's proof does not match this agent's --key-file");
    return;
  }
  if (busy) {
    refuse(p, "busy", "another session is running on this receiver" +
                          (session_peer ? " (with " + *session_peer + ")" : std::string()));
    return;
  }
  const std::string agent_proof = auth::proof(*cfg_.key, auth::Role::agent, p.agent_nonce, client_nonce);
  if (!send_by(p.fd, "OK version=" + version + " mac=" + agent_proof + "\n", now_ns() + kHandshakeSendNs)) {
    log_.line(p.peer, "dropped: it did not take the agent's proof");
    ::close(p.fd);
    p.fd = -1;
    p.finished = true;
    return;
  }
  if (cfg_.verbose) std::fprintf(stderr, "ceiling serve: %s: authenticated\n", p.peer.c_str());
  admitted.emplace();
  admitted->fd = p.fd;
  admitted->peer = p.peer;
  admitted->greeted = true;
  admitted->lines = std::move(p.lines);
  p.fd = -1;
  p.finished = true;
  busy = true;
}

void Gate::read_from(Pending& p, bool& busy, std::optional<Admitted>& admitted, const std::string* session_peer) {
  char buf[1024];
  const ssize_t got = ::recv(p.fd, buf, sizeof buf, MSG_DONTWAIT);
  if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (got <= 0) {
    log_.line(p.peer, std::string("dropped: hung up during the handshake") + (p.challenged ? " (after the challenge)" : ""));
    ::close(p.fd);
    p.fd = -1;
    p.finished = true;
    return;
  }
  p.lines.feed({buf, static_cast<size_t>(got)});
  while (!p.finished) {
    auto item = p.lines.next();
    if (!item) break;
    step(p, *item, busy, admitted, session_peer);
  }
}

void Gate::accept_all(bool& busy, std::optional<Admitted>& admitted, const std::string* session_peer) {
  for (;;) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN: no more waiting (the listening socket is non-blocking)
    const std::string who = peer_text(peer, len);
    if (cfg_.counts) cfg_.counts->connection();
    // Room for a few whole replies: a sender busy running pktgen reads its RESULT only afterwards, and that
    // must not count as a client that stopped reading (send_by).
    const int sndbuf = static_cast<int>(4 * proto::kMaxReplyBytes);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    const size_t held = pending_.size() + (busy ? 1 : 0);
    if (!cfg_.key && busy) {
      // Without a key there is no handshake: the connection is the session, and one runs.
      log_.line(who, "refused (code=busy): the session with " + (session_peer ? *session_peer : std::string("another client")) +
                         " is running");
      if (cfg_.counts) cfg_.counts->err_reply("busy");
      send_by(fd, "ERR code=busy another session is running on this receiver\n", now_ns() + kHandshakeSendNs);
      ::close(fd);
      continue;
    }
    if (held >= cfg_.max_clients) {
      log_.line(who, "refused (code=busy): " + std::to_string(held) + " connections held (--max-clients " +
                         std::to_string(cfg_.max_clients) + ")");
      if (cfg_.counts) cfg_.counts->err_reply("busy");
      send_by(fd, "ERR code=busy too many connections to this receiver\n", now_ns() + kHandshakeSendNs);
      ::close(fd);
      continue;
    }
    if (!cfg_.key) {
      admitted.emplace();
      admitted->fd = fd;
      admitted->peer = who;
      busy = true;
      continue;
    }
    auto p = std::make_unique<Pending>();
    p->fd = fd;
    p->peer = who;
    p->opened_ns = now_ns();
    pending_.push_back(std::move(p));
  }
}

std::optional<Admitted> Gate::service(const std::vector<pollfd>& fds, const std::string* session_peer) {
  std::optional<Admitted> admitted;
  bool busy = session_peer != nullptr;
  for (size_t i = 0; i < polled_; ++i) {
    Pending& p = *pending_[i];
    const pollfd& f = fds[first_fd_index_ + 1 + i];
    if (!p.finished && (f.revents & (POLLIN | POLLHUP | POLLERR))) read_from(p, busy, admitted, session_peer);
  }
  const uint64_t now = now_ns();
  for (auto& p : pending_) {
    if (p->finished || now - p->opened_ns <= kHandshakeTimeoutNs) continue;
    const std::string why = std::string("no ") + (p->challenged ? "AUTH" : "HELLO") + " within " +
                            std::to_string(kHandshakeTimeoutNs / kNsPerSec) + " s of connecting" +
                            (p->lines.has_partial() ? " (a request begun and never ended: a slow client)" : "");
    refuse(*p, "timeout", why);
  }
  std::erase_if(pending_, [](const std::unique_ptr<Pending>& p) { return p->finished; });
  polled_ = 0;  // indices are stale now; add_poll_fds() sets them again
  if (fds.size() > first_fd_index_ && (fds[first_fd_index_].revents & POLLIN)) accept_all(busy, admitted, session_peer);
  return admitted;
}

}  // namespace rateline::ceiling
