#include "afxdp/afxdp_queues.hpp"

#include <linux/if_xdp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>

#include "util/errors.hpp"

namespace rateline::drivers {
namespace {

constexpr int kXdpMaxTxSkbBudget = 9;  // XDP_MAX_TX_SKB_BUDGET (linux/if_xdp.h, 6.17); Debian 12's headers lack it
constexpr int kTxKickBudget = 64;      // descriptors one copy-mode kick may send: a quarter of a veth peer's 256-frame XDP ring

std::string why(int err, const std::string& what) {
  err = err < 0 ? -err : err;
  std::string t = "Couldn't " + what + ": " + std::strerror(err);
  if (err == EPERM) t += " (AF_XDP needs CAP_NET_RAW and CAP_NET_ADMIN, or root)";
  return t;
}

// Zero-copy first; drivers without it (veth, most virtual devices) get copy mode.
xsk_socket* create_socket(const XskConfig& cfg, Umem& umem, xsk_ring_cons* rx, xsk_ring_prod* tx, std::string& mode) {
  xsk_socket_config sc{};
  sc.rx_size = XSK_RING_CONS__DEFAULT_NUM_DESCS;
  sc.tx_size = XSK_RING_PROD__DEFAULT_NUM_DESCS;
  sc.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;  // we load our own steering program
  xsk_socket* xsk = nullptr;
  int err = 0;
  for (uint16_t bind : {uint16_t(XDP_ZEROCOPY | XDP_USE_NEED_WAKEUP), uint16_t(XDP_COPY | XDP_USE_NEED_WAKEUP)}) {
    sc.bind_flags = bind;
    err = xsk_socket__create(&xsk, cfg.iface.name.c_str(), cfg.queue, umem.get(), rx, tx, &sc);
    if (err == 0) {
      mode = (bind & XDP_ZEROCOPY) ? "zero-copy" : "copy";
      return xsk;
    }
  }
  throw BackendUnavailable(why(err, "create an AF_XDP socket on " + cfg.iface.name + " queue " + std::to_string(cfg.queue)));
}

}  // namespace

Umem::Umem(uint32_t frames_, uint32_t frame_bytes_, uint32_t fill_size, uint32_t comp_size)
    : frames(frames_), frame_bytes(frame_bytes_) {
  const size_t bytes = size_t{frames} * frame_bytes;
  area_map_ = OwnedMapping(
      mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0), bytes);
  if (!area_map_) throw SetupError("Couldn't map the AF_XDP UMEM: " + errno_text(errno));
  area_ = area_map_.data();
  xsk_umem_config uc{};
  uc.fill_size = fill_size;
  uc.comp_size = comp_size;
  uc.frame_size = frame_bytes;
  uc.frame_headroom = 0;
  if (const int err = xsk_umem__create(&umem_, area_, bytes, &fill, &comp, &uc); err != 0)
    throw BackendUnavailable(why(err, "register the AF_XDP UMEM"));
}

Umem::~Umem() {
  if (umem_) xsk_umem__delete(umem_);
}

AfXdpTxQueue::AfXdpTxQueue(const XskConfig& cfg)
    : umem_(cfg.frames, cfg.frame_bytes, XSK_RING_PROD__DEFAULT_NUM_DESCS, XSK_RING_CONS__DEFAULT_NUM_DESCS) {
  xsk_ = create_socket(cfg, umem_, nullptr, &tx_, mode_);
  fd_ = xsk_socket__fd(xsk_);
  // Copy mode sends at most 32 descriptors per sendto() unless told more
  // (Linux >= 6.17): each kick is a syscall, and on a VM a costly one. Not
  // more than 64: a kick runs to its end before the receiving veth's NAPI
  // drains its 256-frame ring, and 256 per kick overflowed it (drops we
  // would have caused and then measured). Older kernels say ENOPROTOOPT
  // and keep 32.
  const int budget = kTxKickBudget;
  if (mode_ == "copy") setsockopt(fd_, SOL_XDP, kXdpMaxTxSkbBudget, &budget, sizeof budget);
  slots_.resize(cfg.frames);
  for (uint32_t i = 0; i < cfg.frames; ++i) {
    slots_[i].data = umem_.frame(uint64_t{i} * cfg.frame_bytes);
    slots_[i].capacity = cfg.frame_bytes;
    slots_[i].stale = true;
  }
}

AfXdpTxQueue::~AfXdpTxQueue() {
  if (xsk_) xsk_socket__delete(xsk_);
}

std::span<engine::TxSlot> AfXdpTxQueue::reserve(uint32_t n) {
  const uint64_t in_flight = head_ - completed_;
  const uint32_t frames = umem_.frames;
  const auto start = static_cast<uint32_t>(head_ % frames);
  uint64_t free_frames = frames - in_flight;
  uint32_t count = n;
  if (count > free_frames) count = static_cast<uint32_t>(free_frames);
  if (count > frames - start) count = frames - start;  // contiguous: never across the UMEM's end
  return {slots_.data() + start, count};
}

engine::CommitResult AfXdpTxQueue::commit(std::span<engine::TxSlot> filled) {
  uint32_t idx;
  auto n = static_cast<uint32_t>(filled.size());
  uint32_t got = xsk_ring_prod__reserve(&tx_, n, &idx);
  while (got == 0 && n > 1) {  // TX ring nearly full: take what fits
    n /= 2;
    got = xsk_ring_prod__reserve(&tx_, n, &idx);
  }
  for (uint32_t i = 0; i < got; ++i) {
    const auto frame = static_cast<uint64_t>(&filled[i] - slots_.data());
    xdp_desc* d = xsk_ring_prod__tx_desc(&tx_, idx + i);
    d->addr = frame * umem_.frame_bytes;
    d->len = filled[i].len;
  }
  if (got) {
    xsk_ring_prod__submit(&tx_, got);  // descriptors before the producer index: release (in xsk.h)
    head_ += got;
  }
  // Reap on every commit, not only when the UMEM runs out: the kernel sends
  // nothing while the completion ring is full, so frames would wait in the
  // TX ring until the next reclaim (at 20 kpps up to 100 ms: every one-way
  // latency and round trip measured with this sender carried that wait).
  reap_completions();
  kick();
  return {got, 0, 0};
}

uint32_t AfXdpTxQueue::reap_completions() {
  uint32_t idx;
  const uint32_t done = xsk_ring_cons__peek(&umem_.comp, umem_.frames, &idx);
  if (done) {
    xsk_ring_cons__release(&umem_.comp, done);  // completions come back in order: just count them
    completed_ += done;
  }
  return done;
}

void AfXdpTxQueue::kick() {
  if (!xsk_ring_prod__needs_wakeup(&tx_)) return;
  if (::sendto(fd_, nullptr, 0, MSG_DONTWAIT, nullptr, 0) < 0 && errno != EAGAIN && errno != EBUSY &&
      errno != ENOBUFS && errno != ENETDOWN) {
    // Nothing to do on the hot path: frames stay queued, the next kick retries.
  }
}

void AfXdpTxQueue::reclaim() {
  if (!reap_completions()) kick();
}

void AfXdpTxQueue::flush() {
  for (int tries = 0; tries < 20000 && completed_ < head_; ++tries) {
    if (xsk_ring_prod__needs_wakeup(&tx_) || tries % 64 == 0)
      ::sendto(fd_, nullptr, 0, MSG_DONTWAIT, nullptr, 0);
    reclaim();
    if (completed_ < head_ && tries % 64 == 63) usleep(100);
  }
}

AfXdpRxQueue::AfXdpRxQueue(const XskConfig& cfg)
    : umem_(cfg.frames, cfg.frame_bytes, cfg.frames, XSK_RING_CONS__DEFAULT_NUM_DESCS),
      timeout_ms_(cfg.poll_timeout_ms),
      reflector_(cfg.batch) {
  if (cfg.reflect) reply_fd_ = open_send_only_packet_socket(cfg.iface);
  xsk_ = create_socket(cfg, umem_, &rx_, nullptr, mode_);
  fd_ = xsk_socket__fd(xsk_);
  // Every frame starts in the fill ring: the kernel may use any of them.
  uint32_t idx;
  if (xsk_ring_prod__reserve(&umem_.fill, cfg.frames, &idx) != cfg.frames) {
    xsk_socket__delete(xsk_);
    throw BackendUnavailable("Couldn't fill the AF_XDP fill ring");
  }
  for (uint32_t i = 0; i < cfg.frames; ++i) *xsk_ring_prod__fill_addr(&umem_.fill, idx + i) = uint64_t{i} * cfg.frame_bytes;
  xsk_ring_prod__submit(&umem_.fill, cfg.frames);
  const uint32_t key = cfg.queue;
  if (bpf_map_update_elem(cfg.xsk_map_fd, &key, &fd_, 0) != 0) {
    const int e = errno;
    xsk_socket__delete(xsk_);
    throw BackendUnavailable(why(e, "insert the AF_XDP socket into the steering map"));
  }
  frames_.resize(cfg.batch);
  addrs_.resize(cfg.batch);
}

AfXdpRxQueue::~AfXdpRxQueue() {
  if (xsk_) xsk_socket__delete(xsk_);
}

std::span<const engine::RxFrame> AfXdpRxQueue::poll(uint32_t n) {
  if (n > frames_.size()) n = static_cast<uint32_t>(frames_.size());
  uint32_t idx;
  uint32_t got = xsk_ring_cons__peek(&rx_, n, &idx);
  if (got == 0) {
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, timeout_ms_);
    got = xsk_ring_cons__peek(&rx_, n, &idx);
  }
  for (uint32_t i = 0; i < got; ++i) {
    const xdp_desc* d = xsk_ring_cons__rx_desc(&rx_, idx + i);
    frames_[i].data = umem_.frame(d->addr);
    frames_[i].len = d->len;
    addrs_[i] = d->addr;
  }
  if (got) xsk_ring_cons__release(&rx_, got);  // descriptors copied out; the frames stay ours until release()
  handed_out_ = got;
  return {frames_.data(), got};
}

void AfXdpRxQueue::release() {
  if (!handed_out_) return;
  uint32_t idx;
  // The fill ring has room for every frame, so this always succeeds.
  if (xsk_ring_prod__reserve(&umem_.fill, handed_out_, &idx) == handed_out_) {
    for (uint32_t i = 0; i < handed_out_; ++i) *xsk_ring_prod__fill_addr(&umem_.fill, idx + i) = addrs_[i];
    xsk_ring_prod__submit(&umem_.fill, handed_out_);
  }
  handed_out_ = 0;
}

uint64_t AfXdpRxQueue::drops() {
  xdp_statistics st{};
  socklen_t l = sizeof st;
  if (getsockopt(fd_, SOL_XDP, XDP_STATISTICS, &st, &l) != 0) return 0;
  // Cumulative in the kernel: frames dropped for want of room in the RX ring, or otherwise.
  return st.rx_dropped + st.rx_ring_full;
}

}  // namespace rateline::drivers
