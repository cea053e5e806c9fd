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

// CLOCK_REALTIME minus CLOCK_MONOTONIC, now: what turns a kernel receive
// stamp (SO_TIMESTAMPNS, AF_PACKET's tp_sec/tp_nsec: both wall clock) into
// our clock. Two vDSO reads; read again per received batch, so a clock step
// or NTP slew reaches it within one batch. Error: the time between the reads
// (tens of ns).
inline int64_t realtime_minus_monotonic_ns() {
  timespec mono, real;
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  return (static_cast<int64_t>(real.tv_sec) - static_cast<int64_t>(mono.tv_sec)) * 1'000'000'000ll +
         (static_cast<int64_t>(real.tv_nsec) - static_cast<int64_t>(mono.tv_nsec));
}

// A wall-clock kernel stamp in our clock; 0 when there is none or it is absurd.
inline uint64_t kernel_stamp_ns(const timespec& wall, int64_t realtime_minus_monotonic) {
  const int64_t ns = static_cast<int64_t>(wall.tv_sec) * 1'000'000'000ll + wall.tv_nsec - realtime_minus_monotonic;
  return wall.tv_sec == 0 || ns <= 0 ? 0 : static_cast<uint64_t>(ns);
}

inline constexpr uint64_t kNsPerSec = 1'000'000'000ull;
inline constexpr uint64_t kNsPerMs = 1'000'000ull;
inline constexpr uint64_t kNsPerUs = 1'000ull;

}  // namespace rateline
