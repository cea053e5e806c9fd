// The one clock every timestamp in rateline uses: CLOCK_MONOTONIC in ns.
// It is what bpf_ktime_get_ns() returns too, so kernel-stamped and
// userspace-stamped packets compare directly. clock_gettime is a vDSO call
// (no syscall) on every platform we target.
#pragma once

#include <cstdint>
#include <ctime>

namespace rateline {

inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline constexpr uint64_t kNsPerSec = 1'000'000'000ull;
inline constexpr uint64_t kNsPerMs = 1'000'000ull;
inline constexpr uint64_t kNsPerUs = 1'000ull;

}  // namespace rateline
