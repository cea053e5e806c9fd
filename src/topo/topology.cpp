#include "topo/topology.hpp"

#include <hwloc.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "util/errors.hpp"

namespace rateline::topo {
namespace {

struct TopologyHandle {
  hwloc_topology_t t = nullptr;
  TopologyHandle() {
    if (hwloc_topology_init(&t) != 0 || hwloc_topology_load(t) != 0) throw SetupError("Couldn't read the CPU topology (hwloc)");
  }
  ~TopologyHandle() { if (t) hwloc_topology_destroy(t); }
};

std::vector<int> parse_cpu_list(const std::string& spec) {
  std::vector<int> cpus;
  size_t pos = 0;
  while (pos <= spec.size()) {
    const size_t comma = spec.find(',', pos);
    const std::string item = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const size_t dash = item.find('-');
    auto num = [&](const std::string& s) {
      int v = -1;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || p != s.data() + s.size() || v < 0 || v > 4095)
        throw std::invalid_argument("'" + spec + "' is not a CPU list (e.g. 1 or 1,3-4 or auto)");
      return v;
    };
    if (dash == std::string::npos) cpus.push_back(num(item));
    else {
      const int a = num(item.substr(0, dash)), b = num(item.substr(dash + 1));
      if (b < a) throw std::invalid_argument("CPU range '" + item + "' ends before it starts");
      for (int c = a; c <= b; ++c) cpus.push_back(c);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return cpus;
}

}  // namespace

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

Placement place_workers(unsigned workers, const std::string& spec) {
  Placement pl;
  pl.worker_cpus.assign(workers, -1);
  if (spec.empty()) {
    pl.text = "not pinned (use --cores auto or --cores LIST to pin)";
    return pl;
  }
  const std::vector<int> allowed = allowed_cpus();
  std::vector<int> order;  // worker candidates in preference order
  if (spec == "auto") {
    TopologyHandle topo;
    // Pass 0 takes the first PU of each core, pass 1 the second, and so on.
    const int cores = hwloc_get_nbobjs_by_type(topo.t, HWLOC_OBJ_CORE);
    for (int pass = 0; pass < 8; ++pass) {
      for (int ci = 0; ci < cores; ++ci) {
        hwloc_obj_t core = hwloc_get_obj_by_type(topo.t, HWLOC_OBJ_CORE, static_cast<unsigned>(ci));
        int idx = 0;
        for (int pu = static_cast<int>(hwloc_bitmap_first(core->cpuset)); pu >= 0;
             pu = hwloc_bitmap_next(core->cpuset, static_cast<unsigned>(pu)), ++idx) {
          if (idx == pass && std::find(allowed.begin(), allowed.end(), pu) != allowed.end()) order.push_back(pu);
        }
      }
    }
    if (order.size() > 1) {
      pl.main_cpu = order.front();  // the first core stays with the reporter
      order.erase(order.begin());
    }
  } else {
    order = parse_cpu_list(spec);
    for (int c : order)
      if (std::find(allowed.begin(), allowed.end(), c) == allowed.end())
        throw std::invalid_argument("CPU " + std::to_string(c) + " is not available to this process");
  }
  if (order.empty()) throw std::invalid_argument("no CPU available for workers");
  pl.text.clear();
  for (unsigned w = 0; w < workers; ++w) {
    pl.worker_cpus[w] = order[w % order.size()];
    if (w) pl.text += ", ";
    pl.text += "worker " + std::to_string(w) + " -> cpu " + std::to_string(pl.worker_cpus[w]);
  }
  if (workers > order.size()) pl.text += " (more workers than CPUs: shared)";
  if (pl.main_cpu >= 0) pl.text += ", main -> cpu " + std::to_string(pl.main_cpu);
  return pl;
}

std::string pin_current_thread(int cpu) {
  if (cpu < 0) return {};
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    return "Couldn't pin thread to cpu " + std::to_string(cpu) + ": " + errno_text(errno);
  return {};
}

}  // namespace rateline::topo
