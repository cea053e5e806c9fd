// util/clock_id.hpp: the identity of this process's CLOCK_MONOTONIC.
#include "util/clock_id.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace rateline {

namespace {

// FNV-1a: any stable 64-bit hash does; both ends run this same code.
uint64_t fnv1a(uint64_t h, const void* data, size_t len) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < len; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// The "monotonic" line of /proc/self/timens_offsets in ns (0 without the file:
// a kernel without time namespaces, where no offset exists).
int64_t monotonic_offset_ns() {
  std::ifstream f("/proc/self/timens_offsets");
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string clock;
    long long secs = 0, nsecs = 0;
    if (in >> clock >> secs >> nsecs && clock == "monotonic") return secs * 1'000'000'000ll + nsecs;
  }
  return 0;
}

uint64_t read_clock_id() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (!(f >> boot_id) || boot_id.empty()) return 0;
  return clock_id_of(boot_id, monotonic_offset_ns());
}

}  // namespace

uint64_t clock_id_of(std::string_view boot_id, int64_t monotonic_offset_ns) {
  uint64_t h = fnv1a(0xcbf29ce484222325ull, boot_id.data(), boot_id.size());
  unsigned char offset[8];
  for (int i = 0; i < 8; ++i) offset[i] = static_cast<unsigned char>(static_cast<uint64_t>(monotonic_offset_ns) >> (8 * i));
  h = fnv1a(h, offset, sizeof offset);
  return h ? h : 1;
}

uint64_t this_clock_id() {
  static const uint64_t id = read_clock_id();
  return id;
}

}  // namespace rateline
