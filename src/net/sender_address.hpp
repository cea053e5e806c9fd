// Who sent a datagram, as the IP layer saw it: the source address and UDP
// source port. Every backend knows it (recvmmsg's msg_name, io_uring's
// recvmsg header, the frame's own IP header), so it is the first half of a
// stream's identity at the receiver; the header's sender id is the second.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

namespace rateline::net {

struct SenderAddress {
  // IPv6, or IPv4 as ::ffff:a.b.c.d, so one comparison serves both families.
  std::array<uint8_t, 16> ip{};
  uint16_t port = 0;  // host order

  bool operator==(const SenderAddress&) const = default;

  static SenderAddress v4(const uint8_t* ip4_be, uint16_t port) {
    SenderAddress a;
    a.ip[10] = a.ip[11] = 0xff;
    std::memcpy(a.ip.data() + 12, ip4_be, 4);
    a.port = port;
    return a;
  }
  static SenderAddress v6(const uint8_t* ip6_be, uint16_t port) {
    SenderAddress a;
    std::memcpy(a.ip.data(), ip6_be, 16);
    a.port = port;
    return a;
  }
  // `sa` holds a whole sockaddr_in or sockaddr_in6 (what recvmsg wrote).
  static SenderAddress from_sockaddr(const sockaddr* sa) {
    if (sa->sa_family == AF_INET) {
      const auto* s4 = reinterpret_cast<const sockaddr_in*>(sa);
      return v4(reinterpret_cast<const uint8_t*>(&s4->sin_addr), ntohs(s4->sin_port));
    }
    if (sa->sa_family == AF_INET6) {
      const auto* s6 = reinterpret_cast<const sockaddr_in6*>(sa);
      return v6(s6->sin6_addr.s6_addr, ntohs(s6->sin6_port));
    }
    return {};
  }

  bool is_v4() const {
    static constexpr uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(ip.data(), prefix, 12) == 0;
  }
  // For hashing: the address folded to 64 bits with the port.
  uint64_t fold() const {
    uint64_t hi, lo;
    std::memcpy(&hi, ip.data(), 8);
    std::memcpy(&lo, ip.data() + 8, 8);
    return hi ^ (lo * 0x9e3779b97f4a7c15ull) ^ port;
  }
  // "192.0.2.1:40000", "[2001:db8::1]:40000"; "?" when unknown (all zero).
  std::string text() const;
};

}  // namespace rateline::net
