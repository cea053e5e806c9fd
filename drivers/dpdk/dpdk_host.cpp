#include "dpdk/dpdk_host.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

namespace rateline::drivers {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

}  // namespace

void remove_dir_files(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d))
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) unlink((dir + "/" + e->d_name).c_str());
  closedir(d);
  rmdir(dir.c_str());
}

uint64_t free_hugepage_bytes() {
  uint64_t bytes = 0;
  DIR* d = opendir("/sys/kernel/mm/hugepages");
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    unsigned long kib = 0;
    if (std::sscanf(e->d_name, "hugepages-%lukB", &kib) != 1) continue;
    const std::string n = read_line(std::string("/sys/kernel/mm/hugepages/") + e->d_name + "/free_hugepages");
    if (!n.empty()) bytes += std::stoull(n) * kib * 1024;
  }
  closedir(d);
  return bytes;
}

bool hugetlbfs_mounted() {
  std::ifstream f("/proc/mounts");
  std::string dev, dir, type;
  std::string rest;
  while (f >> dev >> dir >> type && std::getline(f, rest))
    if (type == "hugetlbfs") return true;
  return false;
}

int cpu_numa_node(int cpu) {
  if (cpu < 0) return 0;
  DIR* d = opendir(("/sys/devices/system/cpu/cpu" + std::to_string(cpu)).c_str());
  if (!d) return 0;
  int node = 0;
  while (dirent* e = readdir(d))
    if (std::sscanf(e->d_name, "node%d", &node) == 1) break;
  closedir(d);
  return node;
}


void remove_stale_runtime_dirs(const std::string& tool) {
  const char* xdg = getenv("XDG_RUNTIME_DIR");
  const std::string base = geteuid() == 0 || !xdg ? "/var/run/dpdk" : std::string(xdg) + "/dpdk";
  const std::string prefix = "rateline-" + tool + "-";
  DIR* d = opendir(base.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.rfind(prefix, 0) != 0) continue;
    const std::string pid = n.substr(prefix.size());
    struct stat st;
    if (!pid.empty() && pid.find_first_not_of("0123456789") == std::string::npos &&
        stat(("/proc/" + pid).c_str(), &st) != 0)
      stale.push_back(base + "/" + n);
  }
  closedir(d);
  for (const std::string& s : stale) remove_dir_files(s);
}

}  // namespace rateline::drivers
