#include "net/iface.hpp"

#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "util/errors.hpp"

namespace rateline::net {

Interface interface_info(const std::string& name) {
  Interface i;
  i.name = name;
  i.index = static_cast<int>(if_nametoindex(name.c_str()));
  if (i.index == 0) throw SetupError("Couldn't find interface " + name + ": " + errno_text(errno) + " (see `ip link`)");
  std::ifstream addr("/sys/class/net/" + name + "/address");
  std::string text;
  if (addr >> text) {
    try {
      i.mac = parse_mac(text);
    } catch (const std::invalid_argument&) {
      // Devices without an Ethernet address (tun) keep zeros.
    }
  }
  std::ifstream mtu("/sys/class/net/" + name + "/mtu");
  mtu >> i.mtu;
  return i;
}

std::optional<MacAddress> neighbour_mac(const IpAddress& ip, int ifindex) {
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return std::nullopt;
  struct {
    nlmsghdr nh;
    ndmsg nd;
  } req{};
  req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(ndmsg));
  req.nh.nlmsg_type = RTM_GETNEIGH;
  req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.nd.ndm_family = ip.is_v6 ? AF_INET6 : AF_INET;
  std::optional<MacAddress> found;
  if (::send(fd, &req, req.nh.nlmsg_len, 0) < 0) {
    ::close(fd);
    return found;
  }
  alignas(nlmsghdr) char buf[16384];
  bool done = false;
  while (!done) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    for (auto* nh = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n)) {
      if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) {
        done = true;
        break;
      }
      auto* nd = static_cast<ndmsg*>(NLMSG_DATA(nh));
      if (nd->ndm_ifindex != ifindex || (nd->ndm_state & (NUD_INCOMPLETE | NUD_FAILED | NUD_NOARP)) ||
          nd->ndm_state == NUD_NONE)
        continue;
      const uint8_t* dst = nullptr;
      const uint8_t* lladdr = nullptr;
      int lllen = 0;
      int len = static_cast<int>(RTM_PAYLOAD(nh));
      for (auto* a = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(nd) + NLMSG_ALIGN(sizeof(ndmsg)));
           RTA_OK(a, len); a = RTA_NEXT(a, len)) {
        if (a->rta_type == NDA_DST) dst = static_cast<const uint8_t*>(RTA_DATA(a));
        if (a->rta_type == NDA_LLADDR) {
          lladdr = static_cast<const uint8_t*>(RTA_DATA(a));
          lllen = static_cast<int>(RTA_PAYLOAD(a));
        }
      }
      if (dst && lladdr && lllen == 6 && std::memcmp(dst, ip.bytes.data(), ip.is_v6 ? 16 : 4) == 0) {
        MacAddress m;
        std::memcpy(m.data(), lladdr, 6);
        found = m;
      }
    }
  }
  ::close(fd);
  return found;
}

MacAddress parse_mac(const std::string& text) {
  MacAddress m{};
  unsigned v[6];
  char tail;
  if (std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
    throw std::invalid_argument("'" + text + "' is not a MAC address (aa:bb:cc:dd:ee:ff)");
  for (int i = 0; i < 6; ++i) m[i] = static_cast<uint8_t>(v[i]);
  return m;
}

std::string mac_text(const MacAddress& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return buf;
}

}  // namespace rateline::net
