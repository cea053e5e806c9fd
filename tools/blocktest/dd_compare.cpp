#include "dd_compare.hpp"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "spawn.hpp"

namespace rateline::blocktest {

bool parse_dd_output(const std::string& out, uint64_t& bytes, double& seconds) {
  const auto copied = out.rfind(" copied, ");
  if (copied == std::string::npos) return false;
  const auto line = out.rfind('\n', copied);
  const std::string head = out.substr(line == std::string::npos ? 0 : line + 1);
  unsigned long long b = 0;
  if (std::sscanf(head.c_str(), "%llu bytes", &b) != 1) return false;
  char* end = nullptr;
  seconds = std::strtod(out.c_str() + copied + 9, &end);
  if (end == out.c_str() + copied + 9) return false;
  bytes = b;
  return true;
}

namespace {
DdRun run(const std::vector<std::string>& argv, int cpu) {
  DdRun r;
  const SpawnResult s = spawn_and_wait(argv, cpu);
  if (!parse_dd_output(s.output, r.bytes, r.seconds) || !s.ok()) {
    std::string msg = s.output;
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    const auto nl = msg.find('\n');
    r.error = s.started ? (nl == std::string::npos ? msg : msg.substr(0, nl)) : "dd not found (install coreutils)";
    if (r.error.empty()) r.error = "dd exited with " + std::to_string(s.exit_code);
    return r;
  }
  r.ok = true;
  return r;
}
}  // namespace

DdRun dd_write(const std::string& path, uint64_t bs, uint64_t count, bool direct, bool fsync, int cpu) {
  std::vector<std::string> a = {"dd", "if=/dev/zero", "of=" + path, "bs=" + std::to_string(bs), "count=" + std::to_string(count),
                                std::string("conv=notrunc") + (fsync ? ",fsync" : "")};
  if (direct) a.push_back("oflag=direct");
  return run(a, cpu);
}

DdRun dd_read(const std::string& path, uint64_t bs, uint64_t count, bool direct, int cpu) {
  std::vector<std::string> a = {"dd", "if=" + path, "of=/dev/null", "bs=" + std::to_string(bs), "count=" + std::to_string(count)};
  if (direct) a.push_back("iflag=direct");
  return run(a, cpu);
}

}  // namespace rateline::blocktest
