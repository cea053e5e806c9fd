#include "socket/udp_socket.hpp"

#include "socket/reply_listener.hpp"

#include <arpa/inet.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "util/clock.hpp"
#include "util/errors.hpp"
#include "util/owned.hpp"

namespace rateline::drivers {
namespace {

void bind_device(int fd, const std::string& dev) {
  if (dev.empty()) return;
  if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev.c_str(), static_cast<socklen_t>(dev.size())) != 0)
    throw SetupError("Couldn't bind socket to device " + dev + ": " + errno_text(errno) +
                     (errno == EPERM ? " (needs CAP_NET_RAW)" : errno == ENODEV ? " (no such interface)" : ""));
}

}  // namespace

std::string SocketAddress::text() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (is_v6()) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
    return std::string("[") + buf + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  const auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
  inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(a->sin_port));
}

uint16_t SocketAddress::port() const {
  if (is_v6()) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
}

net::IpAddress SocketAddress::ip() const {
  if (is_v6()) return net::IpAddress::v6(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr);
  return net::IpAddress::v4(reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr);
}

SocketAddress make_address(const std::string& ip, uint16_t port) {
  SocketAddress a;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
  if (inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    a.len = sizeof(sockaddr_in);
    return a;
  }
  if (inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    a.len = sizeof(sockaddr_in6);
    return a;
  }
  throw SetupError("'" + ip + "' is not a numeric IPv4 or IPv6 address");
}

int open_udp_tx_socket(const UdpTxConfig& cfg, uint16_t src_port) {
  const int family = cfg.dst.storage.ss_family;
  OwnedFd s(::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP));
  if (!s) throw SetupError("Couldn't open a UDP socket: " + errno_text(errno));
  bind_device(s.get(), cfg.device);
  if (cfg.sndbuf_bytes > 0) setsockopt(s.get(), SOL_SOCKET, SO_SNDBUF, &cfg.sndbuf_bytes, sizeof(int));
  // Never fragment: a measurement of s-byte datagrams must put s-byte datagrams on the wire.
  int pmtu = family == AF_INET6 ? IPV6_PMTUDISC_DO : IP_PMTUDISC_DO;
  if (family == AF_INET6) setsockopt(s.get(), IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof pmtu);
  else setsockopt(s.get(), IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
  SocketAddress local;
  local.storage.ss_family = static_cast<sa_family_t>(family);
  if (family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&local.storage)->sin6_port = htons(src_port);
    local.len = sizeof(sockaddr_in6);
  } else {
    reinterpret_cast<sockaddr_in*>(&local.storage)->sin_port = htons(src_port);
    local.len = sizeof(sockaddr_in);
  }
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&local.storage), local.len) != 0)
    throw SetupError("Couldn't bind source port " + std::to_string(src_port) + ": " + errno_text(errno) +
                     (errno == EADDRINUSE ? ". Pick another --src-port range" : ""));
  return s.release();
}

std::vector<int> open_udp_tx_sockets(const UdpTxConfig& cfg) {
  std::vector<int> fds;
  std::map<uint16_t, int> by_port;  // bound ports' sockets; port 0 (the kernel's choice) is never shared
  try {
    for (uint16_t port : cfg.src_ports) {
      if (const auto it = by_port.find(port); port && it != by_port.end()) {
        fds.push_back(it->second);
        continue;
      }
      fds.push_back(open_udp_tx_socket(cfg, port));
      by_port[port] = fds.back();
      if (cfg.replies) cfg.replies->adopt(fds.back());
    }
  } catch (...) {
    close_udp_tx_sockets(fds);
    throw;
  }
  return fds;
}

void close_udp_tx_sockets(const std::vector<int>& fds) {
  for (int fd : std::set<int>(fds.begin(), fds.end())) ::close(fd);
}

RxSocketInfo open_udp_rx_socket(const UdpRxConfig& cfg) {
  const int family = cfg.bind.storage.ss_family;
  OwnedFd s(::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP));
  if (!s) throw SetupError("Couldn't open a UDP socket: " + errno_text(errno));
  const int one = 1;
  if (cfg.reuseport) setsockopt(s.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  bind_device(s.get(), cfg.device);
  RxSocketInfo info;
  if (cfg.rcvbuf_bytes > 0) {
    // RCVBUFFORCE ignores net.core.rmem_max but needs CAP_NET_ADMIN; without
    // it the kernel silently caps SO_RCVBUF, so we report what we got.
    if (setsockopt(s.get(), SOL_SOCKET, SO_RCVBUFFORCE, &cfg.rcvbuf_bytes, sizeof(int)) == 0) info.rcvbuf_forced = true;
    else setsockopt(s.get(), SOL_SOCKET, SO_RCVBUF, &cfg.rcvbuf_bytes, sizeof(int));
  }
  socklen_t l = sizeof info.rcvbuf_bytes;
  getsockopt(s.get(), SOL_SOCKET, SO_RCVBUF, &info.rcvbuf_bytes, &l);
  if (family == AF_INET6) {
    const int v6only = 0;  // [::] also receives IPv4-mapped traffic
    setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  }
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&cfg.bind.storage), cfg.bind.len) != 0) {
    const int e = errno;
    throw SetupError("Couldn't bind " + cfg.bind.text() + ": " + errno_text(e) +
                     (e == EADDRINUSE ? ". Another program holds the port: stop it or use --port"
                      : e == EADDRNOTAVAIL ? ". No interface has that address: use --bind with a local address"
                      : e == EACCES ? ". Ports below 1024 need root or CAP_NET_BIND_SERVICE" : ""));
  }
  // Receive times from the kernel, per datagram: latency then leaves out the
  // time a datagram waited in the socket buffer for the reader.
  info.kernel_stamps = setsockopt(s.get(), SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) == 0;
  info.fd = s.release();
  return info;
}

uint64_t rx_stamp_ns(const cmsghdr& c, int64_t realtime_minus_monotonic) {
  if (c.cmsg_level != SOL_SOCKET || c.cmsg_type != SCM_TIMESTAMPNS || c.cmsg_len < CMSG_LEN(sizeof(timespec))) return 0;
  timespec ts;
  std::memcpy(&ts, CMSG_DATA(&c), sizeof ts);
  return kernel_stamp_ns(ts, realtime_minus_monotonic);
}

uint64_t rx_stamp_ns(const msghdr& m, int64_t realtime_minus_monotonic) {
  for (const cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(const_cast<msghdr*>(&m), const_cast<cmsghdr*>(c)))
    if (const uint64_t ns = rx_stamp_ns(*c, realtime_minus_monotonic)) return ns;
  return 0;
}

void ensure_port_free(const SocketAddress& bind) {
  OwnedFd s(::socket(bind.storage.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP));
  if (!s) throw SetupError("Couldn't open a UDP socket: " + errno_text(errno));
  if (bind.is_v6()) {
    const int v6only = 0;
    setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  }
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&bind.storage), bind.len) == 0) return;
  const int e = errno;
  if (e == EADDRINUSE)
    throw SetupError("Couldn't bind " + bind.text() + ": the port is in use by another program: stop it or use --port");
  throw SetupError("Couldn't bind " + bind.text() + ": " + errno_text(e) +
                   (e == EADDRNOTAVAIL ? ". No interface has that address: use --bind with a local address"
                    : e == EACCES ? ". Ports below 1024 need root or CAP_NET_BIND_SERVICE" : ""));
}

ReflectBatch::ReflectBatch(uint32_t capacity) : iov_(capacity), msgs_(capacity) {
  for (uint32_t i = 0; i < capacity; ++i) {
    msgs_[i].msg_hdr.msg_iov = &iov_[i];
    msgs_[i].msg_hdr.msg_iovlen = 1;
  }
}

engine::ReflectResult ReflectBatch::send(int fd, size_t count) {
  engine::ReflectResult r;
  size_t done = 0;
  while (done < count) {
    const int sent = ::sendmmsg(fd, msgs_.data() + done, static_cast<unsigned>(count - done), MSG_DONTWAIT);
    if (sent > 0) {
      done += static_cast<size_t>(sent);
      r.sent += static_cast<uint32_t>(sent);
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) break;  // full now: the rest is dropped
    ++done;  // refused for good (unreachable, a firewall): that one is dropped, the others still go
    ++r.failed;
  }
  r.failed += static_cast<uint32_t>(count - done);
  return r;
}

uint64_t socket_drops(int fd) {
  uint32_t mem[SK_MEMINFO_VARS] = {};
  socklen_t l = sizeof mem;
  if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &l) != 0 || l < sizeof(uint32_t) * (SK_MEMINFO_DROPS + 1)) return 0;
  return mem[SK_MEMINFO_DROPS];
}

uint32_t path_mtu(const SocketAddress& dst, const std::string& device) {
  const int family = dst.storage.ss_family;
  OwnedFd s(::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP));
  if (!s) return 0;
  if (!device.empty())
    setsockopt(s.get(), SOL_SOCKET, SO_BINDTODEVICE, device.c_str(), static_cast<socklen_t>(device.size()));
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&dst.storage), dst.len) != 0) return 0;
  int mtu = 0;
  socklen_t l = sizeof mtu;
  if (family == AF_INET6) {
    if (getsockopt(s.get(), IPPROTO_IPV6, IPV6_MTU, &mtu, &l) != 0) return 0;
  } else if (getsockopt(s.get(), IPPROTO_IP, IP_MTU, &mtu, &l) != 0) {
    return 0;
  }
  return mtu > 0 ? static_cast<uint32_t>(mtu) : 0;
}

}  // namespace rateline::drivers
