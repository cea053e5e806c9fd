// The block engine: one io_uring (drivers/uring), qd buffer slots, one file
// at a time, and the per-block loop.
//
// Per block exactly one READ/WRITE(_FIXED) request of block_bytes at
// block_index * block_bytes: blocks are never merged or vectored. Requests
// are queued into every free slot, then one io_uring_enter both submits the
// batch and waits for `wait_batch` completions; completions are reaped in
// bulk and their slots refilled. The loop (run_blocks in engine.cpp) reads
// only the PhasePlan, never allocates, locks or logs; it publishes progress
// with one relaxed store per batch.
//
// Completion latency per block (fio's clat): from a clock read just before
// the io_uring_enter that submits the block's request to a clock read just
// after the enter that hands its completion back, so two clock reads per
// batch, none per request (fio too stamps a reaped batch once). It is what
// the submitting application sees: never less than the time the kernel held
// the request, and more by the enter's own entry on the submission side
// and, on the completion side, by how long the completion waited to be
// reaped: for the rest of the enter's `wait_batch` completions (the whole
// queue for buffered I/O by default), or, posted while the loop was
// reaping, until the next enter returned. --batch 1 bounds that wait by one
// pass of the loop. Recorded into a preallocated log-linear histogram
// (stats/latency.hpp); percentiles come from it after the phase, at most
// 12.5% above the true value (results.hpp, LatencySummary).
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "pattern.hpp"
#include "stats/latency.hpp"
#include "uring/uring.hpp"

namespace rateline::blocktest {

// qd page-aligned slots of slot_bytes, mapped and touched once at setup so
// no page fault (on this VM: a fault into host memory) lands in a timed span.
// In huge pages where there are any (hugetlbfs pool, else transparent).
class SlotBuffers {
 public:
  enum class Memory { hugetlb, transparent_huge, small_pages };
  SlotBuffers(uint32_t slots, uint64_t slot_bytes);
  ~SlotBuffers();
  SlotBuffers(const SlotBuffers&) = delete;
  SlotBuffers& operator=(const SlotBuffers&) = delete;

  uint8_t* slot(uint32_t i) const { return base_ + uint64_t{i} * slot_bytes_; }
  uint8_t* base() const { return base_; }
  uint64_t slot_bytes() const { return slot_bytes_; }
  uint32_t slots() const { return slots_; }
  uint64_t bytes() const { return uint64_t{slots_} * slot_bytes_; }
  Memory memory() const { return memory_; }
  std::string describe() const;  // for the report: which pages hold the slots

 private:
  void* map_ = nullptr;
  uint64_t map_bytes_ = 0;
  Memory memory_ = Memory::small_pages;
  uint64_t huge_bytes_ = 0;
  uint8_t* base_ = nullptr;
  uint32_t slots_ = 0;
  uint64_t slot_bytes_ = 0;
};

struct EngineOptions {
  uint32_t qd = 32;
  uint64_t max_slot_bytes = 0;  // largest block, rounded up to a page
  bool fixed_files = true;
  bool fixed_buffers = true;
  Placement placement = Placement::same_cpu;
  int cpu = -1;                 // -1: the CPU this thread runs on now
  uring::Uring::TaskRun taskrun = uring::Uring::TaskRun::defer;
};

// What the loop remembers about a slot's request in flight.
struct SlotState {
  uint64_t block = 0;      // block index: the request's offset / block_bytes
  uint64_t submit_ns = 0;  // the clock read before the enter that submitted it
};

// Everything the per-block loop reads, by value.
struct PhasePlan {
  bool write = true;
  bool verify = false;
  bool fsync = false;           // after the last block, inside the timed span
  // Every request its own slot's buffer (O_DIRECT: the device reads or fills
  // it, the CPU never touches it). Otherwise, without verify, all requests
  // share slot 0, which a page-cache copy then finds in the CPU cache.
  bool buffer_per_request = false;
  uint64_t block_bytes = 0;
  uint64_t blocks = 0;
  uint64_t seed = 0;            // verify pattern seed
  uint32_t qd = 1;
  uint32_t wait_batch = 1;
};

struct PhaseResult {
  uint64_t blocks_ok = 0;
  uint64_t bytes_ok = 0;
  uint64_t submitted = 0;       // requests issued (>= blocks_ok when some failed)
  uint64_t start_ns = 0;        // first submission
  uint64_t end_ns = 0;          // last completion (the fsync's, with fsync)
  uint64_t fsync_ns = 0;        // of which the fsync
  uint64_t enters = 0;          // io_uring_enter calls in the span
  int error = 0;                // errno of the first failed request, 0 = none
  uint64_t error_offset = 0;    // its file offset
  int64_t short_bytes = -1;     // a short transfer: what it moved (error is then ENOSPC for writes, EIO for reads)
  bool stopped = false;         // Ctrl-C / SIGTERM
  uint32_t left_in_flight = 0;  // requests the kernel still held when the ring itself failed
  uint64_t verify_failures = 0;
  uint64_t first_bad_offset = 0;  // file offset of the first failing block
  BlockCheck first_bad{};
  stats::LatencyHistogram completion_ns;  // one sample per block in blocks_ok; the fsync is not a block
  double seconds() const { return end_ns > start_ns ? static_cast<double>(end_ns - start_ns) / 1e9 : 0.0; }
};

class Engine {
 public:
  explicit Engine(const EngineOptions& opt);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Uses fd for the following phases (registered when fixed files are on).
  void attach(int fd);
  void detach();

  PhaseResult run(const PhasePlan& plan, std::atomic<uint64_t>& blocks_done, const std::atomic<bool>& stop);

  // For the report: what setup got, and what it could not get.
  const std::string& ring_mode() const { return ring_.mode(); }
  bool fixed_files() const { return fixed_files_; }
  bool fixed_buffers() const { return fixed_buffers_; }
  int submitter_cpu() const { return submitter_cpu_; }
  bool batch_policy() const { return batch_policy_; }  // SCHED_BATCH on the submitter (and its workers)
  const std::vector<int>& worker_cpus() const { return worker_cpus_; }
  const std::vector<std::string>& notes() const { return notes_; }
  const SlotBuffers& buffers() const { return buffers_; }

 private:
  // Declared before the ring, so destroyed after it: a request still in the
  // ring never outlives the memory it reads or fills.
  SlotBuffers buffers_;
  uring::Uring ring_;
  std::vector<uint32_t> free_slots_;
  std::vector<SlotState> slot_state_;
  int fd_ = -1;
  bool fixed_files_ = false;
  bool fixed_buffers_ = false;
  bool files_registered_ = false;
  int submitter_cpu_ = -1;
  bool batch_policy_ = false;
  std::vector<int> worker_cpus_;
  std::vector<std::string> notes_;
  std::string broken_;  // why run() refuses: requests were abandoned in the ring
};

// The ring size for qd requests (a power of two, the fsync fits too).
unsigned ring_entries(uint32_t qd);

}  // namespace rateline::blocktest
