// What the host offers DPDK's EAL, read before it starts: free hugepage
// memory and a hugetlbfs to map it from, the NUMA node of a CPU, and the
// runtime directories our killed runs left behind.
#pragma once

#include <cstdint>
#include <string>

namespace rateline::drivers {

// Free hugepage memory on the system, in bytes (every page size).
uint64_t free_hugepage_bytes();
bool hugetlbfs_mounted();
// The NUMA node of `cpu` (sysfs); 0 when it does not say, or for -1.
int cpu_numa_node(int cpu);
// Removes a directory and the files in it (an EAL runtime directory).
void remove_dir_files(const std::string& dir);
// Removes the EAL runtime directories (rateline-<tool>-<pid>) whose run is gone.
void remove_stale_runtime_dirs(const std::string& tool);

}  // namespace rateline::drivers
