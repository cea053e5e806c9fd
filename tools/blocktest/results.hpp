// What a sweep produced, per filesystem, per block size, per phase: the
// input of every output format (table, CSV, JSON lines, SVG).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner.hpp"
#include "stats/latency.hpp"
#include "worker_watch.hpp"

namespace rateline::blocktest {

enum class Status {
  not_run,         // the sweep stopped before this size (error, ENOSPC, Ctrl-C)
  ok,
  partial,         // failed or interrupted part way: bytes/seconds cover what completed
  not_applicable,  // e.g. O_DIRECT below the logical block size: never faked
  unsupported,     // the filesystem cannot be made or mounted here
  failed,          // failed before a single block completed
};
const char* status_name(Status s);

// A phase's per-block completion latency (fio's clat; engine.hpp says what
// is timed), summarised from its histogram after the phase. Percentiles
// are nearest-rank, as fio's: p99 is the smallest latency that at least
// 99% of the blocks did not exceed. Each is reported as the upper bound of
// the histogram bucket holding it: never below the true value and at most
// kLatencyRelError above it (exact below 16 ns); max is exact.
struct LatencySummary {
  uint64_t samples = 0;  // blocks completed whole: PhaseOutcome::blocks
  uint64_t p50_ns = 0, p99_ns = 0, p99_9_ns = 0, max_ns = 0;
};
inline constexpr double kLatencyRelError = 1.0 / stats::LatencyHistogram::kSub;  // 12.5%
LatencySummary summarize_latency(const stats::LatencyHistogram& h);

struct PhaseOutcome {
  Status status = Status::not_run;
  std::string note;            // why n/a / the error, in words
  int error = 0;               // errno of the failure
  uint64_t bytes = 0, blocks = 0;
  uint64_t requests = 0;       // requests issued, the fsync included
  double seconds = 0, fsync_seconds = 0;
  uint64_t enters = 0;         // io_uring_enter calls
  LatencySummary clat;
  WorkerUsage workers;
  // The device's own count of this phase's direction (DeviceCounts): requests
  // it completed, how many bios the block layer merged into them, bytes.
  bool device_known = false;
  uint64_t device_requests = 0, device_merges = 0, device_bytes = 0, device_busy_ms = 0;
  std::string cache;           // reads: what was done about the page cache
  uint64_t verify_failures = 0;
  std::string verify_note;
  bool dd_ran = false;         // --compare-dd
  double dd_mib_s = 0;
  std::string dd_note;
  double mib_s() const { return seconds > 0 ? static_cast<double>(bytes) / (1024.0 * 1024.0) / seconds : 0.0; }
  bool has_rate() const { return (status == Status::ok || status == Status::partial) && seconds > 0; }
};

struct SizeOutcome {
  SizePlan plan;
  PhaseOutcome write, read;
};

struct FsOutcome {
  std::string name;            // column title: "ext4", or the --dir filesystem
  bool supported = true;
  std::string reason;          // when not supported
  std::string note;            // how it was made / where it is
  DirectAlign align;
  std::vector<SizeOutcome> sizes;
};

// What the run did, stated in the report header and the JSON start record.
struct RunDescription {
  std::string mode;            // "buffered" / "direct (O_DIRECT)"
  uint32_t qd = 0, wait_batch = 0;
  std::string totals;          // "64 MiB per size (at most 512Ki blocks)"
  bool fsync = false, prealloc = false, verify = false;
  std::string cache_policy;
  std::string placement;
  std::string ring;            // ring flags, registered files/buffers
  std::string punt_method;
  std::vector<std::string> notes;
};

}  // namespace rateline::blocktest
