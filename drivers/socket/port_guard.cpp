#include "socket/port_guard.hpp"

#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>

namespace rateline::drivers {

PortGuard::PortGuard(uint16_t port, bool ipv6) {
  const int fd = ::socket(ipv6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_storage ss{};
  socklen_t len;
  if (ipv6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    len = sizeof *a;
    const int v6only = 0;  // IPv4-mapped too, as rx --ipv6 receives
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    len = sizeof *a;
  }
  const int reuse = 1;  // one guard per worker queue may hold the port together
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &reuse, sizeof reuse);
  sock_filter drop_all[] = {{BPF_RET | BPF_K, 0, 0, 0}};
  sock_fprog prog{1, drop_all};
  if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0 ||
      ::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    ::close(fd);
    return;
  }
  fd_ = fd;
}

PortGuard::~PortGuard() {
  if (fd_ >= 0) ::close(fd_);
}

PortGuard& PortGuard::operator=(PortGuard&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

}  // namespace rateline::drivers
