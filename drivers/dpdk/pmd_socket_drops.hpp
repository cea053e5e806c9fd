// The drops of a PMD that receives through kernel AF_PACKET sockets
// (net_af_packet): frames the kernel had for the PMD's ring while the ring was
// full. DPDK 22.11's net_af_packet does not put them in imissed (rte_eth_stats
// says 0 while the interface counted every frame), so rx would miss them as
// "unattributed". The kernel keeps them per socket (PACKET_STATISTICS
// tp_drops); this reads them from the PMD's own sockets, found among this
// process's file descriptors by family and bound interface.
//
// PACKET_STATISTICS is read-and-reset. A PMD that reads it itself (later DPDK
// releases report it as imissed) and this reader each get the drops since
// the other's last read, so imissed + these drops counts each drop once.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace rateline::drivers {

class PmdSocketDrops {
 public:
  // The AF_PACKET sockets of this process bound to `ifindex`; their counters
  // are read once here, so what follows counts from now.
  explicit PmdSocketDrops(int ifindex);
  size_t sockets() const { return fds_.size(); }
  // Drops since construction, summed over the sockets. Any thread.
  uint64_t total();

 private:
  std::vector<int> fds_;  // the PMD's: never closed here
  std::mutex mutex_;
  uint64_t total_ = 0;
};

}  // namespace rateline::drivers
