#include "address.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <stdexcept>

#include "util/errors.hpp"

namespace rateline::ceiling {

drivers::SocketAddress listen_address(const std::string& spec) {
  // Loopback unless told: an agent starts trials for whoever reaches it, so reaching it from elsewhere is a choice.
  std::string host = "127.0.0.1", port = spec;
  if (const size_t c = spec.rfind(':'); c != std::string::npos) {
    host = spec.substr(0, c);
    port = spec.substr(c + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  }
  unsigned long p = 0;
  size_t used = 0;
  try {
    p = std::stoul(port, &used);
  } catch (const std::exception&) {
  }
  if (p == 0 || p > 65535 || used != port.size() || !std::isdigit(static_cast<unsigned char>(port[0])))
    throw SetupError(spec + ": expected [ADDR:]PORT with PORT 1..65535");
  return drivers::make_address(host, static_cast<uint16_t>(p));
}

int listen_on(const drivers::SocketAddress& addr) {
  // Non-blocking: the gate accepts until the queue is empty, and never waits in accept().
  const int fd = ::socket(addr.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw SetupError(std::string("Couldn't create the control socket: ") + errno_text(errno));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr.storage), addr.len) != 0) {
    const int e = errno;
    ::close(fd);
    throw SetupError("Couldn't listen on " + addr.text() + ": " + errno_text(e) +
                     (e == EADDRINUSE ? " (another server runs there: pick another port)" : ""));
  }
  // A backlog deep enough that a burst of connections reaches the gate (which counts and refuses them, with a
  // log line each) rather than waiting in SYN retries.
  listen(fd, 128);
  return fd;
}

bool is_loopback(const drivers::SocketAddress& a) {
  if (a.storage.ss_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr.s_addr) >> 24) == 127;
  if (a.storage.ss_family != AF_INET6) return false;
  const in6_addr& v6 = reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
}

}  // namespace rateline::ceiling
