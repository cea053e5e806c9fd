// The contract between the engine's per-packet loops and an I/O backend.
//
// A backend owns its buffers. TX: the engine reserves a batch of writable
// slots, fills them in place, and commits them; the backend transmits them
// in order and says how many it took. RX: the backend hands back a batch of
// received frames and gets them back on release().
//
// How each buffer model maps (see README, "Architecture"):
// - sockets (sendmmsg/recvmmsg), io_uring: slots are the backend's own
//   iovec buffers, reused, so after the first fill only varying fields change.
// - AF_XDP: slots are UMEM frames; reserve = xsk_ring_prod__reserve on the
//   TX ring, commit = submit + kick when needs_wakeup; reclaim = completion ring.
// - AF_PACKET TPACKET ring: slots are ring frames; commit sets
//   TP_STATUS_SEND_REQUEST and kicks with one send().
// - DPDK: slots wrap mbufs from a mempool (stale unless prebuilt);
//   commit = rte_eth_tx_burst; untaken mbufs stay reserved for the retry.
//
// The loops are templates over these concepts: calls inline, no virtual call
// per packet. A std::variant of concrete queues is visited once per thread.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>

#include "net/sender_address.hpp"

namespace rateline::engine {

// Where a backend's buffers start: the kernel builds headers for sockets,
// raw backends carry whole Ethernet frames.
enum class Layer : uint8_t { udp_payload, ethernet };

struct TxSlot {
  uint8_t* data = nullptr;
  uint32_t capacity = 0;
  uint32_t len = 0;      // set by the engine
  uint16_t flow = 0;     // index of the flow (source port) the slot goes out on
  bool stale = true;     // true: headers must be (re)written; false: the template is still there
  uint8_t size_class = 0;  // a size mix: whose lengths the headers in the slot carry
};

struct CommitResult {
  uint32_t taken = 0;   // slots consumed from the front of the span, in order
  uint32_t failed = 0;  // of those, how many the OS refused for good (counted as sender errors)
  int error = 0;        // errno of the last failure, for the report
};

template <class Q>
concept TxQueue = requires(Q& q, uint32_t n, std::span<TxSlot> s) {
  { Q::kLayer } -> std::convertible_to<Layer>;
  { q.reserve(n) } -> std::same_as<std::span<TxSlot>>;  // up to n slots; empty = none free now
  { q.commit(s) } -> std::same_as<CommitResult>;        // s is a suffix of the last reserve()
  { q.cancel(s) } -> std::same_as<void>;                // give back reserved slots never committed
  { q.reclaim() } -> std::same_as<void>;                // reap completions so reserve() finds room
  { q.flush() } -> std::same_as<void>;                  // at the end: wait (bounded) until all committed left
};

struct RxFrame {
  const uint8_t* data = nullptr;
  uint32_t len = 0;
  // UDP-payload backends fill in the sender (from the socket's source
  // address); Ethernet-layer backends leave it: the engine reads the frame.
  net::SenderAddress from;
  // When the kernel received it (CLOCK_MONOTONIC ns), where the backend has
  // a per-datagram stamp (socket, io_uring, AF_PACKET); 0: the loop's clock
  // read after poll() stands for the whole batch. Latency with the kernel's
  // stamp leaves out the time the datagram waited in a socket buffer.
  uint64_t rx_ns = 0;
  // Ethernet-layer backends: the UDP checksum needs no check here, because
  // the frame was built on this host and its checksum left for a device to
  // fill in (AF_PACKET's TP_STATUS_CSUMNOTREADY: a veth peer's socket
  // sender), or the device verified it (TP_STATUS_CSUM_VALID, DPDK's
  // L4_CKSUM_GOOD).
  bool l4_checksum_trusted = false;
};

template <class Q>
concept RxQueue = requires(Q& q, uint32_t n) {
  { Q::kLayer } -> std::convertible_to<Layer>;
  { q.poll(n) } -> std::same_as<std::span<const RxFrame>>;  // may block briefly; empty on timeout
  { q.release() } -> std::same_as<void>;                     // frames from the last poll go back
};

// rx --reflect: the receiver sends chosen frames of the last poll() back to
// their senders, byte for byte (stamps untouched), before release(). A
// backend without it cannot reflect (rx refuses the option).
struct ReflectResult {
  uint32_t sent = 0;
  uint32_t failed = 0;  // no room in the socket now: dropped, never waited on (the receiver must not stall)
};

template <class Q>
concept ReflectingRxQueue = RxQueue<Q> && requires(Q& q, std::span<const uint32_t> frame_indices) {
  { q.reflect(frame_indices) } -> std::same_as<ReflectResult>;
};

}  // namespace rateline::engine
