#include "socket/reply_listener.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <memory>

#include "net/sender_address.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "util/owned.hpp"
#include "wire/decode.hpp"
#include "wire/test_payload.hpp"

namespace rateline::drivers {
namespace {

constexpr unsigned kBatch = 64;
constexpr int kPollMs = 50;  // bounds how long stop() waits
constexpr int kReplyBufferBytes = 4 << 20;
constexpr uint64_t kPublishEveryNs = 100'000'000;  // as the workers' snapshots

}  // namespace

ReplyListener::ReplyListener(uint16_t sender_id, uint16_t reply_port, uint32_t max_payload, uint16_t reply_ports,
                             std::optional<wire::PacketKey> tag_key)
    : sender_id_(sender_id),
      reply_port_(reply_port),
      reply_ports_(reply_ports),
      max_payload_(max_payload),
      tag_key_(tag_key),
      run_start_ns_(now_ns()) {}

ReplyListener::~ReplyListener() {
  stop();
  for (int fd : fds_) ::close(fd);
}

void ReplyListener::take_socket(int fd) {
  // Replies queue here while the listener sleeps in poll(): room for a few ms of them.
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &kReplyBufferBytes, sizeof(int)) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &kReplyBufferBytes, sizeof(int));
  const int one = 1;
  const bool stamped = setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) == 0;
  std::lock_guard lock(adopt_mutex_);
  kernel_stamps_ = kernel_stamps_ && stamped;
  fds_.push_back(fd);
}

void ReplyListener::adopt(int fd) {
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) throw SetupError("--rtt: Couldn't duplicate a sending socket: " + errno_text(errno));
  take_socket(copy);
}

void ReplyListener::listen_on(const SocketAddress& local) {
  OwnedFd s(::socket(local.storage.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP));
  if (!s) throw SetupError("--rtt: Couldn't open a UDP socket: " + errno_text(errno));
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&local.storage), local.len) != 0)
    throw SetupError("--rtt: Couldn't bind " + local.text() + " for the replies: " + errno_text(errno));
  take_socket(s.release());
}

void ReplyListener::start() {
  thread_ = std::thread([this] { run(); });
}

void ReplyListener::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_relaxed);
  thread_.join();
  for (int fd : fds_) counts_.socket_drops += socket_drops(fd);
  publish();
}

void ReplyListener::publish() {
  std::lock_guard lock(published_mutex_);
  published_.counts = counts_;
  published_.rtt = rtt_;
  published_.jitter_ns = jitter_.jitter_ns();
}

RttSnapshot ReplyListener::snapshot() const {
  std::lock_guard lock(published_mutex_);
  return published_;
}

void ReplyListener::run() {
  std::vector<pollfd> watched;
  for (int fd : fds_) watched.push_back({fd, POLLIN, 0});
  std::vector<uint8_t> buffers(size_t{kBatch} * (max_payload_ + 1));  // once: drain() allocates nothing
  uint64_t next_publish_ns = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    if (const uint64_t now = now_ns(); now >= next_publish_ns) {
      publish();
      next_publish_ns = now + kPublishEveryNs;
    }
    if (::poll(watched.data(), watched.size(), kPollMs) <= 0) continue;
    for (const pollfd& p : watched)
      if (p.revents & POLLIN) drain(p.fd, buffers.data());
  }
  for (const pollfd& p : watched) drain(p.fd, buffers.data());  // what arrived up to the stop still counts
}

// Every reply queued on fd, in batches; never blocks.
void ReplyListener::drain(int fd, uint8_t* buffers) {
  struct alignas(cmsghdr) Control {
    unsigned char bytes[kRxStampControlBytes];
  };
  const uint32_t slot = max_payload_ + 1;
  mmsghdr msgs[kBatch] = {};
  iovec iov[kBatch];
  sockaddr_storage from[kBatch];
  Control control[kBatch];
  for (;;) {
    for (unsigned i = 0; i < kBatch; ++i) {
      iov[i] = {buffers + size_t{i} * slot, slot};
      msgs[i].msg_hdr = {};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_name = &from[i];
      msgs[i].msg_hdr.msg_namelen = sizeof from[i];
      msgs[i].msg_hdr.msg_control = control[i].bytes;
      msgs[i].msg_hdr.msg_controllen = sizeof control[i].bytes;
    }
    const int got = ::recvmmsg(fd, msgs, kBatch, MSG_DONTWAIT, nullptr);
    if (got <= 0) return;
    const uint64_t batch_ns = now_ns();
    const int64_t wall_offset = realtime_minus_monotonic_ns();
    for (int i = 0; i < got; ++i) {
      const uint64_t stamp = rx_stamp_ns(msgs[i].msg_hdr, wall_offset);
      const uint64_t rx_ns = stamp ? stamp : batch_ns;
      const net::SenderAddress src = net::SenderAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&from[i]));
      const uint8_t* payload = static_cast<const uint8_t*>(iov[i].iov_base);
      uint32_t len = msgs[i].msg_len;
      if (tag_key_) {
        if (len > max_payload_ || !wire::tag_ok(*tag_key_, payload, len)) {
          ++counts_.unauthenticated;
          continue;
        }
        payload += wire::kTagBytes;
        len -= wire::kTagBytes;
      }
      wire::Decoded d = wire::decode(payload, len);
      if (d.short_form) d.tx_ns = wire::extend_stamp48(d.tx_ns, rx_ns);
      if (d.verdict != wire::Verdict::data || uint16_t(src.port - reply_port_) >= reply_ports_ ||
          msgs[i].msg_len > max_payload_) {
        ++counts_.not_ours;
      } else if (d.sender != sender_id_) {
        ++counts_.other_sender;
      } else if (d.tx_ns < run_start_ns_ || d.tx_ns > rx_ns) {
        ++counts_.implausible;  // forged, or stamped on another clock: never a negative or absurd round trip
      } else {
        ++counts_.replies;
        rtt_.record(rx_ns - d.tx_ns);
        jitter_.record(d.tx_ns, rx_ns);
      }
    }
    if (got < static_cast<int>(kBatch)) return;
  }
}

}  // namespace rateline::drivers
