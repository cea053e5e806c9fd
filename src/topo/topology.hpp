// CPU topology (hwloc) and thread placement.
//
// Placement policy for --cores auto: one worker per physical core before
// any second hardware thread of a core; the first core is left to the main
// (reporting) thread whenever more than one core is allowed. Given the NIC's
// NUMA node, auto takes that node's cores first (packets are DMAed to its
// memory; DPDK's mempools follow the workers' node) and puts the main thread
// on another node when there is one. Without
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

// `spec`: "" (no pinning), "auto", or a list "1,3-4". `nic_numa_node`: the
// NUMA node of the device the workers serve (-1: unknown, or none).
Placement place_workers(unsigned workers, const std::string& spec, int nic_numa_node = -1);

// --cores auto on a topology read from hwloc XML with these CPUs allowed:
// what place_workers does on such a host (unit tests of hosts we lack).
Placement place_workers_on(const std::string& hwloc_xml, const std::vector<int>& allowed, unsigned workers,
                           int nic_numa_node);

// The NUMA node of a network interface (sysfs device/numa_node) or of a PCI
// address (0000:03:00.0); -1 when the kernel does not say (virtual devices,
// one-node hosts report -1 or 0).
int device_numa_node(const std::string& device);
// The same for a run's device: the interface, else the first PCI address
// DPDK's EAL arguments allow (-a/--allow/-w ADDR[,options]); where sysfs says
// nothing, the node hwloc's PCI objects put the device on. Loads hwloc's I/O
// topology then (milliseconds): ask it for --cores auto only.
int device_numa_node(const std::string& device, const std::vector<std::string>& eal_args);
// hwloc's answer alone, on a topology read from hwloc XML (unit tests of
// hosts we lack): an interface name or a PCI address; -1 when hwloc has the
// device under no single node, or not at all.
int device_numa_node_on(const std::string& hwloc_xml, const std::string& device);

// Pins the calling thread to `cpu` (no-op for -1). Returns an error text or "".
std::string pin_current_thread(int cpu);

// CPUs this process may run on (affinity mask), in order.
std::vector<int> allowed_cpus();

}  // namespace rateline::topo
