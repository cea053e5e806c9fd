// io_uring backend for UDP.
//
// TX: one SENDMSG SQE per slot, linked (IOSQE_IO_LINK) so the batch goes out
// strictly in order and a refused send cancels the rest of the chain; one
// io_uring_enter per batch. MSG_DONTWAIT keeps the sends inline (no kernel
// worker, no poll arming): a full socket ends the chain with EAGAIN and the
// engine retries the remainder, exactly as with sendmmsg.
//
// RX: one multishot RECV per socket on a provided-buffer ring: the kernel
// picks a buffer per datagram and posts one CQE each, with no SQE per
// packet. Buffers go back to the ring in bulk on release(). When the ring
// runs dry the request ends with ENOBUFS (datagrams wait in the socket
// queue, they are not lost) and is re-armed; the count is reported.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/queue.hpp"
#include "socket/udp_socket.hpp"
#include "uring/uring.hpp"
#include "util/owned.hpp"

namespace rateline::drivers {

class UringTxQueue {
 public:
  static constexpr engine::Layer kLayer = engine::Layer::udp_payload;

  explicit UringTxQueue(const UdpTxConfig& cfg);
  ~UringTxQueue();
  UringTxQueue(const UringTxQueue&) = delete;
  UringTxQueue& operator=(const UringTxQueue&) = delete;

  std::span<engine::TxSlot> reserve(uint32_t n) {
    return {slots_.data(), n < slots_.size() ? n : slots_.size()};
  }
  engine::CommitResult commit(std::span<engine::TxSlot> filled);
  void cancel(std::span<engine::TxSlot>) {}
  void flush() {}  // sendmsg returned: the kernel owns the data already
  void reclaim();
  const std::string& mode() const { return ring_.mode(); }

 private:
  uring::Uring ring_;
  std::vector<int> fds_;  // one per flow (flows of one source port share its socket)
  std::unique_ptr<uint8_t[]> buffers_;
  std::vector<engine::TxSlot> slots_;
  std::vector<iovec> iov_;
  std::vector<msghdr> msgs_;
  std::vector<int> results_;
  std::vector<SocketAddress> dsts_;  // one per flow
  int last_fd_ = -1;
};

class UringRxQueue {
 public:
  static constexpr engine::Layer kLayer = engine::Layer::udp_payload;

  explicit UringRxQueue(const UdpRxConfig& cfg);
  ~UringRxQueue();
  UringRxQueue(const UringRxQueue&) = delete;
  UringRxQueue& operator=(const UringRxQueue&) = delete;

  std::span<const engine::RxFrame> poll(uint32_t n);
  void release();
  // rx --reflect: the picked frames of the last poll() back to their senders,
  // from this socket (one sendmmsg, not through the ring: the buffers are
  // still ours until release()).
  engine::ReflectResult reflect(std::span<const uint32_t> picks);
  uint64_t drops() const { return socket_drops(fd_.get()); }
  uint64_t buffer_ring_empty() const { return ring_empty_; }
  const RxSocketInfo& info() const { return info_; }
  const std::string& mode() const { return ring_.mode(); }

 private:
  void arm();

  static constexpr int kBufferGroup = 1;
  uring::Uring ring_;
  RxSocketInfo info_;
  OwnedFd fd_;
  uint32_t slot_bytes_ = 0;
  uint32_t ring_entries_ = 0;
  OwnedMapping buf_ring_map_;
  io_uring_buf_ring* buf_ring_ = nullptr;  // buf_ring_map_'s start
  std::unique_ptr<uint8_t[]> buffers_;
  // Multishot recvmsg: each buffer starts with io_uring_recvmsg_out and the
  // sender's address (the shape this header announces), then the datagram.
  msghdr recv_shape_{};
  std::vector<engine::RxFrame> frames_;
  std::vector<uint16_t> bids_;  // buffer ids of the frames handed out
  std::vector<std::pair<void*, socklen_t>> names_;  // each frame's sender, inside its buffer
  ReflectBatch reflect_;
  uint32_t timeout_ms_ = 100;
  uint64_t ring_empty_ = 0;
  uint32_t handed_out_ = 0;
  bool armed_ = false;
};

}  // namespace rateline::drivers
