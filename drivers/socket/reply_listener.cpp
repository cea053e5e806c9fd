#include "socket/reply_listener.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <memory>

#include "net/frame.hpp"
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

void ReplyListener::adopt_port(std::unique_ptr<ReplyFramePort> port) {
  std::lock_guard lock(adopt_mutex_);
  ports_.push_back(std::move(port));
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
  if (!ports_.empty()) return run_polling(watched, buffers.data());
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

// With a port to poll: never asleep in poll() for long, so a reply waits on
// the port at most kPortIdleSleepNs (plus the scheduler) before its stamp.
void ReplyListener::run_polling(std::vector<pollfd>& watched, uint8_t* buffers) {
  const ReplyFramePort::Take take = [this](std::span<const uint8_t> frame, uint64_t rx_ns) { take_frame(frame, rx_ns); };
  uint64_t next_publish_ns = 0;
  const auto poll_all = [&] {
    uint32_t got = 0;
    for (auto& port : ports_) got += port->poll(take);
    if (!watched.empty() && ::poll(watched.data(), watched.size(), 0) > 0)
      for (const pollfd& p : watched) {
        if (!(p.revents & POLLIN)) continue;
        drain(p.fd, buffers);
        ++got;
      }
    return got;
  };
  while (!stop_.load(std::memory_order_relaxed)) {
    if (const uint64_t now = now_ns(); now >= next_publish_ns) {
      publish();
      next_publish_ns = now + kPublishEveryNs;
    }
    if (poll_all() == 0) {
      const timespec idle{0, kPortIdleSleepNs};
      nanosleep(&idle, nullptr);
    }
  }
  while (poll_all() != 0) {
  }  // what arrived up to the stop still counts
}

// A frame off a polled port: its UDP payload, as a socket would have had it.
void ReplyListener::take_frame(std::span<const uint8_t> frame, uint64_t rx_ns) {
  const net::ParsedUdp p = net::parse_udp_frame(frame);
  if (p.status == net::ParseStatus::not_ip || p.status == net::ParseStatus::not_udp) return;  // no datagram at all
  // A broken frame, or one a socket would never have been given (a bad checksum, a fragment).
  if (p.status != net::ParseStatus::ok || net::check_udp_checksums(frame, p) == net::ChecksumCheck::bad) {
    ++counts_.not_ours;
    return;
  }
  take(frame.data() + p.payload_offset, p.payload_len, p.src_port, rx_ns);
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
      take(static_cast<const uint8_t*>(iov[i].iov_base), msgs[i].msg_len, src.port, rx_ns);
    }
    if (got < static_cast<int>(kBatch)) return;
  }
}

void ReplyListener::take(const uint8_t* payload, uint32_t len, uint16_t src_port, uint64_t rx_ns) {
  const uint32_t whole = len;
  if (tag_key_) {
    if (len > max_payload_ || !wire::tag_ok(*tag_key_, payload, len)) {
      ++counts_.unauthenticated;
      return;
    }
    payload += wire::kTagBytes;
    len -= wire::kTagBytes;
  }
  wire::Decoded d = wire::decode(payload, len);
  if (d.short_form) d.tx_ns = wire::extend_stamp48(d.tx_ns, rx_ns);
  if (d.verdict != wire::Verdict::data || uint16_t(src_port - reply_port_) >= reply_ports_ || whole > max_payload_) {
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

}  // namespace rateline::drivers
