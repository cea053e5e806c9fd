// pktgen --rtt: reads the packets a receiver sent back (rx --reflect) and
// measures each one's round trip: the kernel's receive stamp of the reply
// minus the send stamp the packet left with. Both stamps are this host's
// CLOCK_MONOTONIC, so a round trip needs no clock shared with the receiver.
//
// One thread beside the sending workers, never in their loop. Where the
// sender holds sockets (socket, uring) it reads a duplicate of each one, so
// replies that arrive after the last send still count; where it sends whole
// frames through a kernel interface (afpacket, afxdp) it binds a socket of its own
// to each source port, where the replies are addressed.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
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
  void start();
  // Stops reading and joins; the results below are final from then on.
  void stop();

  const RttCounts& counts() const { return counts_; }
  const stats::LatencyHistogram& rtt() const { return rtt_; }
  double jitter_ns() const { return jitter_.jitter_ns(); }
  // Any thread, any time: the last published state.
  RttSnapshot snapshot() const;
  // Whether every socket carries the kernel's receive stamp (SO_TIMESTAMPNS);
  // otherwise a socket's replies are stamped by one clock read per batch.
  bool kernel_stamps() const { return kernel_stamps_; }

 private:
  void take_socket(int fd);  // configures and keeps an fd the listener owns
  void run();
  void drain(int fd, uint8_t* buffers);

  uint16_t sender_id_;
  uint16_t reply_port_;
  uint16_t reply_ports_;
  uint32_t max_payload_;
  std::optional<wire::PacketKey> tag_key_;
  uint64_t run_start_ns_;  // no send stamp of this run can be older
  std::mutex adopt_mutex_;
  std::vector<int> fds_;
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
