// CPU topology (hwloc) and thread placement.
//
// Placement policy for --cores auto: one worker per physical core before
// any second hardware thread of a core; the first core is left to the main
// (reporting) thread whenever more than one core is allowed. Without
// --cores, threads are not pinned and the report says so: two programs on
// one small host (pktgen and rx) would otherwise pick the same cores.
#pragma once

#include <string>
#include <vector>

namespace rateline::topo {

struct Placement {
  std::vector<int> worker_cpus;  // -1 = not pinned
  int main_cpu = -1;
  std::string text;              // "worker 0 -> cpu 1 (core 1), main -> cpu 0"
};

// `spec`: "" (no pinning), "auto", or a list "1,3-4".
Placement place_workers(unsigned workers, const std::string& spec);

// Pins the calling thread to `cpu` (no-op for -1). Returns an error text or "".
std::string pin_current_thread(int cpu);

// CPUs this process may run on (affinity mask), in order.
std::vector<int> allowed_cpus();

}  // namespace rateline::topo
