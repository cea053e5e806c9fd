#include "afpacket/frame_reflector.hpp"

#include <linux/if_packet.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "net/frame.hpp"
#include "util/errors.hpp"

namespace rateline::drivers {

engine::ReflectResult FrameReflector::reflect(int fd, std::span<const engine::RxFrame> frames,
                                              std::span<const uint32_t> picks) {
  size_t total = 0;
  for (uint32_t i : picks) total += frames[i].len;
  if (bytes_.size() < total) bytes_.resize(total);
  size_t at = 0, count = 0;
  for (uint32_t i : picks) {
    uint8_t* reply = bytes_.data() + at;
    std::memcpy(reply, frames[i].data, frames[i].len);
    // Not a UDP frame cannot happen: only checked data packets are picked.
    if (!net::reflect_udp_frame({reply, frames[i].len})) continue;
    batch_.set(count++, reply, frames[i].len, nullptr, 0);  // the socket is bound to the interface
    at += frames[i].len;
  }
  return batch_.send(fd, count);
}

OwnedFd open_send_only_packet_socket(const net::Interface& iface) {
  OwnedFd fd(::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
  if (!fd) throw BackendUnavailable("Couldn't open an AF_PACKET socket to send replies: " + errno_text(errno));
  sockaddr_ll ll{};
  ll.sll_family = AF_PACKET;
  ll.sll_ifindex = iface.index;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&ll), sizeof ll) != 0)
    throw SetupError("Couldn't bind AF_PACKET to " + iface.name + ": " + errno_text(errno));
  return fd;
}

}  // namespace rateline::drivers
