#include "link.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/clock.hpp"
#include "util/errors.hpp"

namespace rateline::ceiling {

std::unique_ptr<ReceiverLink> ReceiverLink::connect_tcp(const std::string& host_port, uint64_t timeout_ns) {
  const size_t c = host_port.rfind(':');
  if (c == std::string::npos || c == 0 || c + 1 == host_port.size())
    throw SetupError("--remote " + host_port + ": expected HOST:PORT (the receiver's `ceiling --serve PORT`)");
  std::string host = host_port.substr(0, c);
  const std::string port = host_port.substr(c + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
    throw SetupError("Couldn't resolve " + host_port + ": " + gai_strerror(rc));
  int fd = -1, err = 0;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv{static_cast<time_t>(timeout_ns / kNsPerSec), 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);  // bounds connect()
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0)
    throw SetupError("Couldn't connect to the receiver at " + host_port + ": " + errno_text(err) +
                     " (is `ceiling --serve " + port + "` running there, and the port open?)");
  std::unique_ptr<ReceiverLink> l(new ReceiverLink());
  l->rfd_ = l->wfd_ = fd;
  l->describe_ = "receiver " + host_port;
  return l;
}

std::unique_ptr<ReceiverLink> ReceiverLink::spawn_agent(const std::vector<std::string>& argv) {
  SpawnSpec s;
  s.argv = argv;
  s.pipe_stdin = s.pipe_stdout = true;
  std::unique_ptr<ReceiverLink> l(new ReceiverLink());
  l->child_ = spawn(s);
  l->wfd_ = l->child_.in;
  l->rfd_ = l->child_.out;
  l->describe_ = "local receiver agent";
  return l;
}

ReceiverLink::~ReceiverLink() {
  if (wfd_ >= 0) write_all(wfd_, "BYE\n");
  if (child_.pid > 0) {
    ::close(child_.in);  // EOF on its stdin ends the agent
    child_.in = -1;
    if (wait_child(child_, 5 * kNsPerSec) == -1) stop_child(child_, 2 * kNsPerSec);
  } else if (rfd_ >= 0) {
    ::close(rfd_);
  }
}

void ReceiverLink::send_line(const std::string& line) {
  if (!write_all(wfd_, line + "\n")) throw LinkError(describe_ + " hung up");
}

std::optional<proto::Message> ReceiverLink::read_reply(uint64_t timeout_ns) {
  const uint64_t deadline = now_ns() + timeout_ns;
  for (;;) {
    if (auto item = lines_.next()) {
      if (item->too_long) throw LinkError(describe_ + " sent a reply longer than the protocol allows");
      std::string why;
      auto m = proto::parse(item->line, &why);
      if (!m) throw LinkError(describe_ + " sent a malformed reply (" + why + ")");
      return m;
    }
    const uint64_t now = now_ns();
    if (now >= deadline) return std::nullopt;
    pollfd p{rfd_, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<uint64_t>((deadline - now) / kNsPerMs + 1, 200)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[16384];
    const ssize_t n = ::read(rfd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw LinkError(describe_ + " hung up");
    lines_.feed({buf, static_cast<size_t>(n)});
  }
}

namespace {

std::string err_text(const proto::Message& m) {
  const std::string* code = m.get("code");
  return (code ? *code + ": " : std::string()) + m.text;
}

}  // namespace

void ReceiverLink::hello(const std::optional<auth::Key>& key) {
  send_line("HELLO version=" + std::to_string(proto::kVersion));
  auto m = read_reply(10 * kNsPerSec);
  if (!m) throw LinkError(describe_ + " did not answer HELLO within 10 s");
  if (m->verb == "CHALLENGE") {
    if (!key)
      throw LinkError(describe_ + " asks for a key: give --key-file with the file its --key-file names");
    const std::string* nonce_hex = m->get("nonce");
    auth::Nonce agent_nonce{};
    if (!nonce_hex || !auth::parse_hex(*nonce_hex, agent_nonce.data(), agent_nonce.size()))
      throw LinkError(describe_ + " sent a challenge without a 32-byte nonce");
    const auth::Nonce client_nonce = auth::fresh_nonce();
    send_line("AUTH nonce=" + auth::to_hex(client_nonce.data(), client_nonce.size()) +
              " mac=" + auth::proof(*key, auth::Role::client, agent_nonce, client_nonce));
    m = read_reply(10 * kNsPerSec);
    if (!m) throw LinkError(describe_ + " did not answer AUTH within 10 s");
    if (m->verb != "OK") throw LinkError(describe_ + " refused us: " + err_text(*m));
    const std::string* mac = m->get("mac");
    // Mutual: a receiver that cannot prove it holds the key is not the one we meant (or not one we trust).
    if (!mac || !auth::verify(*key, auth::Role::agent, agent_nonce, client_nonce, *mac))
      throw LinkError(describe_ + " did not prove it holds our key (another key file there?): not using it");
    return;
  }
  if (m->verb != "OK") throw LinkError(describe_ + " refused HELLO: " + err_text(*m));
  if (key)
    throw LinkError(describe_ + " does not authenticate (it runs without --key-file): not using it with --key-file");
}

void ReceiverLink::start(const proto::TrialRequest& t, uint64_t timeout_ns) {
  std::string line = proto::to_line(t);
  line.pop_back();
  send_line(line);
  const uint64_t deadline = now_ns() + timeout_ns;
  while (now_ns() < deadline) {
    auto m = read_reply(deadline - now_ns());
    if (!m) break;
    const std::string* id = m->get("id");
    const bool ours = id && *id == std::to_string(t.id);
    if (m->verb == "READY" && ours) return;
    if (m->verb == "ERR" && (ours || !id)) throw LinkError(describe_ + ": " + err_text(*m));
    // Anything else (a late RESULT of an abandoned trial) is not for us: skip it.
  }
  stop(t.id);
  throw LinkError(describe_ + ": rx did not start listening within " + std::to_string(timeout_ns / kNsPerSec) + " s");
}

void ReceiverLink::stop(uint64_t id) { send_line("STOP id=" + std::to_string(id)); }

nlohmann::json ReceiverLink::result(uint64_t id, uint64_t stop_after_ns, uint64_t timeout_ns) {
  const uint64_t start = now_ns();
  bool stopped = false;
  for (;;) {
    const uint64_t now = now_ns();
    if (now - start >= timeout_ns) throw LinkError(describe_ + ": no result for trial " + std::to_string(id));
    if (!stopped && now - start >= stop_after_ns) {
      stop(id);
      stopped = true;
    }
    const uint64_t wait = std::min<uint64_t>(stopped ? timeout_ns - (now - start) : stop_after_ns - (now - start), 500 * kNsPerMs);
    auto m = read_reply(wait);
    if (!m) continue;
    const std::string* mid = m->get("id");
    if (!mid || *mid != std::to_string(id)) continue;
    if (m->verb == "ERR") throw LinkError(describe_ + ": " + err_text(*m));
    if (m->verb == "RESULT") {
      try {
        return nlohmann::json::parse(m->text);
      } catch (const std::exception& e) {
        throw LinkError(describe_ + ": trial " + std::to_string(id) + " result is not JSON: " + e.what());
      }
    }
  }
}

}  // namespace rateline::ceiling
