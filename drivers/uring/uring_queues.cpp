#include "uring/uring_queues.hpp"

#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "util/clock.hpp"
#include "util/errors.hpp"

namespace rateline::drivers {
namespace {

bool transient(int e) { return e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS || e == EINTR; }

}  // namespace

UringTxQueue::UringTxQueue(const UdpTxConfig& cfg) : ring_(cfg.batch * 2), dsts_(cfg.flow_dsts) {
  dsts_.resize(cfg.src_ports.size(), cfg.dst);
  fds_ = open_udp_tx_sockets(cfg);
  buffers_ = std::make_unique<uint8_t[]>(size_t{cfg.batch} * cfg.slot_bytes);
  slots_.resize(cfg.batch);
  iov_.resize(cfg.batch);
  msgs_.resize(cfg.batch);
  results_.resize(cfg.batch);
  for (uint32_t i = 0; i < cfg.batch; ++i) {
    slots_[i].data = buffers_.get() + size_t{i} * cfg.slot_bytes;
    slots_[i].capacity = cfg.slot_bytes;
    iov_[i].iov_base = slots_[i].data;
    msgs_[i] = {};
    msgs_[i].msg_iov = &iov_[i];
    msgs_[i].msg_iovlen = 1;
  }
}

UringTxQueue::~UringTxQueue() {
  close_udp_tx_sockets(fds_);
}

engine::CommitResult UringTxQueue::commit(std::span<engine::TxSlot> filled) {
  engine::CommitResult r;
  const size_t first = static_cast<size_t>(filled.data() - slots_.data());
  const size_t n = filled.size();
  io_uring* ring = ring_.get();
  for (size_t i = first; i < first + n; ++i) {
    iov_[i].iov_len = slots_[i].len;
    io_uring_sqe* sqe = io_uring_get_sqe(ring);  // ring has 2*batch entries: never null here
    last_fd_ = fds_[slots_[i].flow];
    msgs_[i].msg_name = &dsts_[slots_[i].flow].storage;
    msgs_[i].msg_namelen = dsts_[slots_[i].flow].len;
    io_uring_prep_sendmsg(sqe, last_fd_, &msgs_[i], MSG_DONTWAIT);
    sqe->user_data = i;
    if (i + 1 < first + n) sqe->flags |= IOSQE_IO_LINK;
  }
  int ret;
  do {
    ret = io_uring_submit_and_wait(ring, static_cast<unsigned>(n));
  } while (ret == -EINTR);
  // Reap exactly n completions: every linked SQE completes (done, failed or -ECANCELED).
  size_t reaped = 0;
  while (reaped < n) {
    io_uring_cqe* cqe;
    if (io_uring_wait_cqe(ring, &cqe) != 0) break;
    results_[cqe->user_data] = cqe->res;
    io_uring_cqe_seen(ring, cqe);
    ++reaped;
  }
  for (size_t i = first; i < first + n; ++i) {
    const int res = results_[i];
    if (res >= 0) {
      ++r.taken;
      continue;
    }
    if (res == -ECANCELED || transient(-res)) break;  // the rest of the chain is retried
    ++r.taken;  // refused for good: consumed and counted as a sender error
    ++r.failed;
    r.error = -res;
    break;  // the chain after a failure was cancelled
  }
  return r;
}

void UringTxQueue::reclaim() {
  if (last_fd_ < 0) return;
  pollfd p{last_fd_, POLLOUT, 0};
  ::poll(&p, 1, 10);
}

UringRxQueue::UringRxQueue(const UdpRxConfig& cfg) : ring_(256), reflect_(cfg.batch) {
  info_ = open_udp_rx_socket(cfg);
  fd_.reset(info_.fd);
  // Room for a sockaddr_in6 (28 B), rounded up to 8: the control message
  // after it must be 8-byte aligned for its cmsghdr.
  recv_shape_.msg_namelen = (sizeof(sockaddr_in6) + 7) & ~7u;
  // And the kernel's receive time, when the socket gives it (udp_socket.hpp).
  recv_shape_.msg_controllen = info_.kernel_stamps ? kRxStampControlBytes : 0;
  // Room for the recvmsg header, the address and the control message in front of the datagram, 8-byte aligned.
  slot_bytes_ = (cfg.slot_bytes + sizeof(io_uring_recvmsg_out) + recv_shape_.msg_namelen + recv_shape_.msg_controllen + 7) &
                ~7u;
  timeout_ms_ = static_cast<uint32_t>(cfg.poll_timeout_ms);
  // Four batches of buffers. The ring hands them out in order, so its whole
  // size is the working set the kernel copies into and rx then checks: 4096
  // slots of --max-size (9000 B) walked 37 MB, every 1400 B datagram a cache
  // miss on both sides, and this VM lost 3% of an unpaced 300k-datagram run
  // that 256 slots (2.3 MB) took whole (4 runs each). A ring that runs dry
  // loses nothing: the multishot receive ends with ENOBUFS (counted as
  // buffer_ring_empty), the datagrams wait in the socket's receive buffer,
  // and release() re-arms.
  ring_entries_ = std::bit_ceil(std::clamp<uint32_t>(4 * cfg.batch, 64, 32768));
  const size_t buf_ring_bytes = sizeof(io_uring_buf) * ring_entries_;
  buf_ring_map_ = OwnedMapping(
      mmap(nullptr, buf_ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0), buf_ring_bytes);
  if (!buf_ring_map_) throw SetupError("Couldn't map the io_uring buffer ring: " + errno_text(errno));
  buf_ring_ = reinterpret_cast<io_uring_buf_ring*>(buf_ring_map_.data());
  io_uring_buf_ring_init(buf_ring_);
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uint64_t>(buf_ring_);
  reg.ring_entries = ring_entries_;
  reg.bgid = kBufferGroup;
  if (const int err = io_uring_register_buf_ring(ring_.get(), &reg, 0); err != 0)
    throw BackendUnavailable(std::string("io_uring provided-buffer rings need kernel >= 5.19: ") + std::strerror(-err));
  buffers_ = std::make_unique<uint8_t[]>(size_t{ring_entries_} * slot_bytes_);
  const int mask = io_uring_buf_ring_mask(ring_entries_);
  for (uint32_t i = 0; i < ring_entries_; ++i)
    io_uring_buf_ring_add(buf_ring_, buffers_.get() + size_t{i} * slot_bytes_, slot_bytes_,
                          static_cast<unsigned short>(i), mask, static_cast<int>(i));
  io_uring_buf_ring_advance(buf_ring_, static_cast<int>(ring_entries_));
  frames_.resize(cfg.batch);
  bids_.resize(cfg.batch);
  names_.resize(cfg.batch);
  arm();
}

UringRxQueue::~UringRxQueue() {
  // Cancel the multishot receive and wait for its last CQE: otherwise the
  // ring's asynchronous teardown keeps the socket (and its port) alive for a
  // while after we exit, and the next rx on that port fails to bind.
  if (armed_) {
    io_uring* ring = ring_.get();
    io_uring_sqe* sqe = ring_.sqe();
    io_uring_prep_cancel64(sqe, 1, 0);
    sqe->user_data = 2;
    io_uring_submit(ring);
    for (int i = 0; i < 10000 && armed_; ++i) {
      io_uring_cqe* cqe;
      __kernel_timespec ts{0, 100'000'000};
      if (io_uring_wait_cqe_timeout(ring, &cqe, &ts) != 0) break;
      if (cqe->user_data == 1 && !(cqe->flags & IORING_CQE_F_MORE)) armed_ = false;
      io_uring_cqe_seen(ring, cqe);
    }
  }
  io_uring_unregister_buf_ring(ring_.get(), kBufferGroup);
  // The buffer ring's mapping and the socket go with their owners, after this.
}

void UringRxQueue::arm() {
  io_uring_sqe* sqe = ring_.sqe();
  io_uring_prep_recvmsg_multishot(sqe, fd_.get(), &recv_shape_, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = kBufferGroup;
  sqe->user_data = 1;
  io_uring_submit(ring_.get());
  armed_ = true;
}

std::span<const engine::RxFrame> UringRxQueue::poll(uint32_t n) {
  if (n > frames_.size()) n = static_cast<uint32_t>(frames_.size());
  io_uring* ring = ring_.get();
  io_uring_cqe* cqe = nullptr;
  if (io_uring_peek_cqe(ring, &cqe) != 0) {
    __kernel_timespec ts{timeout_ms_ / 1000, static_cast<long long>(timeout_ms_ % 1000) * 1'000'000};
    if (io_uring_wait_cqe_timeout(ring, &cqe, &ts) != 0) return {};
  }
  uint32_t got = 0;
  unsigned head;
  unsigned seen = 0;
  const int64_t wall_offset = recv_shape_.msg_controllen ? realtime_minus_monotonic_ns() : 0;
  io_uring_for_each_cqe(ring, head, cqe) {
    if (got == n) break;
    ++seen;
    if (!(cqe->flags & IORING_CQE_F_MORE)) armed_ = false;
    if (cqe->res < 0) {
      if (cqe->res == -ENOBUFS) ++ring_empty_;
      continue;
    }
    if (!(cqe->flags & IORING_CQE_F_BUFFER)) continue;
    const auto bid = static_cast<uint16_t>(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
    uint8_t* buf = buffers_.get() + size_t{bid} * slot_bytes_;
    io_uring_recvmsg_out* out = io_uring_recvmsg_validate(buf, cqe->res, &recv_shape_);
    bids_[got] = bid;
    if (!out) [[unlikely]] {  // cannot happen for a UDP socket; hand the buffer back unread
      names_[got] = {nullptr, 0};
      frames_[got++] = {buffers_.get(), 0, {}};
      continue;
    }
    // A zero-length datagram still takes a buffer here: a frame of length 0,
    // counted like the socket backend does.
    frames_[got].data = static_cast<const uint8_t*>(io_uring_recvmsg_payload(out, &recv_shape_));
    frames_[got].len = io_uring_recvmsg_payload_length(out, cqe->res, &recv_shape_);
    // The name sits in the buffer, 8-byte aligned after io_uring_recvmsg_out, room for a sockaddr_in6;
    // the control message after it (the kernel's receive time), 8-byte aligned too.
    frames_[got].from = net::SenderAddress::from_sockaddr(static_cast<const sockaddr*>(io_uring_recvmsg_name(out)));
    names_[got] = {io_uring_recvmsg_name(out), out->namelen};
    frames_[got].rx_ns = 0;
    for (cmsghdr* c = io_uring_recvmsg_cmsg_firsthdr(out, &recv_shape_); c;
         c = io_uring_recvmsg_cmsg_nexthdr(out, &recv_shape_, c)) {
      if (const uint64_t ns = rx_stamp_ns(*c, wall_offset)) frames_[got].rx_ns = ns;
    }
    ++got;
  }
  io_uring_cq_advance(ring, seen);
  handed_out_ = got;
  if (!armed_ && got == 0) arm();  // otherwise release() re-arms once buffers are back
  return {frames_.data(), got};
}

engine::ReflectResult UringRxQueue::reflect(std::span<const uint32_t> picks) {
  for (size_t k = 0; k < picks.size(); ++k) {
    const uint32_t i = picks[k];
    reflect_.set(k, frames_[i].data, frames_[i].len, names_[i].first, names_[i].second);
  }
  return reflect_.send(fd_.get(), picks.size());
}

void UringRxQueue::release() {
  const int mask = io_uring_buf_ring_mask(ring_entries_);
  int added = 0;
  for (uint32_t i = 0; i < handed_out_; ++i) {
    io_uring_buf_ring_add(buf_ring_, buffers_.get() + size_t{bids_[i]} * slot_bytes_, slot_bytes_, bids_[i], mask,
                          added++);
  }
  io_uring_buf_ring_advance(buf_ring_, added);
  handed_out_ = 0;
  if (!armed_) arm();
}

}  // namespace rateline::drivers
