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
// our clock. Read again per received batch, so a clock step or NTP slew
// reaches it within one batch. The wall clock is read between two monotonic
// reads, and a try whose reads lay more than 2 us apart (the thread was
// preempted, a VM's vCPU taken away) is repeated, keeping the tightest of
// four: one such gap would otherwise move every stamp of the batch by its
// length, making packets arrive "before" they were sent. Error: half the
// kept span (tens of ns when nothing intervenes).
inline int64_t realtime_minus_monotonic_ns() {
  auto ns = [](const timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1'000'000'000ll + t.tv_nsec; };
  int64_t best = 0, best_span = -1;
  for (int i = 0; i < 4; ++i) {
    timespec before, real, after;
    clock_gettime(CLOCK_MONOTONIC, &before);
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_MONOTONIC, &after);
    const int64_t span = ns(after) - ns(before);
    if (best_span < 0 || span < best_span) {
      best_span = span;
      best = ns(real) - (ns(before) + span / 2);
    }
    if (span <= 2'000) break;
  }
  return best;
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
