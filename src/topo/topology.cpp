#include "topo/topology.hpp"

#include <hwloc.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "util/errors.hpp"

namespace rateline::topo {
namespace {

struct TopologyHandle {
  hwloc_topology_t t = nullptr;
  // This host's topology, or one read from hwloc XML; with `io`, its PCI
  // devices and network interfaces too (hwloc drops I/O objects by default).
  explicit TopologyHandle(const std::string* xml = nullptr, bool io = false) {
    if (hwloc_topology_init(&t) != 0) throw SetupError("Couldn't read the CPU topology (hwloc)");
    if (io) hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (xml && hwloc_topology_set_xmlbuffer(t, xml->data(), static_cast<int>(xml->size()) + 1) != 0)
      throw SetupError("Couldn't parse the hwloc XML topology");
    if (hwloc_topology_load(t) != 0) throw SetupError("Couldn't read the CPU topology (hwloc)");
  }
  ~TopologyHandle() { if (t) hwloc_topology_destroy(t); }
  TopologyHandle(const TopologyHandle&) = delete;
  TopologyHandle& operator=(const TopologyHandle&) = delete;
};

// Allowed PUs one core at a time: the first PU of each core, then the second,
// and so on; only PUs in `within` (null: all) or, with `outside`, not in it.
std::vector<int> core_first_order(hwloc_topology_t t, const std::vector<int>& allowed, hwloc_const_bitmap_t within,
                                  bool outside) {
  std::vector<int> order;
  const int cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  for (int pass = 0; pass < 8; ++pass) {
    for (int ci = 0; ci < cores; ++ci) {
      hwloc_obj_t core = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, static_cast<unsigned>(ci));
      int idx = 0;
      for (int pu = static_cast<int>(hwloc_bitmap_first(core->cpuset)); pu >= 0;
           pu = hwloc_bitmap_next(core->cpuset, static_cast<unsigned>(pu)), ++idx) {
        if (idx != pass || std::find(allowed.begin(), allowed.end(), pu) == allowed.end()) continue;
        if (within && (hwloc_bitmap_isset(within, static_cast<unsigned>(pu)) != 0) == outside) continue;
        order.push_back(pu);
      }
    }
  }
  return order;
}

// "8-15" or "0,2,4".
std::string cpu_text(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || !text) return "?";
  std::string out(text);
  std::free(text);
  return out;
}

// Worker candidates for --cores auto, best first, and the main thread's CPU.
struct AutoOrder {
  std::vector<int> workers;
  int main_cpu = -1;
  std::string note;  // about the NIC's node, "" without one
  size_t near = 0;   // how many of `workers` are on the NIC's node
};

AutoOrder auto_order(hwloc_topology_t t, const std::vector<int>& allowed, int nic_numa_node) {
  AutoOrder a;
  hwloc_obj_t node = nic_numa_node >= 0 ? hwloc_get_numanode_obj_by_os_index(t, static_cast<unsigned>(nic_numa_node)) : nullptr;
  if (!node || hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE) < 2) {
    a.workers = core_first_order(t, allowed, nullptr, false);
    if (a.workers.size() > 1) {
      a.main_cpu = a.workers.front();  // the first core stays with the reporter
      a.workers.erase(a.workers.begin());
    }
    if (nic_numa_node >= 0 && !node) a.note = "the device's NUMA node " + std::to_string(nic_numa_node) + " is not in this topology";
    return a;
  }
  std::vector<int> near = core_first_order(t, allowed, node->cpuset, false);
  std::vector<int> far = core_first_order(t, allowed, node->cpuset, true);
  a.note = "the device is on NUMA node " + std::to_string(nic_numa_node) + " (cpus " + cpu_text(node->cpuset) + ")";
  // The reporter goes off the device's node when it can, else to its first core.
  if (!far.empty()) {
    a.main_cpu = far.front();
    far.erase(far.begin());
  } else if (near.size() > 1) {
    a.main_cpu = near.front();
    near.erase(near.begin());
  }
  a.near = near.size();
  a.workers = near;
  a.workers.insert(a.workers.end(), far.begin(), far.end());
  return a;
}

Placement place(unsigned workers, const std::vector<int>& order, int main_cpu, const std::string& note, size_t near) {
  if (order.empty()) throw std::invalid_argument("no CPU available for workers");
  Placement pl;
  pl.main_cpu = main_cpu;
  pl.worker_cpus.assign(workers, -1);
  for (unsigned w = 0; w < workers; ++w) {
    pl.worker_cpus[w] = order[w % order.size()];
    if (w) pl.text += ", ";
    pl.text += "worker " + std::to_string(w) + " -> cpu " + std::to_string(pl.worker_cpus[w]);
  }
  if (workers > order.size()) pl.text += " (more workers than CPUs: shared)";
  if (pl.main_cpu >= 0) pl.text += ", main -> cpu " + std::to_string(pl.main_cpu);
  if (!note.empty()) {
    pl.text += "; " + note;
    const size_t off = workers > near ? std::min<size_t>(workers, order.size()) - std::min(near, order.size()) : 0;
    if (near && off) pl.text += ": " + std::to_string(off) + " worker(s) off it (its cores are taken)";
    else if (near) pl.text += ": workers on its cores";
  }
  return pl;
}

bool is_pci_address(const std::string& device) {
  return device.size() == 12 && device[4] == ':' && device[7] == ':' && device[10] == '.';
}

// The node hwloc places a PCI function or network interface under: the one
// node of its nearest non-I/O ancestor (a package, a group). -1 when that
// ancestor spans several nodes (the machine: locality unknown) or hwloc does
// not list the device. hwloc reads the PCI function's local_cpus, which some
// firmware fills where it leaves numa_node at -1.
int io_numa_node(hwloc_topology_t t, const std::string& device) {
  hwloc_obj_t dev = nullptr;
  if (is_pci_address(device)) {
    dev = hwloc_get_pcidev_by_busidstring(t, device.c_str());
  } else {
    for (hwloc_obj_t os = hwloc_get_next_osdev(t, nullptr); os; os = hwloc_get_next_osdev(t, os))
      if (os->name && device == os->name && os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) {
        dev = os;
        break;
      }
  }
  if (!dev) return -1;
  const hwloc_obj_t home = hwloc_get_non_io_ancestor_obj(t, dev);
  if (!home || !home->nodeset || hwloc_bitmap_weight(home->nodeset) != 1) return -1;
  return hwloc_bitmap_first(home->nodeset);
}

// The run's device, then each PCI address DPDK's EAL arguments allow (-a/--allow/-w ADDR[,options]).
std::vector<std::string> device_candidates(const std::string& device, const std::vector<std::string>& eal_args) {
  std::vector<std::string> names;
  if (!device.empty()) names.push_back(device);
  for (size_t i = 0; i < eal_args.size(); ++i) {
    std::string a = eal_args[i];
    for (const char* flag : {"--allow=", "-a", "-w"})
      if (a.rfind(flag, 0) == 0 && a.size() > std::strlen(flag)) a = a.substr(std::strlen(flag));
    if ((a == "-a" || a == "-w" || a == "--allow") && i + 1 < eal_args.size()) a = eal_args[++i];
    a = a.substr(0, a.find(','));
    if (a.size() == 7 && a[2] == ':' && a[5] == '.') a = "0000:" + a;  // EAL's short form, domain 0
    if (is_pci_address(a)) names.push_back(a);
  }
  return names;
}

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

Placement place_workers(unsigned workers, const std::string& spec, int nic_numa_node) {
  if (spec.empty()) {
    Placement pl;
    pl.worker_cpus.assign(workers, -1);
    pl.text = "not pinned (use --cores auto or --cores LIST to pin)";
    return pl;
  }
  const std::vector<int> allowed = allowed_cpus();
  if (spec == "auto") {
    TopologyHandle topo;
    const AutoOrder a = auto_order(topo.t, allowed, nic_numa_node);
    return place(workers, a.workers, a.main_cpu, a.note, a.near);
  }
  const std::vector<int> order = parse_cpu_list(spec);
  for (int c : order)
    if (std::find(allowed.begin(), allowed.end(), c) == allowed.end())
      throw std::invalid_argument("CPU " + std::to_string(c) + " is not available to this process");
  return place(workers, order, -1, "", 0);
}

Placement place_workers_on(const std::string& hwloc_xml, const std::vector<int>& allowed, unsigned workers,
                           int nic_numa_node) {
  TopologyHandle topo(&hwloc_xml);
  const AutoOrder a = auto_order(topo.t, allowed, nic_numa_node);
  return place(workers, a.workers, a.main_cpu, a.note, a.near);
}

int device_numa_node(const std::string& device) {
  if (device.empty() || device.find('/') != std::string::npos || device.find("..") != std::string::npos) return -1;
  // A PCI address (domain:bus:device.function) names the device directly.
  const bool pci = is_pci_address(device);
  // A virtio NIC's device is the virtio one; its PCI function is the parent.
  for (const std::string& path : {pci ? "/sys/bus/pci/devices/" + device + "/numa_node" : "/sys/class/net/" + device + "/device/numa_node",
                                 "/sys/class/net/" + device + "/device/../numa_node"}) {
    std::ifstream f(path);
    int node = -1;
    if (f >> node) return node;
  }
  return -1;
}

int device_numa_node(const std::string& device, const std::vector<std::string>& eal_args) {
  const std::vector<std::string> names = device_candidates(device, eal_args);
  for (const std::string& name : names)
    if (const int node = device_numa_node(name); node >= 0) return node;
  if (names.empty()) return -1;
  // sysfs said nothing: hwloc's PCI objects, which also weigh the device's local CPUs.
  try {
    TopologyHandle topo(nullptr, true);
    for (const std::string& name : names)
      if (const int node = io_numa_node(topo.t, name); node >= 0) return node;
  } catch (const SetupError&) {
    // No topology: the node stays unknown, as it would without hwloc.
  }
  return -1;
}

int device_numa_node_on(const std::string& hwloc_xml, const std::string& device) {
  TopologyHandle topo(&hwloc_xml, true);
  return io_numa_node(topo.t, device);
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
