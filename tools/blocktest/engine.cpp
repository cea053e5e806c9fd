#include "engine.hpp"

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "topo/topology.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"

namespace rateline::blocktest {

namespace {

constexpr uint64_t kHugePage = 2u << 20;

// AnonHugePages of the mapping that holds addr, from /proc/self/smaps.
uint64_t transparent_huge_bytes(const void* addr) {
  std::ifstream smaps("/proc/self/smaps");
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    // A mapping's header line "lo-hi perms ..."; no field line ("Name: value") parses as two hex numbers.
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {
      inside = a >= lo && a < hi;
      continue;
    }
    unsigned long kb = 0;
    if (inside && std::sscanf(line.c_str(), "AnonHugePages: %lu kB", &kb) == 1) return uint64_t{kb} * 1024;
  }
  return 0;
}

}  // namespace

// Why huge pages: a block device takes a limited number of DMA segments per
// request (virtio-blk here: 254), and 4 KiB pages that are not physically
// adjacent are one segment each, so a 1 MiB O_DIRECT request from scattered
// pages (256 segments) reached the device as two requests and ran at a
// quarter of the speed; from a huge page it is one segment.
// Why the hugetlbfs pool first: on this VM, 1 MiB O_DIRECT reads into fresh
// transparent huge pages ran 6.1-6.5 GB/s, into pool pages 9.8-10.2 (the
// host backs long-reserved memory better). Either is a real buffer an
// application could use; neither changes what is read or written.
SlotBuffers::SlotBuffers(uint32_t slots, uint64_t slot_bytes) : slots_(slots), slot_bytes_(slot_bytes) {
  map_bytes_ = (bytes() + kHugePage - 1) / kHugePage * kHugePage;
  void* p = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
  if (p != MAP_FAILED) {
    memory_ = Memory::hugetlb;
    huge_bytes_ = map_bytes_;
    map_ = p;
    base_ = static_cast<uint8_t*>(p);
  } else {
    // One huge page longer, so that the slots can start on a 2 MiB boundary.
    map_bytes_ += kHugePage;
    p = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      throw SetupError("Couldn't map " + std::to_string(map_bytes_) + " bytes of I/O buffers: " + errno_text(errno));
    map_ = p;
    base_ = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1));
    // THP "never" or no free huge page leaves 4 KiB pages: slower, not wrong.
    ::madvise(base_, bytes(), MADV_HUGEPAGE);
  }
  // Touch every page now: the pages are real before anything is timed.
  std::memset(base_, 0, bytes());
  if (memory_ != Memory::hugetlb) {
    huge_bytes_ = std::min(transparent_huge_bytes(base_), bytes());
    memory_ = huge_bytes_ ? Memory::transparent_huge : Memory::small_pages;
  }
}

std::string SlotBuffers::describe() const {
  switch (memory_) {
    case Memory::hugetlb: return "buffers in 2 MiB hugetlbfs pages";
    case Memory::transparent_huge: {
      char b[96];
      std::snprintf(b, sizeof b, "buffers %.1f of %.1f MiB in transparent huge pages", static_cast<double>(huge_bytes_) / 1048576.0,
                    static_cast<double>(bytes()) / 1048576.0);
      return b;
    }
    case Memory::small_pages: break;
  }
  return "buffers in 4 KiB pages (no huge page free: a large O_DIRECT block may reach the device split)";
}

SlotBuffers::~SlotBuffers() {
  if (map_) ::munmap(map_, map_bytes_);
}

unsigned ring_entries(uint32_t qd) {
  unsigned e = 2;
  while (e < qd + 1) e *= 2;
  return e;
}

namespace {

// The submitter's CPU: the one given, else the one we run on now.
int choose_cpu(int asked) {
  if (asked >= 0) return asked;
  const int c = sched_getcpu();
  return c >= 0 ? c : 0;
}

int other_cpu(int cpu, const std::vector<int>& allowed) {
  for (int c : allowed)
    if (c != cpu) return c;
  return -1;
}

}  // namespace

Engine::Engine(const EngineOptions& opt)
    : buffers_(opt.qd, opt.max_slot_bytes), ring_(ring_entries(opt.qd), opt.taskrun), free_slots_(opt.qd), slot_state_(opt.qd) {
  if (const std::string e = ring_.register_ring_fd(); !e.empty()) notes_.push_back(e + " (io_uring_enter looks the ring fd up each call)");

  if (opt.fixed_buffers) {
    // One registered buffer spanning every slot; requests point inside it (buf_index 0).
    const iovec iov{buffers_.base(), buffers_.bytes()};
    if (const std::string e = ring_.register_buffers({&iov, 1}); e.empty())
      fixed_buffers_ = true;
    else
      notes_.push_back(e + "; using plain buffers");
  }
  fixed_files_ = opt.fixed_files;

  if (opt.placement != Placement::none) {
    submitter_cpu_ = choose_cpu(opt.cpu);
    if (opt.placement == Placement::same_cpu) {
      // SCHED_BATCH (same weight as SCHED_OTHER, no wakeup preemption), set
      // before the ring makes any io-wq worker, which inherits it. Each
      // worker completion wakes the waiting submitter; with wakeup
      // preemption the woken submitter would preempt the worker on their
      // shared CPU after every request, find its batch incomplete and sleep
      // again: two context switches per request. Without it the worker
      // finishes the batch first and the submitter runs once per batch.
      sched_param sp{};
      if (sched_setscheduler(0, SCHED_BATCH, &sp) == 0) batch_policy_ = true;
      else notes_.push_back("Couldn't set SCHED_BATCH: " + errno_text(errno));
    }
    const std::vector<int> allowed = topo::allowed_cpus();  // before pinning narrows it
    if (const std::string e = topo::pin_current_thread(submitter_cpu_); !e.empty()) throw SetupError(e);
    const int wcpu = opt.placement == Placement::same_cpu ? submitter_cpu_ : other_cpu(submitter_cpu_, allowed);
    if (wcpu < 0) {
      notes_.push_back("--placement split needs two CPUs; workers left unbound");
    } else {
      worker_cpus_ = {wcpu};
      if (const std::string e = ring_.set_worker_cpus(worker_cpus_); !e.empty()) {
        notes_.push_back(e);
        worker_cpus_.clear();
      }
    }
  }
}

Engine::~Engine() { detach(); }

void Engine::attach(int fd) {
  detach();
  fd_ = fd;
  if (fixed_files_) {
    const int fds[1] = {fd};
    if (const std::string e = ring_.register_files(fds); e.empty()) {
      files_registered_ = true;
    } else {
      notes_.push_back(e + "; using the plain fd");
      fixed_files_ = false;
    }
  }
}

void Engine::detach() {
  if (files_registered_) io_uring_unregister_files(ring_.get());
  files_registered_ = false;
  fd_ = -1;
}

namespace {

// What every request of a phase shares, built once: the hot loop patches
// only address, offset and user_data.
struct SqeTemplate {
  uint8_t opcode;
  uint8_t flags;
  int fd;
};

struct LoopState {
  io_uring* ring;
  SqeTemplate tmpl;
  const SlotBuffers* buffers;
  uint32_t* free_slots;
  SlotState* slots;
  uint32_t buffer_mask;  // slot & mask picks the buffer: ~0 = its own, 0 = slot 0's
};

// user_data of the closing fsync: above every slot index, so the slot
// arrays never see it (run_blocks skips any user_data >= qd).
constexpr uint64_t kFsyncTag = ~0ull;

// The closing fsync of a write phase (inside its timed span). io_uring
// always runs fsync in an io-wq worker.
// Waits for the fsync's own completion, not for "an enter returned": when
// a signal interrupts the wait, io_uring_enter still returns the number it
// submitted (1), with the fsync in flight. Its completion must be reaped
// here, or the next phase would find it in the ring.
void fsync_file(const LoopState& s, PhaseResult& r) {
  io_uring* ring = s.ring;
  const uint64_t t = now_ns();
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  io_uring_prep_fsync(sqe, s.tmpl.fd, 0);  // a full fsync, as dd conv=fsync does
  sqe->flags = s.tmpl.flags & IOSQE_FIXED_FILE;
  sqe->user_data = kFsyncTag;
  ++r.submitted;
  for (;;) {
    const int rc = io_uring_submit_and_wait(ring, 1);
    ++r.enters;
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      r.error = -rc;
      r.left_in_flight = 1;
      break;
    }
    io_uring_cqe* cqe = nullptr;
    if (io_uring_peek_cqe(ring, &cqe) != 0 || !cqe) continue;  // interrupted before it completed: wait again
    const bool mine = cqe->user_data == kFsyncTag;
    if (mine && cqe->res < 0) r.error = -cqe->res;
    io_uring_cqe_seen(ring, cqe);
    if (mine) break;
  }
  r.fsync_ns = now_ns() - t;
}

// The per-block loop. kWrite/kVerify are fixed per phase, so the loop body
// carries no option tests.
template <bool kWrite, bool kVerify>
PhaseResult run_blocks(const LoopState& s, const PhasePlan& plan, std::atomic<uint64_t>& blocks_done,
                       const std::atomic<bool>& stop) {
  PhaseResult r;
  io_uring* ring = s.ring;
  const uint64_t bs = plan.block_bytes;
  const uint32_t bs32 = static_cast<uint32_t>(bs);
  uint32_t nfree = plan.qd;
  for (uint32_t i = 0; i < plan.qd; ++i) s.free_slots[i] = plan.qd - 1 - i;
  uint64_t next = 0;
  uint32_t inflight = 0;
  bool halt = false;  // error or stop: queue nothing more, drain what is in flight

  r.start_ns = now_ns();
  while (inflight || (!halt && next < plan.blocks)) {
    const uint32_t nfree_before = nfree;
    while (!halt && nfree && next < plan.blocks) {
      const uint32_t slot = s.free_slots[--nfree];
      // Without --verify the bytes do not matter: a buffered request shares
      // slot 0's buffer (as dd's one buffer), which stays in the CPU cache.
      // With --verify, and with O_DIRECT, each request has its own slot: 32
      // direct requests on one buffer wrote 13-31% slower here (PhasePlan).
      uint8_t* buf = s.buffers->slot(slot & s.buffer_mask);
      const uint64_t off = next * bs;
      if constexpr (kWrite && kVerify) fill_block(buf, bs, off, plan.seed);
      io_uring_sqe* sqe = io_uring_get_sqe(ring);  // ring entries > qd: never null here
      io_uring_prep_rw(s.tmpl.opcode, sqe, s.tmpl.fd, buf, bs32, off);
      sqe->flags = s.tmpl.flags;
      sqe->user_data = slot;
      s.slots[slot].block = next;
      ++next;
      ++r.submitted;
      ++inflight;
    }
    if (nfree != nfree_before) {
      // One stamp for the batch, after the buffers are filled (a --verify
      // pattern is not I/O time): the kernel sees these requests in the
      // enter below. free_slots[nfree, nfree_before) are the slots just taken.
      const uint64_t submit_ns = now_ns();
      for (uint32_t i = nfree; i < nfree_before; ++i) s.slots[s.free_slots[i]].submit_ns = submit_ns;
    }
    const unsigned want = halt ? inflight : std::min(inflight, plan.wait_batch);
    const int rc = io_uring_submit_and_wait(ring, want);
    ++r.enters;
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      // The ring itself failed: nothing in flight can be trusted to complete.
      r.error = -rc;
      r.left_in_flight = inflight;
      break;
    }
    // The tail (an acquire load) before the clock: every completion counted
    // in `ready` was posted before reaped_ns, so no latency comes out short.
    // One posted while we reap waits for the next round and its stamp.
    const unsigned ready = io_uring_cq_ready(ring);
    const uint64_t reaped_ns = now_ns();
    unsigned head, seen = 0, reaped = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(ring, head, cqe) {
      if (seen == ready) break;
      ++seen;
      // Only a slot index may index the slot arrays: anything else (a tag
      // like kFsyncTag) is not one of this loop's requests.
      if (cqe->user_data >= plan.qd) [[unlikely]]
        continue;
      const auto slot = static_cast<uint32_t>(cqe->user_data);
      const int res = cqe->res;
      if (res == static_cast<int>(bs32)) {
        ++r.blocks_ok;
        r.bytes_ok += bs;
        r.completion_ns.record(reaped_ns - s.slots[slot].submit_ns);
        if constexpr (!kWrite && kVerify) {
          const uint64_t off = s.slots[slot].block * bs;
          const BlockCheck c = check_block(s.buffers->slot(slot), bs, off, plan.seed);
          if (!c) {
            if (r.verify_failures++ == 0) {
              r.first_bad = c;
              r.first_bad_offset = off;
            }
          }
        }
      } else if (!r.error) {
        r.error = res < 0 ? -res : (kWrite ? ENOSPC : EIO);
        if (res >= 0) r.short_bytes = res;
        r.error_offset = s.slots[slot].block * bs;
        halt = true;
      }
      s.free_slots[nfree++] = slot;
      ++reaped;
    }
    io_uring_cq_advance(ring, seen);
    inflight -= reaped;
    blocks_done.store(r.blocks_ok, std::memory_order_relaxed);  // read by the progress thread only
    if (stop.load(std::memory_order_relaxed)) {
      r.stopped = true;
      halt = true;
    }
  }

  if constexpr (kWrite) {
    if (plan.fsync && !halt && !r.error) fsync_file(s, r);
  }
  r.end_ns = now_ns();
  return r;
}


}  // namespace

PhaseResult Engine::run(const PhasePlan& plan, std::atomic<uint64_t>& blocks_done, const std::atomic<bool>& stop) {
  if (plan.qd > buffers_.slots() || plan.block_bytes > buffers_.slot_bytes())
    throw SetupError("internal: phase plan exceeds the engine's buffers");
  if (!broken_.empty()) throw SetupError(broken_);
  LoopState s{};
  s.ring = ring_.get();
  s.buffers = &buffers_;
  s.free_slots = free_slots_.data();
  s.slots = slot_state_.data();
  s.buffer_mask = plan.verify || plan.buffer_per_request ? ~0u : 0u;
  s.tmpl.fd = files_registered_ ? 0 : fd_;
  s.tmpl.flags = files_registered_ ? IOSQE_FIXED_FILE : 0;
  if (plan.write)
    s.tmpl.opcode = fixed_buffers_ ? IORING_OP_WRITE_FIXED : IORING_OP_WRITE;
  else
    s.tmpl.opcode = fixed_buffers_ ? IORING_OP_READ_FIXED : IORING_OP_READ;

  if (plan.write && !plan.verify) {
    // Content without --verify: one pseudo-random block in the shared slot 0, written once here.
    fill_block(buffers_.slot(0), plan.block_bytes, 0, plan.seed);
  }
  blocks_done.store(0, std::memory_order_relaxed);
  PhaseResult r;
  if (plan.write)
    r = plan.verify ? run_blocks<true, true>(s, plan, blocks_done, stop) : run_blocks<true, false>(s, plan, blocks_done, stop);
  else
    r = plan.verify ? run_blocks<false, true>(s, plan, blocks_done, stop) : run_blocks<false, false>(s, plan, blocks_done, stop);
  // Requests the kernel still holds would complete into the next phase's
  // slots (and their buffers): no phase may run on this ring again.
  if (r.left_in_flight)
    broken_ = "the io_uring failed (" + errno_text(r.error) + ") with " + std::to_string(r.left_in_flight) +
              " requests in flight; no further phase can run on it";
  return r;
}

}  // namespace rateline::blocktest
