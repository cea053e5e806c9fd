// rx --reflect for the raw receivers (afpacket, afxdp): copies of the picked
// frames, turned into their replies (net::reflect_udp_frame: ends swapped,
// checksums recomputed), sent out of the interface they came in on through
// an AF_PACKET socket bound to it. AF_PACKET sends from its receiving
// socket; AF_XDP, whose UMEM frames all belong to the receive side, opens a
// send-only one (a copy per reply: replies are a sample of the load).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/queue.hpp"
#include "net/iface.hpp"
#include "socket/udp_socket.hpp"
#include "util/owned.hpp"

namespace rateline::drivers {

class FrameReflector {
 public:
  explicit FrameReflector(uint32_t batch) : batch_(batch) {}
  // The replies to frames[i] for i in picks, sent from `fd` (a packet socket bound to the interface).
  engine::ReflectResult reflect(int fd, std::span<const engine::RxFrame> frames, std::span<const uint32_t> picks);

 private:
  std::vector<uint8_t> bytes_;  // the replies being built; grows to the largest batch of them, once
  ReflectBatch batch_;
};

// An AF_PACKET socket that receives nothing (protocol 0) and sends out of `iface`.
OwnedFd open_send_only_packet_socket(const net::Interface& iface);

}  // namespace rateline::drivers
