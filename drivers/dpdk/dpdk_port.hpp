// DPDK backend, slow path: the EAL, one port, its queues and mempools, set
// up once by pktgen or rx before the workers start, torn down after they
// joined. A port set (--device a,b) opens one DpdkPort per port; they share
// the process's one EAL, started by the first and ended by the last. Straight-line setup in the manner of DPDK's examples/skeleton.
//
// EAL arguments: the user's (--dpdk-args "...", and everything after "--"),
// plus what we add unless the user gave it:
//   --file-prefix=rateline-<tool>-<pid>  pktgen and rx may run at once
//   -l <cpu>                             the main lcore: the reporter's CPU
//   --huge-unlink                        hugetlbfs files unlinked as soon as
//                                        mapped: nothing left in /dev/hugepages,
//                                        even after SIGKILL
//   or --no-huge -m <MiB>                when no hugetlbfs is mounted or too few
//                                        pages are free (a notice says so)
//   --no-telemetry
// The runtime directory (/var/run/dpdk/<prefix>) is removed at exit; ones
// left by killed runs of ours (dead pid) are removed at start.
//
// Ports: PCI devices bound to vfio-pci/uio, or vdevs (--vdev net_tap0,iface=X;
// net_af_packet0,iface=X; net_af_xdp0,iface=X; net_null0; net_ring0). --device
// picks one by port id or device name; default: the first port.
// One TX and one RX queue per worker; RSS over the RX queues where the PMD
// has it. Mempools: one per NUMA socket that has workers, for the RX queues;
// and when sending, one per TX queue on its worker's socket.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dpdk/dpdk_queues.hpp"
#include "dpdk/pmd_socket_drops.hpp"
#include "net/frame.hpp"
#include "report/link.hpp"
#include "report/port_counters.hpp"

namespace rateline::drivers {

struct DpdkPortConfig {
  std::string tool;                    // "pktgen" or "rx": names the file prefix
  std::vector<std::string> eal_args;   // the user's EAL arguments
  std::string port;                    // port id or device name; "" = the first port
  int main_cpu = -1;                   // the main lcore's CPU; -1 = first allowed CPU no worker uses
  std::vector<int> worker_cpus;        // one per worker (-1 = unpinned): queue count and NUMA sockets
  bool transmit = true;                // workers send (pktgen) or receive (rx): sizes rings and pools
  uint32_t max_frame_bytes = 1514;     // pktgen: largest frame it writes (no FCS)
  uint32_t batch = 32;
  // pktgen: the destination, whose MAC peer_mac() learns before the port
  // starts (starting a port replays its MAC, and the kernel then flushes the
  // neighbour table of the interface an af_packet/af_xdp port rides on).
  std::optional<net::IpAddress> peer_ip;
};

class DpdkPort {
 public:
  explicit DpdkPort(const DpdkPortConfig& cfg);  // throws SetupError / BackendUnavailable
  ~DpdkPort();
  DpdkPort(const DpdkPort&) = delete;
  DpdkPort& operator=(const DpdkPort&) = delete;

  uint16_t id() const { return port_; }
  const std::string& name() const { return name_; }      // PCI address or vdev name
  const std::string& driver() const { return driver_; }  // net_tap, net_ixgbe...
  report::PortIdentity identity() const { return {name_, port_, driver_}; }
  net::MacAddress mac() const { return mac_; }
  uint32_t mtu() const { return mtu_; }
  // The kernel interface the PMD rides on (net_tap, net_af_packet, net_af_xdp), "" if none.
  const std::string& kernel_iface() const { return kernel_iface_; }
  // Link speed from the PMD; nominal for virtual devices (vdevs: net_null and net_tap claim 10G).
  report::LinkInfo link() const;
  // Where frames to DpdkPortConfig::peer_ip go at L2 when the user gave no
  // --dst-mac: the tap's kernel side (net_tap), or the kernel's neighbour
  // entry on the interface the PMD rides on. Empty with `why` set otherwise.
  std::optional<net::MacAddress> peer_mac(std::string& why) const {
    why = peer_why_;
    return peer_mac_;
  }

  DpdkTxConfig tx_config(unsigned worker) const;
  DpdkRxConfig rx_config(unsigned worker, uint32_t batch) const;
  report::PortCounters counters() const;

  // For the start-up lines: "port 0 net_tap0 (net_tap) 26:cb:..., 1 RX + 1 TX queue(s) x 1024/1024
  // descriptors, RSS off, mempool 8191 mbufs x 2176 B on socket 0"; and the memory/EAL line.
  const std::string& summary() const { return summary_; }
  const std::string& eal_note() const { return eal_note_; }

 private:
  void open_port(const DpdkPortConfig& cfg, uint16_t queues, uint32_t rx_desc, uint32_t tx_desc, uint32_t data_room,
                 uint32_t per_queue);
  void close();

  uint16_t port_ = 0;
  bool port_found_ = false;
  uint32_t max_frame_bytes_ = 0;
  std::string name_, driver_, kernel_iface_;
  net::MacAddress mac_{};
  uint32_t mtu_ = 1500;
  uint32_t link_speed_mbps_ = 0;  // 0 = unknown
  bool virtual_ = false;
  bool started_ = false;
  std::vector<int> queue_socket_;                      // NUMA socket of each worker's queue
  std::vector<std::pair<int, rte_mempool*>> pools_;    // one per socket: RX queues
  std::vector<rte_mempool*> tx_pools_;                 // pktgen: one per TX queue (dpdk_queues.hpp)
  uint32_t tx_pool_mbufs_ = 0;
  bool eal_up_ = false;  // this port counts as a user of the process's EAL
  std::string summary_, eal_note_;
  std::optional<net::MacAddress> peer_mac_;
  std::string peer_why_ = "no destination given";
  std::unique_ptr<PmdSocketDrops> socket_drops_;  // rx on net_af_packet (pmd_socket_drops.hpp)
};

// The capabilities a DPDK run keeps after setup (the EAL's threads start with these).
std::vector<int> dpdk_running_capabilities();

}  // namespace rateline::drivers
