// pktgen --rtt: reads the packets a receiver sent back (rx --reflect) and
// measures each one's round trip: the kernel's receive stamp of the reply
// minus the send stamp the packet left with. Both stamps are this host's
// CLOCK_MONOTONIC, so a round trip needs no clock shared with the receiver.
//
// One thread beside the sending workers, never in their loop. Where the
// sender holds sockets (socket, uring) it reads a duplicate of each one, so
// replies that arrive after the last send still count; where it sends whole
// frames through a kernel interface (afpacket, afxdp) it binds a socket of its own
// to each source port, where the replies are addressed. A port of the
// sender's own (DPDK) keeps its replies from the kernel: the listener polls
// the port's receive queues instead (ReplyFramePort).
#pragma once

#include <poll.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "socket/udp_socket.hpp"
#include "stats/latency.hpp"
#include "wire/packet_tag.hpp"

namespace rateline::drivers {

struct RttCounts {
  uint64_t replies = 0;       // our data packets, this run's sender id, a plausible stamp: one sample each
  uint64_t other_sender = 0;  // our format with another run's sender id (not a reply to us)
  uint64_t implausible = 0;   // a stamp from before this run began, or later than its reply's arrival
  uint64_t not_ours = 0;      // anything else: not our format, a bad checksum, an end marker, not from --port
  uint64_t unauthenticated = 0;  // --key-file: without the key's tag (never decoded)
  uint64_t socket_drops = 0;  // replies the kernel dropped because the listener's buffer was full
};

// What the listener has counted so far (published by its thread every
// 100 ms and at the end, read by the reporter: never a counter shared with
// the thread that writes it).
struct RttSnapshot {
  RttCounts counts;
  stats::LatencyHistogram rtt;
  double jitter_ns = 0;
};

// Where the replies arrive as whole frames, on a port no kernel socket sees
// (DPDK): the listener's thread polls it, and only that thread.
class ReplyFramePort {
 public:
  virtual ~ReplyFramePort() = default;
  using Take = std::function<void(std::span<const uint8_t> frame, uint64_t rx_ns)>;
  // Hands `take` every frame waiting, each with the time it was taken off the
  // port (one clock read per burst); returns how many frames there were.
  virtual uint32_t poll(const Take& take) = 0;
};

class ReplyListener {
 public:
  // `reply_port`: the receiver's port (--port), or the first of
  // `reply_ports` (a --port range); a reply comes from one of them.
  // `tag_key` (pktgen --key-file): a reply must carry this key's tag, as the
  // packet it reflects did; null: no tags.
  ReplyListener(uint16_t sender_id, uint16_t reply_port, uint32_t max_payload, uint16_t reply_ports = 1,
                std::optional<wire::PacketKey> tag_key = std::nullopt);
  ~ReplyListener();
  ReplyListener(const ReplyListener&) = delete;
  ReplyListener& operator=(const ReplyListener&) = delete;

  // Also reads this socket (the listener keeps a duplicate; the caller keeps
  // and closes its own). Any thread, before start().
  void adopt(int fd);
  // A socket of its own on `local` (address and source port). Before start().
  void listen_on(const SocketAddress& local);
  // Also polls this port's frames (the listener owns it; it is destroyed, and
  // so polled for the last time, before the backend that made it). Before start().
  void adopt_port(std::unique_ptr<ReplyFramePort> port);
  void start();
  // Stops reading and joins; the results below are final from then on.
  void stop();

  const RttCounts& counts() const { return counts_; }
  const stats::LatencyHistogram& rtt() const { return rtt_; }
  double jitter_ns() const { return jitter_.jitter_ns(); }
  // Any thread, any time: the last published state.
  RttSnapshot snapshot() const;
  // Whether every socket carries the kernel's receive stamp (SO_TIMESTAMPNS)
  // and no port is polled; otherwise replies are stamped by one clock read
  // per batch (a polled port's: late by at most its poll interval, kPortIdleSleepNs).
  bool kernel_stamps() const { return kernel_stamps_ && ports_.empty(); }

  // A polled port with nothing waiting is polled again after this long.
  static constexpr long kPortIdleSleepNs = 10'000;

 private:
  void take_socket(int fd);  // configures and keeps an fd the listener owns
  void run();
  void run_polling(std::vector<pollfd>& watched, uint8_t* buffers);
  void drain(int fd, uint8_t* buffers);
  void take_frame(std::span<const uint8_t> frame, uint64_t rx_ns);
  // One datagram's payload from `src_port`: a reply timed, or counted as what it is.
  void take(const uint8_t* payload, uint32_t len, uint16_t src_port, uint64_t rx_ns);

  uint16_t sender_id_;
  uint16_t reply_port_;
  uint16_t reply_ports_;
  uint32_t max_payload_;
  std::optional<wire::PacketKey> tag_key_;
  uint64_t run_start_ns_;  // no send stamp of this run can be older
  std::mutex adopt_mutex_;
  std::vector<int> fds_;
  std::vector<std::unique_ptr<ReplyFramePort>> ports_;
  bool kernel_stamps_ = true;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  void publish();
  RttCounts counts_;
  stats::LatencyHistogram rtt_;
  stats::JitterEstimator jitter_;
  mutable std::mutex published_mutex_;
  RttSnapshot published_;
};

}  // namespace rateline::drivers
