#include "socket/socket_queues.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <netinet/udp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/clock.hpp"
#include "util/errors.hpp"

namespace rateline::drivers {
namespace {

// Transient: the packet was not sent and may be retried.
bool transient(int e) { return e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS || e == EINTR; }

}  // namespace

SocketTxQueue::SocketTxQueue(const UdpTxConfig& cfg) : gso_(cfg.gso), dsts_(cfg.flow_dsts) {
  dsts_.resize(cfg.src_ports.size(), cfg.dst);
  // The kernel takes at most 64 segments (UDP_MAX_SEGMENTS on older kernels) and 64 KiB per GSO send.
  gso_max_segments_ = std::min<uint32_t>(64, 65000 / std::max<uint32_t>(cfg.slot_bytes, 1));
  fds_ = open_udp_tx_sockets(cfg);
  buffers_ = std::make_unique<uint8_t[]>(size_t{cfg.batch} * cfg.slot_bytes);
  slots_.resize(cfg.batch);
  iov_.resize(cfg.batch);
  msgs_.resize(cfg.batch);
  for (uint32_t i = 0; i < cfg.batch; ++i) {
    slots_[i].data = buffers_.get() + size_t{i} * cfg.slot_bytes;
    slots_[i].capacity = cfg.slot_bytes;
    iov_[i].iov_base = slots_[i].data;
    msgs_[i].msg_hdr.msg_iov = &iov_[i];
    msgs_[i].msg_hdr.msg_iovlen = 1;
  }
}

SocketTxQueue::~SocketTxQueue() {
  close_udp_tx_sockets(fds_);
}

engine::CommitResult SocketTxQueue::commit(std::span<engine::TxSlot> filled) {
  engine::CommitResult r;
  size_t idx = static_cast<size_t>(filled.data() - slots_.data());
  const size_t end = idx + filled.size();
  while (idx < end) {
    // One sendmmsg per run of slots on the same flow (the engine fills a batch with one flow).
    const uint16_t flow = slots_[idx].flow;
    size_t run = idx;
    SocketAddress& dst = dsts_[flow];
    while (run < end && slots_[run].flow == flow) {
      iov_[run].iov_len = slots_[run].len;
      msgs_[run].msg_hdr.msg_name = &dst.storage;
      msgs_[run].msg_hdr.msg_namelen = dst.len;
      ++run;
    }
    const int fd = fds_[flow];
    last_fd_ = fd;
    if (gso_ && run - idx > 1) {
      const uint32_t sent = send_gso(fd, idx, run - idx);
      if (sent) {
        r.taken += sent;
        idx += sent;
        continue;
      }
      if (gso_) return r;  // transient: retried
      // The kernel refused GSO for this socket: sendmmsg from now on.
    }
    const int sent = ::sendmmsg(fd, &msgs_[idx], static_cast<unsigned>(run - idx), MSG_DONTWAIT);
    if (sent > 0) {
      r.taken += static_cast<uint32_t>(sent);
      idx += static_cast<size_t>(sent);
      if (idx < run) return r;  // partial: the socket is full, the rest is retried
      continue;
    }
    const int e = errno;
    if (transient(e)) return r;
    // Refused for good (EPERM from a firewall, unreachable...): that packet is
    // consumed and counted as a sender error, the rest of the batch continues.
    ++r.taken;
    ++r.failed;
    r.error = e;
    ++idx;
  }
  return r;
}

uint32_t SocketTxQueue::send_gso(int fd, size_t first, size_t count) {
  // Equal-size prefix only: the kernel cuts at gso_size, the last piece may be shorter, no other may.
  const uint32_t seg = slots_[first].len;
  size_t n = 1;
  while (n < count && n < gso_max_segments_ && slots_[first + n].len == seg) ++n;
  if (n == 1) return ::sendmsg(fd, &msgs_[first].msg_hdr, MSG_DONTWAIT) > 0 ? 1 : 0;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(uint16_t))] = {};
  msghdr m{};
  m.msg_name = msgs_[first].msg_hdr.msg_name;
  m.msg_namelen = msgs_[first].msg_hdr.msg_namelen;
  m.msg_iov = &iov_[first];
  m.msg_iovlen = n;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_UDP;
  c->cmsg_type = UDP_SEGMENT;
  c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
  const auto gso_size = static_cast<uint16_t>(seg);
  std::memcpy(CMSG_DATA(c), &gso_size, sizeof gso_size);
  if (::sendmsg(fd, &m, MSG_DONTWAIT) >= 0) return static_cast<uint32_t>(n);
  if (!transient(errno)) gso_ = false;  // EINVAL/EIO: no GSO on this path
  return 0;
}

void SocketTxQueue::reclaim() {
  if (last_fd_ < 0) return;
  pollfd p{last_fd_, POLLOUT, 0};
  ::poll(&p, 1, 10);  // sleep until the send buffer drains instead of spinning
}

SocketRxQueue::SocketRxQueue(const UdpRxConfig& cfg) : reflect_(cfg.batch) {
  info_ = open_udp_rx_socket(cfg);
  fd_ = info_.fd;
  timeval tv{cfg.poll_timeout_ms / 1000, (cfg.poll_timeout_ms % 1000) * 1000};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  buffers_ = std::make_unique<uint8_t[]>(size_t{cfg.batch} * cfg.slot_bytes);
  iov_.resize(cfg.batch);
  msgs_.resize(cfg.batch);
  sources_.resize(cfg.batch);
  controls_.resize(info_.kernel_stamps ? cfg.batch : 0);
  frames_.resize(cfg.batch);
  for (uint32_t i = 0; i < cfg.batch; ++i) {
    iov_[i].iov_base = buffers_.get() + size_t{i} * cfg.slot_bytes;
    iov_[i].iov_len = cfg.slot_bytes;
    msgs_[i].msg_hdr.msg_iov = &iov_[i];
    msgs_[i].msg_hdr.msg_iovlen = 1;
    msgs_[i].msg_hdr.msg_name = &sources_[i];
    frames_[i].data = static_cast<const uint8_t*>(iov_[i].iov_base);
  }
}

SocketRxQueue::~SocketRxQueue() {
  if (fd_ >= 0) ::close(fd_);
}

std::span<const engine::RxFrame> SocketRxQueue::poll(uint32_t n) {
  if (n > msgs_.size()) n = static_cast<uint32_t>(msgs_.size());
  // MSG_WAITFORONE: block (up to SO_RCVTIMEO) for the first datagram, then take what is queued.
  // msg_namelen is in/out: the kernel shrinks it to the address it wrote.
  // msg_controllen too: the kernel sets it to what it wrote.
  const bool stamps = !controls_.empty();
  for (uint32_t i = 0; i < n; ++i) {
    msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
    if (stamps) {
      msgs_[i].msg_hdr.msg_control = controls_[i].bytes;
      msgs_[i].msg_hdr.msg_controllen = sizeof controls_[i].bytes;
    }
  }
  const int got = ::recvmmsg(fd_, msgs_.data(), n, MSG_WAITFORONE, nullptr);
  if (got <= 0) return {};
  const int64_t wall_offset = stamps ? realtime_minus_monotonic_ns() : 0;
  for (int i = 0; i < got; ++i) {
    frames_[i].len = msgs_[i].msg_len;
    frames_[i].from = net::SenderAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&sources_[i]));
    frames_[i].rx_ns = stamps ? rx_stamp_ns(msgs_[i].msg_hdr, wall_offset) : 0;
  }
  return {frames_.data(), static_cast<size_t>(got)};
}

engine::ReflectResult SocketRxQueue::reflect(std::span<const uint32_t> picks) {
  for (size_t k = 0; k < picks.size(); ++k) {
    const uint32_t i = picks[k];
    reflect_.set(k, frames_[i].data, frames_[i].len, &sources_[i], msgs_[i].msg_hdr.msg_namelen);
  }
  return reflect_.send(fd_, picks.size());
}

}  // namespace rateline::drivers
