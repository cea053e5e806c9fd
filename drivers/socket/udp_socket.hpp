// Plain UDP socket setup shared by the socket and io_uring backends: both
// move UDP payloads and let the kernel build the headers.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include <sys/socket.h>

#include "engine/queue.hpp"
#include "net/frame.hpp"

namespace rateline::drivers {

class ReplyListener;

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t len = 0;
  bool is_v6() const { return storage.ss_family == AF_INET6; }
  std::string text() const;  // "127.0.0.1:9000", "[::1]:9000"
  uint16_t port() const;
  net::IpAddress ip() const;
};

// Parses a numeric IPv4/IPv6 address (no DNS: a measurement tool must not
// depend on a resolver) with the port given separately.
SocketAddress make_address(const std::string& ip, uint16_t port);

struct UdpTxConfig {
  SocketAddress dst;
  std::vector<uint16_t> src_ports;  // one per flow; 0 = kernel-chosen
  std::vector<SocketAddress> flow_dsts;  // one per flow (--dst range); empty: dst for every flow
  uint32_t slot_bytes = 2048;       // largest payload a slot holds
  uint32_t batch = 32;
  int sndbuf_bytes = 0;             // 0 = kernel default
  std::string device;               // SO_BINDTODEVICE, empty = none
  bool gso = false;                 // socket backend: one sendmsg per batch, the kernel cuts it (UDP_SEGMENT)
  ReplyListener* replies = nullptr;  // pktgen --rtt: reads each socket's replies too
};

struct UdpRxConfig {
  SocketAddress bind;               // address and port to receive on
  uint32_t slot_bytes = 2048;       // largest datagram kept whole
  uint32_t batch = 64;
  int rcvbuf_bytes = 4 << 20;       // 0 = kernel default
  bool reuseport = true;            // one socket per worker, kernel spreads flows
  int poll_timeout_ms = 100;        // how long poll() may block: bounds stop latency
  std::string device;
};

// Opens an unconnected UDP socket bound to src_port (0 = ephemeral). Not
// connected on purpose: a connected UDP socket reports ICMP port-unreachable
// as ECONNREFUSED on a later send, which would make "sent" ambiguous.
int open_udp_tx_socket(const UdpTxConfig& cfg, uint16_t src_port);
// One socket per flow, in flow order; flows with the same source port (a
// --dst range) share that port's socket. Throws SetupError, leaving none open.
std::vector<int> open_udp_tx_sockets(const UdpTxConfig& cfg);
// Closes each distinct descriptor of that list once.
void close_udp_tx_sockets(const std::vector<int>& fds);

struct RxSocketInfo {
  int fd = -1;
  int rcvbuf_bytes = 0;   // what the kernel actually granted (getsockopt)
  bool rcvbuf_forced = false;
  // SO_TIMESTAMPNS on: every datagram carries the kernel's receive time
  // (SCM_TIMESTAMPNS, wall clock; see rx_stamp_ns).
  bool kernel_stamps = false;
};
RxSocketInfo open_udp_rx_socket(const UdpRxConfig& cfg);

// The kernel's receive time of one datagram from its control messages, in
// CLOCK_MONOTONIC ns (util/clock.hpp); 0 when it carries none. The second
// form reads one control message (io_uring walks them with its own helpers).
uint64_t rx_stamp_ns(const msghdr& m, int64_t realtime_minus_monotonic);
uint64_t rx_stamp_ns(const cmsghdr& c, int64_t realtime_minus_monotonic);
// Control-message room for that stamp, per datagram.
inline constexpr size_t kRxStampControlBytes = CMSG_SPACE(sizeof(timespec));

// Throws SetupError when another socket already holds the port. Our workers
// share one port through SO_REUSEPORT, and so could another process of the
// same user: it would silently take half the traffic. A plain bind (no
// SO_REUSEPORT) fails in exactly that case, so we probe with one first.
void ensure_port_free(const SocketAddress& bind);

// rx --reflect on a UDP socket: datagrams to send back, each to its sender,
// in one sendmmsg and without waiting (a full socket drops the rest, and
// says so: the receiver must not stall for its replies).
class ReflectBatch {
 public:
  explicit ReflectBatch(uint32_t capacity);
  ReflectBatch(const ReflectBatch&) = delete;  // the messages point into iov_
  ReflectBatch& operator=(const ReflectBatch&) = delete;
  // Entry k: `len` bytes at `data` (a received buffer, not copied) to `name`.
  void set(size_t k, const uint8_t* data, uint32_t len, void* name, socklen_t name_len) {
    iov_[k] = {const_cast<uint8_t*>(data), len};
    msgs_[k].msg_hdr.msg_name = name;
    msgs_[k].msg_hdr.msg_namelen = name_len;
  }
  // Sends entries 0 .. count-1 from fd.
  engine::ReflectResult send(int fd, size_t count);

 private:
  std::vector<iovec> iov_;
  std::vector<mmsghdr> msgs_;
};

// sk_drops of a socket: datagrams the kernel dropped because the receive
// queue was full. The same counter SO_RXQ_OVFL reports per message; read via
// SO_MEMINFO once per snapshot instead of a control message per packet.
uint64_t socket_drops(int fd);

// The path MTU towards dst as the kernel's route sees it (IP_MTU on a probe
// socket), or 0 when unknown.
uint32_t path_mtu(const SocketAddress& dst, const std::string& device);

}  // namespace rateline::drivers
