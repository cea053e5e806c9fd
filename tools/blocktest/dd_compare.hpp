// --compare-dd: GNU dd at the same block size, count, flags and CPU, on a
// file blocktest created (dd only ever opens that file, with conv=notrunc).
#pragma once

#include <cstdint>
#include <string>

namespace rateline::blocktest {

struct DdRun {
  bool ok = false;
  uint64_t bytes = 0;
  double seconds = 0;     // dd's own figure (excludes its start-up, includes conv=fsync)
  std::string error;
  double mib_s() const { return seconds > 0 ? static_cast<double>(bytes) / (1024.0 * 1024.0) / seconds : 0.0; }
};

DdRun dd_write(const std::string& path, uint64_t bs, uint64_t count, bool direct, bool fsync, int cpu);
DdRun dd_read(const std::string& path, uint64_t bs, uint64_t count, bool direct, int cpu);

// Parses dd's closing "N bytes (...) copied, T s, R MB/s" line.
bool parse_dd_output(const std::string& out, uint64_t& bytes, double& seconds);

}  // namespace rateline::blocktest
