#include "afpacket/afpacket_queues.hpp"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <net/ethernet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/clock.hpp"
#include "util/errors.hpp"

namespace rateline::drivers {

// linux/if_packet.h's PACKET_FANOUT_FLAG_IGNORE_OUTGOING (Linux 6.9), newer than Debian 12's headers.
constexpr int kFanoutFlagIgnoreOutgoing = 0x4000;

namespace {

// TX frames carry their data right after the aligned tpacket2_hdr
// (Documentation/networking/packet_mmap.rst, "TX_RING").
constexpr uint32_t kTxDataOffset = TPACKET_ALIGN(sizeof(tpacket2_hdr));

OwnedFd open_packet_socket(int protocol) {
  const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, protocol);
  if (fd >= 0) return OwnedFd(fd);
  if (errno == EPERM || errno == EACCES)
    throw BackendUnavailable("AF_PACKET needs CAP_NET_RAW (run as root, or setcap cap_net_raw+ep on the binary)");
  throw BackendUnavailable("Couldn't open an AF_PACKET socket: " + errno_text(errno));
}

void set_packet_opt(int fd, int opt, int value, const char* what) {
  if (setsockopt(fd, SOL_PACKET, opt, &value, sizeof value) != 0)
    throw BackendUnavailable(std::string("Couldn't set ") + what + " on the AF_PACKET socket: " + errno_text(errno));
}

uint32_t round_up_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

uint32_t load_status(const volatile uint32_t* s) { return __atomic_load_n(s, __ATOMIC_ACQUIRE); }
void store_status(volatile uint32_t* s, uint32_t v) { __atomic_store_n(s, v, __ATOMIC_RELEASE); }

}  // namespace

AfPacketTxQueue::AfPacketTxQueue(const RawTxConfig& cfg) {
  fd_ = open_packet_socket(0);  // protocol 0: this socket only sends, it receives nothing
  set_packet_opt(fd_.get(), PACKET_VERSION, TPACKET_V2, "TPACKET_V2");
  // Straight to the driver: we measure the NIC and the stack's TX path, not a qdisc's queue.
  set_packet_opt(fd_.get(), PACKET_QDISC_BYPASS, 1, "PACKET_QDISC_BYPASS");
  frame_bytes_ = round_up_pow2(std::max<uint32_t>(2048, kTxDataOffset + cfg.max_frame_bytes));
  block_bytes_ = std::max<uint32_t>(frame_bytes_, 1u << 16);
  frames_per_block_ = block_bytes_ / frame_bytes_;
  ring_frames_ = std::max<uint32_t>(cfg.ring_frames, cfg.batch * 2);
  ring_frames_ = (ring_frames_ + frames_per_block_ - 1) / frames_per_block_ * frames_per_block_;
  tpacket_req req{};
  req.tp_block_size = block_bytes_;
  req.tp_block_nr = ring_frames_ / frames_per_block_;
  req.tp_frame_size = frame_bytes_;
  req.tp_frame_nr = ring_frames_;
  if (setsockopt(fd_.get(), SOL_PACKET, PACKET_TX_RING, &req, sizeof req) != 0)
    throw BackendUnavailable("Couldn't create the AF_PACKET TX ring: " + errno_text(errno));
  const size_t ring_bytes = size_t{block_bytes_} * req.tp_block_nr;
  ring_map_ = OwnedMapping(mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_.get(), 0),
                           ring_bytes);
  if (!ring_map_) throw BackendUnavailable("Couldn't map the AF_PACKET TX ring: " + errno_text(errno));
  ring_ = ring_map_.data();
  sockaddr_ll ll{};
  ll.sll_family = AF_PACKET;
  ll.sll_ifindex = cfg.iface.index;
  ll.sll_protocol = 0;
  if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&ll), sizeof ll) != 0)
    throw SetupError("Couldn't bind AF_PACKET to " + cfg.iface.name + ": " + errno_text(errno));
  slots_.resize(ring_frames_);
  for (uint32_t i = 0; i < ring_frames_; ++i) {
    slots_[i].data = reinterpret_cast<uint8_t*>(frame(i)) + kTxDataOffset;
    slots_[i].capacity = frame_bytes_ - kTxDataOffset;
    slots_[i].stale = true;
  }
}

std::span<engine::TxSlot> AfPacketTxQueue::reserve(uint32_t n) {
  // Contiguous frames from head_, never across the ring's end (the caller
  // gets a shorter batch there and asks again).
  const uint32_t limit = std::min(n, ring_frames_ - head_);
  uint32_t count = 0;
  while (count < limit) {
    volatile uint32_t* st = &frame(head_ + count)->tp_status;
    const uint32_t s = load_status(st);  // pairs with the kernel's release when it frees the skb
    if (s == TP_STATUS_AVAILABLE) {
      ++count;
      continue;
    }
    if (s & TP_STATUS_WRONG_FORMAT) {  // the kernel refused this frame: count it, reuse the frame
      ++wrong_format_;
      store_status(st, TP_STATUS_AVAILABLE);
      ++count;
      continue;
    }
    break;  // SEND_REQUEST or SENDING: still the kernel's
  }
  return {slots_.data() + head_, count};
}

engine::CommitResult AfPacketTxQueue::commit(std::span<engine::TxSlot> filled) {
  for (engine::TxSlot& s : filled) {
    const auto i = static_cast<uint32_t>(&s - slots_.data());
    tpacket2_hdr* h = frame(i);
    h->tp_len = s.len;
    store_status(&h->tp_status, TP_STATUS_SEND_REQUEST);  // frame contents before status: release
  }
  head_ += static_cast<uint32_t>(filled.size());
  if (head_ == ring_frames_) head_ = 0;
  kick();
  // Every frame in the ring is the kernel's now; one that the device later
  // refuses shows in the interface's tx_dropped, which the report reads.
  return {static_cast<uint32_t>(filled.size()), 0, 0};
}

void AfPacketTxQueue::kick() {
  // One send() walks every SEND_REQUEST frame in the ring.
  if (::send(fd_.get(), nullptr, 0, MSG_DONTWAIT) < 0 && errno != EAGAIN && errno != ENOBUFS && errno != EINTR) {
    // Nothing useful to do on the hot path; the frames stay queued and the next kick retries.
  }
}

void AfPacketTxQueue::reclaim() {
  kick();
  pollfd p{fd_.get(), POLLOUT, 0};
  ::poll(&p, 1, 1);
}

void AfPacketTxQueue::flush() {
  for (int tries = 0; tries < 2000; ++tries) {
    bool pending = false;
    for (uint32_t i = 0; i < ring_frames_ && !pending; ++i) {
      const uint32_t s = load_status(&frame(i)->tp_status);
      pending = s == TP_STATUS_SEND_REQUEST || s == TP_STATUS_SENDING;
    }
    if (!pending) return;
    reclaim();
  }
}

AfPacketRxQueue::AfPacketRxQueue(const RawRxConfig& cfg) : timeout_ms_(cfg.poll_timeout_ms), reflector_(cfg.batch) {
  fd_ = open_packet_socket(htons(ETH_P_ALL));
  set_packet_opt(fd_.get(), PACKET_VERSION, TPACKET_V3, "TPACKET_V3");
#ifdef PACKET_IGNORE_OUTGOING
  const int one = 1;
  setsockopt(fd_.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);  // our own replies are not arrivals
#endif
  block_bytes_ = cfg.block_bytes;
  blocks_ = cfg.blocks;
  tpacket_req3 req{};
  req.tp_block_size = block_bytes_;
  req.tp_block_nr = blocks_;
  req.tp_frame_size = 2048;  // V3 packs variable-size frames; this only has to divide the block
  req.tp_frame_nr = block_bytes_ / 2048 * blocks_;
  req.tp_retire_blk_tov = 5;  // ms: a partly filled block reaches us within 5 ms
  if (setsockopt(fd_.get(), SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0)
    throw BackendUnavailable("Couldn't create the AF_PACKET RX ring: " + errno_text(errno));
  const size_t ring_bytes = size_t{block_bytes_} * blocks_;
  ring_map_ = OwnedMapping(mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_.get(), 0),
                           ring_bytes);
  if (!ring_map_) throw BackendUnavailable("Couldn't map the AF_PACKET RX ring: " + errno_text(errno));
  ring_ = ring_map_.data();
  sockaddr_ll ll{};
  ll.sll_family = AF_PACKET;
  ll.sll_ifindex = cfg.iface.index;
  ll.sll_protocol = htons(ETH_P_ALL);
  if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&ll), sizeof ll) != 0)
    throw SetupError("Couldn't bind AF_PACKET to " + cfg.iface.name + ": " + errno_text(errno));
  if (cfg.fanout_group) {
    // A fanout group taps through its own hook, which PACKET_IGNORE_OUTGOING above does not reach: the group
    // needs the flag too (Linux 6.9+), or this host's own sends on the device count as arrivals (foreign
    // frames, while pktgen sends on the interface rx taps). Older kernels refuse the flag: join without it.
    const int group = (cfg.fanout_group & 0xffff) | (PACKET_FANOUT_HASH << 16);
    const int ignore_outgoing = group | (kFanoutFlagIgnoreOutgoing << 16);
    if (setsockopt(fd_.get(), SOL_PACKET, PACKET_FANOUT, &ignore_outgoing, sizeof ignore_outgoing) != 0 &&
        setsockopt(fd_.get(), SOL_PACKET, PACKET_FANOUT, &group, sizeof group) != 0)
      throw SetupError("Couldn't join AF_PACKET fanout group: " + errno_text(errno));
  }
  if (cfg.guard_port) guard_ = PortGuard(cfg.guard_port, cfg.ipv6, cfg.guard_port_count);  // see socket/port_guard.hpp
  frames_.resize(cfg.batch);
  finished_.reserve(blocks_);
}

uint32_t AfPacketRxQueue::take(uint32_t n) {
  uint32_t got = 0;
  // Each frame's tp_sec/tp_nsec is the kernel's receive time (wall clock).
  const int64_t wall_offset = realtime_minus_monotonic_ns();
  while (got < n) {
    if (!cur_pkt_) {
      tpacket_block_desc* b = block(cur_block_);
      if (!(load_status(&b->hdr.bh1.block_status) & TP_STATUS_USER)) break;  // pairs with the kernel's retire
      pkts_left_ = b->hdr.bh1.num_pkts;
      cur_pkt_ = reinterpret_cast<const uint8_t*>(b) + b->hdr.bh1.offset_to_first_pkt;
    }
    while (pkts_left_ && got < n) {
      const auto* h = reinterpret_cast<const tpacket3_hdr*>(cur_pkt_);
      frames_[got].data = cur_pkt_ + h->tp_mac;
      frames_[got].len = h->tp_snaplen;
      frames_[got].rx_ns = kernel_stamp_ns({static_cast<time_t>(h->tp_sec), static_cast<long>(h->tp_nsec)}, wall_offset);
      // CSUMNOTREADY: built on this host, checksum left for a device (a veth
      // peer's socket sender); CSUM_VALID: the device checked it.
      frames_[got].l4_checksum_trusted = (h->tp_status & (TP_STATUS_CSUMNOTREADY | TP_STATUS_CSUM_VALID)) != 0;
      ++got;
      cur_pkt_ += h->tp_next_offset;
      --pkts_left_;
    }
    if (pkts_left_ == 0) {
      finished_.push_back(cur_block_);
      cur_block_ = cur_block_ + 1 == blocks_ ? 0 : cur_block_ + 1;
      cur_pkt_ = nullptr;
    }
  }
  return got;
}

std::span<const engine::RxFrame> AfPacketRxQueue::poll(uint32_t n) {
  if (n > frames_.size()) n = static_cast<uint32_t>(frames_.size());
  uint32_t got = take(n);
  if (got == 0) {
    pollfd p{fd_.get(), POLLIN | POLLERR, 0};
    if (::poll(&p, 1, timeout_ms_) > 0 && (p.revents & POLLERR)) {
      // The device went down or away (ENETDOWN): the error stays pending, and with it POLLERR, until read, so
      // every poll would return at once and the worker would spin. Reading it clears it: the socket waits
      // again, and takes frames when the link comes back up.
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    }
    got = take(n);
  }
  return {frames_.data(), got};
}

void AfPacketRxQueue::release() {
  for (uint32_t b : finished_) store_status(&block(b)->hdr.bh1.block_status, TP_STATUS_KERNEL);
  finished_.clear();
}

engine::ReflectResult AfPacketRxQueue::reflect(std::span<const uint32_t> picks) {
  return reflector_.reflect(fd_.get(), frames_, picks);
}

uint64_t AfPacketRxQueue::drops() {
  tpacket_stats_v3 st{};
  socklen_t l = sizeof st;
  if (getsockopt(fd_.get(), SOL_PACKET, PACKET_STATISTICS, &st, &l) == 0) drops_ += st.tp_drops;
  return drops_;
}

}  // namespace rateline::drivers
