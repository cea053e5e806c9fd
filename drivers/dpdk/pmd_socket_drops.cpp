#include "dpdk/pmd_socket_drops.hpp"

#include <dirent.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include <cstdlib>

namespace rateline::drivers {

namespace {

bool bound_packet_socket(int fd, int ifindex) {
  int domain = 0;
  socklen_t len = sizeof domain;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_PACKET) return false;
  sockaddr_ll addr{};
  len = sizeof addr;
  return getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0 && addr.sll_ifindex == ifindex;
}

uint64_t read_and_reset_drops(int fd) {
  tpacket_stats_v3 st{};  // the kernel copies the part its ring version has; tp_drops is in every version
  socklen_t len = sizeof st;
  return getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0 ? st.tp_drops : 0;
}

}  // namespace

PmdSocketDrops::PmdSocketDrops(int ifindex) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  const int own = dirfd(dir);
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end || fd == own) continue;
    if (bound_packet_socket(static_cast<int>(fd), ifindex)) fds_.push_back(static_cast<int>(fd));
  }
  closedir(dir);
  for (int fd : fds_) read_and_reset_drops(fd);
}

uint64_t PmdSocketDrops::total() {
  std::lock_guard lock(mutex_);
  for (int fd : fds_) total_ += read_and_reset_drops(fd);
  return total_;
}

}  // namespace rateline::drivers
