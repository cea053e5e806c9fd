// Which CLOCK_MONOTONIC this process reads, as one number a sender puts in
// its end markers and a receiver compares with its own.
//
// Two processes read the same CLOCK_MONOTONIC exactly when they run on one
// booted kernel (same /proc/sys/kernel/random/boot_id) with the same time
// namespace offset for that clock (/proc/self/timens_offsets, "monotonic
// SECS NSECS"; all zero, or no file, outside a time namespace). Network
// namespaces and containers share it. The id is a 64-bit hash of those
// two: equal ids mean the send stamps are on the receiver's clock, so
// rx - tx is a one-way latency; different ids mean it is not, however
// close the two clocks happen to read.
#pragma once

#include <cstdint>
#include <string_view>

namespace rateline {

// Never 0 (0 on the wire says "not given"); 0 here only when the boot id
// cannot be read (then nothing is claimed).
uint64_t this_clock_id();

// The hash behind it, for tests: boot id text and the monotonic offset in ns.
uint64_t clock_id_of(std::string_view boot_id, int64_t monotonic_offset_ns);

}  // namespace rateline
