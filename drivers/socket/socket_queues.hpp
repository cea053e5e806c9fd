// Plain-socket backend: sendmmsg / recvmmsg batches on UDP sockets. It runs
// everywhere (old kernels, qemu-user, no privileges) and is the fallback of
// every other backend.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/queue.hpp"
#include "socket/udp_socket.hpp"

namespace rateline::drivers {

class SocketTxQueue {
 public:
  static constexpr engine::Layer kLayer = engine::Layer::udp_payload;

  explicit SocketTxQueue(const UdpTxConfig& cfg);
  ~SocketTxQueue();
  SocketTxQueue(const SocketTxQueue&) = delete;
  SocketTxQueue& operator=(const SocketTxQueue&) = delete;

  std::span<engine::TxSlot> reserve(uint32_t n) {
    return {slots_.data(), n < slots_.size() ? n : slots_.size()};
  }
  engine::CommitResult commit(std::span<engine::TxSlot> filled);
  void cancel(std::span<engine::TxSlot>) {}  // our buffers: nothing to give back
  void flush() {}  // sendmmsg returned: the kernel owns the data already
  void reclaim();                            // waits briefly for send-buffer space

 private:
  std::vector<int> fds_;  // one per flow (flows of one source port share its socket)
  std::unique_ptr<uint8_t[]> buffers_;
  std::vector<engine::TxSlot> slots_;
  std::vector<iovec> iov_;
  std::vector<mmsghdr> msgs_;
  // UDP GSO (UDP_SEGMENT): a run of equal-size slots goes out as one
  // sendmsg whose iovecs the kernel cuts into datagrams of that size, one
  // trip through the UDP/IP stack per run instead of per packet. Each
  // datagram keeps its own header, sequence and stamp.
  uint32_t send_gso(int fd, size_t first, size_t count);
  bool gso_ = false;
  uint32_t gso_max_segments_ = 0;
  std::vector<SocketAddress> dsts_;  // one per flow
  int last_fd_ = -1;
};

class SocketRxQueue {
 public:
  static constexpr engine::Layer kLayer = engine::Layer::udp_payload;

  explicit SocketRxQueue(const UdpRxConfig& cfg);
  ~SocketRxQueue();
  SocketRxQueue(const SocketRxQueue&) = delete;
  SocketRxQueue& operator=(const SocketRxQueue&) = delete;

  std::span<const engine::RxFrame> poll(uint32_t n);
  void release() {}
  // rx --reflect: the picked frames of the last poll() back to their senders, from this socket.
  engine::ReflectResult reflect(std::span<const uint32_t> picks);
  uint64_t drops() const { return socket_drops(fd_); }
  const RxSocketInfo& info() const { return info_; }

 private:
  RxSocketInfo info_;
  int fd_ = -1;
  ReflectBatch reflect_;
  std::unique_ptr<uint8_t[]> buffers_;
  std::vector<iovec> iov_;
  std::vector<mmsghdr> msgs_;
  std::vector<sockaddr_storage> sources_;  // msg_name of each message: who sent it
  struct alignas(cmsghdr) StampControl {
    unsigned char bytes[kRxStampControlBytes];
  };
  std::vector<StampControl> controls_;     // msg_control of each message: the kernel's receive time
  std::vector<engine::RxFrame> frames_;
};

}  // namespace rateline::drivers
