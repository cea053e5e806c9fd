// blocktest's configuration, parsed and validated once (options.cpp) into a
// plain struct. Setup reads it; the per-block loop reads only a PhasePlan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rateline::blocktest {

// Where the page cache goes between the write and the read of a size.
enum class DropCache {
  file,    // fdatasync, then POSIX_FADV_DONTNEED on the test file (and the image behind a loop device)
  global,  // sync, then echo 1 > /proc/sys/vm/drop_caches (root; every file on the machine)
  none,    // reads may be served from the page cache (says so)
};

// Where the submitting thread and the io-wq workers run.
enum class Placement {
  same_cpu,  // submitter pinned to one CPU, io-wq workers bound to that same CPU (default)
  split,     // submitter on one CPU, workers on another: reproduces the cross-vCPU handoff cost
  none,      // nothing pinned (what fio does)
};

struct Config {
  std::string dir;                   // run in this existing directory (files are created inside it)
  std::vector<uint64_t> sizes;       // block sizes in bytes, ascending, unique
  uint64_t total_bytes = 0;          // bytes per size; 0 = default (kDefaultTotal*, see planner.hpp)
  bool direct = false;               // O_DIRECT
  bool fsync = false;                // fsync at the end of each write, inside the timed span
  bool prealloc = false;             // fallocate the file before the timed write
  bool warm = true;                  // touch + free the phase's bytes of memory right before it (target.hpp)
  uint32_t qd = 32;                  // I/Os in flight
  uint32_t wait_batch = 0;           // completions awaited per io_uring_enter; 0 = wait_batch_for()'s default
  bool verify = false;               // pattern + checksum per block, checked on read
  bool fixed_buffers = true;         // register buffers (--no-fixed-buffers to compare)
  bool fixed_files = true;           // register the file (--no-fixed-files to compare)
  DropCache drop_cache = DropCache::file;
  Placement placement = Placement::same_cpu;
  int cpu = -1;                      // submitter CPU; -1 = the CPU we start on
  std::string taskrun = "defer";     // ring completion mode (src/uring/uring.hpp)
  std::vector<std::string> filesystems;  // --fs: make each in an image on a loop device (root)
  uint64_t image_bytes = 0;          // --fs image size; 0 = sized from the sweep
  std::string device;                // --device /dev/X (with --destroy-data)
  bool destroy_data = false;
  bool compare_dd = false;
  std::string json_path, csv_path, svg_path;
  bool quiet = false;
  bool verbose = false;              // one detail line per phase (where the time went)
  bool space_check = true;           // --no-space-check: let ENOSPC happen (tests)
  bool punt_trace = true;            // count io-wq punts with the io_uring_queue_async_work tracepoint when possible
  uint64_t inject_flip_block = ~0ull;  // test hook: flip one byte of this block on disk before the read
};

// Completions to wait for per io_uring_enter. Buffered I/O is CPU work
// served inline: one enter per queue depth is cheapest. O_DIRECT waits on the
// device: refilling after a quarter of the queue completes keeps it busy
// (here +11-25% at 4 KiB, 64 KiB reads, 1 MiB writes against waiting for all 32).
inline uint32_t wait_batch_for(const Config& cfg) {
  if (cfg.wait_batch) return cfg.wait_batch;
  return cfg.direct ? (cfg.qd >= 4 ? cfg.qd / 4 : 1) : cfg.qd;
}

// Parses argv into cfg. Returns -1 to run, else the exit code (help: 0, bad input: 2).
int parse_options(int argc, char** argv, Config& cfg);

}  // namespace rateline::blocktest
