#include "report/metrics_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <vector>

#include "report/output_file.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "util/privileges.hpp"
#include "util/stop_signal.hpp"

namespace rateline::report {
namespace {

// A scraper gets this long to send its request and to take the answer;
// then it is dropped and the next one is served.
constexpr int kClientDeadlineMs = 2000;
constexpr size_t kMaxRequestBytes = 8192;

// Waits for `events` on fd until the deadline; false when it passed.
bool wait_for(int fd, short events, uint64_t deadline_ns) {
  for (;;) {
    const uint64_t now = now_ns();
    if (now >= deadline_ns) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>((deadline_ns - now) / 1'000'000 + 1));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
  }
}

bool send_all(int fd, std::string_view data, uint64_t deadline_ns) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_for(fd, POLLOUT, deadline_ns)) continue;
    return false;
  }
  return true;
}

std::string response(std::string_view status, std::string_view content_type, std::string_view body, bool head) {
  std::string r = "HTTP/1.0 ";
  r += status;
  r += "\r\nContent-Type: ";
  r += content_type;
  r += "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  if (!head) r += body;
  return r;
}

}  // namespace

MetricsEndpoint parse_metrics_endpoint(std::string_view text) {
  MetricsEndpoint e;
  std::string_view port_text = text;
  if (const size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    std::string_view addr = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (addr.size() >= 2 && addr.front() == '[' && addr.back() == ']') addr = addr.substr(1, addr.size() - 2);
    if (addr.empty()) throw std::invalid_argument("'" + std::string(text) + "': give [ADDR:]PORT, e.g. 9464 or 0.0.0.0:9464");
    e.address = addr;
    in6_addr probe{};
    if (::inet_pton(AF_INET, e.address.c_str(), &probe) != 1 && ::inet_pton(AF_INET6, e.address.c_str(), &probe) != 1)
      throw std::invalid_argument("'" + e.address + "' is not a numeric IPv4 or IPv6 address (IPv6 as [::1]:PORT)");
  }
  unsigned long port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc{} || end != port_text.data() + port_text.size())
    throw std::invalid_argument("'" + std::string(port_text) + "' is not a port number");
  if (port > 65535) throw std::invalid_argument(std::string(port_text) + ": port out of range (0..65535; 0 = pick a free one)");
  e.port = static_cast<uint16_t>(port);
  return e;
}

MetricsServer::MetricsServer(const MetricsEndpoint& at) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  const bool v6 = at.address.find(':') != std::string::npos;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(at.port);
    ::inet_pton(AF_INET6, at.address.c_str(), &a->sin6_addr);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(at.port);
    ::inet_pton(AF_INET, at.address.c_str(), &a->sin_addr);
    len = sizeof *a;
  }
  const std::string where = (v6 ? "[" + at.address + "]" : at.address) + ":" + std::to_string(at.port);
  listen_fd_ = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) throw SetupError("Couldn't open the metrics socket: " + errno_text(errno));
  // A restarted run may take its port back while old connections linger in TIME_WAIT.
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(listen_fd_, 16) != 0) {
    const int err = errno;
    ::close(listen_fd_);
    throw SetupError("Couldn't listen for metrics on " + where + ": " + errno_text(err) +
                     (err == EADDRINUSE ? ". Give another port, or 0 to pick a free one" :
                      err == EADDRNOTAVAIL ? ". Give an address of this host" : ""));
  }
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  const uint16_t port = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  listening_ = (v6 ? "[" + at.address + "]" : at.address) + ":" + std::to_string(port);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    ::close(listen_fd_);
    throw SetupError("Couldn't make an eventfd for the metrics server: " + errno_text(errno));
  }
  page_ = "# rateline: no snapshot yet\n";
}

MetricsServer::~MetricsServer() {
  stop_.store(true, std::memory_order_relaxed);
  const uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof one) < 0) {
    // Nothing to do: the thread also checks stop_ after each connection.
  }
  if (thread_.joinable()) thread_.join();
  ::close(wake_fd_);
  ::close(listen_fd_);
}

void MetricsServer::start() {
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "metrics");
    keep_only_capabilities({});  // it only accepts and writes: no capability at all
    serve_forever();
  });
}

void MetricsServer::publish(std::string page) {
  std::lock_guard lock(page_mutex_);
  page_.swap(page);
}

void MetricsServer::serve_forever() {
  while (!stop_.load(std::memory_order_relaxed)) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 || !(p[0].revents & POLLIN)) continue;
    const int conn = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (conn < 0) continue;
    serve_one(conn);
    ::close(conn);
  }
}

void MetricsServer::serve_one(int conn) {
  const uint64_t deadline = now_ns() + uint64_t{kClientDeadlineMs} * 1'000'000;
  std::string request;
  char buf[2048];
  // The request line and headers; the body (there is none for GET) is never read.
  while (request.find("\r\n\r\n") == std::string::npos && request.find("\n\n") == std::string::npos) {
    if (request.size() > kMaxRequestBytes) return;
    const ssize_t n = ::recv(conn, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      request.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) break;  // HTTP/0.9-style clients close after the line: answer what came
    if (errno == EINTR) continue;
    if ((errno == EAGAIN || errno == EWOULDBLOCK) && wait_for(conn, POLLIN, deadline)) continue;
    return;
  }
  const std::string_view line(request.data(), request.find_first_of("\r\n") == std::string::npos
                                                  ? request.size() : request.find_first_of("\r\n"));
  const size_t sp1 = line.find(' ');
  const std::string_view method = line.substr(0, sp1);
  std::string_view target = sp1 == std::string_view::npos ? std::string_view{} : line.substr(sp1 + 1);
  target = target.substr(0, target.find(' '));
  target = target.substr(0, target.find('?'));
  const bool head = method == "HEAD";
  std::string answer;
  if (method != "GET" && !head) {
    answer = response("405 Method Not Allowed", "text/plain; charset=utf-8", "GET /metrics\n", false);
  } else if (target == "/metrics") {
    std::string page;
    {
      std::lock_guard lock(page_mutex_);
      page = page_;
    }
    answer = response("200 OK", "text/plain; version=0.0.4; charset=utf-8", page, head);
  } else if (target == "/") {
    answer = response("200 OK", "text/plain; charset=utf-8", "rateline: metrics at /metrics\n", head);
  } else {
    answer = response("404 Not Found", "text/plain; charset=utf-8", "not found: metrics are at /metrics\n", head);
  }
  send_all(conn, answer, deadline);
}

MetricsOutput::MetricsOutput(const MetricsOptions& asked) : textfile_(asked.textfile), linger_ns_(asked.linger_ns) {
  if (!textfile_.empty())
    if (const std::string why = OutputFile::probe(textfile_, "metrics textfile"); !why.empty()) throw SetupError(why);
  if (asked.endpoint) server_ = std::make_unique<MetricsServer>(*asked.endpoint);
}

void MetricsOutput::start() {
  if (server_) server_->start();
}

std::string MetricsOutput::start_line() const {
  std::string line;
  if (server_) line = "metrics: http://" + server_->listening() + "/metrics";
  if (!textfile_.empty()) line += (line.empty() ? "metrics: " : "; ") + ("textfile " + textfile_);
  return line;
}

std::string MetricsOutput::publish(std::string page, uint64_t now, bool final) {
  const bool textfile_due = !textfile_.empty() && !textfile_failed_ &&
                            (final || now - textfile_written_ns_ >= kNsPerSec);
  std::string error;
  if (textfile_due) {
    try {
      write_whole_file(textfile_, page, "metrics textfile");
      textfile_written_ns_ = now;
    } catch (const SetupError& e) {
      textfile_failed_ = true;  // said once; the run goes on
      error = e.what();
    }
  }
  if (server_) server_->publish(std::move(page));
  return error;
}

void MetricsOutput::linger() const {
  if (!server_ || !linger_ns_) return;
  const uint64_t until = now_ns() + linger_ns_;
  while (!stop_flag().load() && now_ns() < until) {
    timespec ts{0, 50'000'000};
    nanosleep(&ts, nullptr);
  }
}

}  // namespace rateline::report
