#include "socket/port_guard.hpp"

#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>

namespace rateline::drivers {

namespace {

OwnedFd guard_one(uint16_t port, bool ipv6) {
  OwnedFd fd(::socket(ipv6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) return fd;
  sockaddr_storage ss{};
  socklen_t len;
  if (ipv6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    len = sizeof *a;
    const int v6only = 0;  // IPv4-mapped too, as rx --ipv6 receives
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    len = sizeof *a;
  }
  const int reuse = 1;  // one guard per worker queue may hold the port together
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEPORT, &reuse, sizeof reuse);
  sock_filter drop_all[] = {{BPF_RET | BPF_K, 0, 0, 0}};
  sock_fprog prog{1, drop_all};
  if (setsockopt(fd.get(), SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0 ||
      ::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0)
    return OwnedFd();
  return fd;
}

}  // namespace

PortGuard::PortGuard(uint16_t port, bool ipv6, uint16_t count) {
  for (uint32_t i = 0; i < count; ++i)
    if (OwnedFd fd = guard_one(static_cast<uint16_t>(port + i), ipv6)) fds_.push_back(std::move(fd));
}

}  // namespace rateline::drivers
