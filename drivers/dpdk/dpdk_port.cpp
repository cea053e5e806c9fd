#include "dpdk/dpdk_port.hpp"

#include <linux/capability.h>

#include <net/if.h>
#include <sched.h>
#include <unistd.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "dpdk/dpdk_host.hpp"
#include "net/iface.hpp"
#include "topo/topology.hpp"
#include "util/errors.hpp"
#include "util/privileges.hpp"

namespace rateline::drivers {
namespace {

constexpr uint16_t kTxDescriptors = 1024;      // the worker's direction
constexpr uint16_t kRxDescriptors = 2048;      // covers rx's 20 us idle sleep at 10G line rate
constexpr uint16_t kIdleDescriptors = 256;     // the direction the workers do not use
constexpr uint32_t kAfXdpFillFrames = 4096;   // net_af_xdp: frames its RX queue takes from the pool at setup
constexpr unsigned kPoolCache = 256;
constexpr uint64_t kEalOverheadBytes = 48ull << 20;  // EAL, PMD rings, memzones

bool has_arg(const std::vector<std::string>& args, const std::string& name) {
  for (const std::string& a : args)
    if (a == name || a.rfind(name + "=", 0) == 0) return true;
  return false;
}

uint32_t round_up_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

std::string mac_text(const net::MacAddress& m) { return net::mac_text(m); }

// Builds EAL's argv from the user's arguments and our defaults; says what it chose.
std::vector<std::string> eal_arguments(const DpdkPortConfig& cfg, int main_cpu, uint64_t pool_bytes, std::string& note) {
  const std::vector<std::string>& user = cfg.eal_args;
  std::vector<std::string> args{"rateline-" + cfg.tool};
  if (!has_arg(user, "--file-prefix") && !has_arg(user, "--in-memory"))
    args.push_back("--file-prefix=rateline-" + cfg.tool + "-" + std::to_string(getpid()));
  if (!has_arg(user, "-l") && !has_arg(user, "-c") && !has_arg(user, "--lcores")) {
    args.push_back("-l");
    args.push_back(std::to_string(main_cpu));
  }
  if (!has_arg(user, "--no-telemetry") && !has_arg(user, "--telemetry")) args.push_back("--no-telemetry");
  const uint64_t need = pool_bytes + kEalOverheadBytes;
  const uint64_t need_mib = (need >> 20) + 1;
  if (has_arg(user, "--no-huge") || has_arg(user, "--in-memory") || has_arg(user, "--huge-dir") ||
      has_arg(user, "--huge-unlink")) {
    note = "memory: as given in the EAL arguments";
  } else if (!hugetlbfs_mounted()) {
    args.insert(args.end(), {"--no-huge", "-m", std::to_string(need_mib)});
    note = "notice: no hugetlbfs mounted: running with --no-huge (" + std::to_string(need_mib) +
           " MiB of 4 KiB pages, slower TLB); for hugepages: echo 256 > /proc/sys/vm/nr_hugepages; "
           "mkdir -p /dev/hugepages; mount -t hugetlbfs nodev /dev/hugepages";
  } else if (const uint64_t free = free_hugepage_bytes(); free < need) {
    args.insert(args.end(), {"--no-huge", "-m", std::to_string(need_mib)});
    note = "notice: " + std::to_string(free >> 20) + " MiB of hugepages free, " + std::to_string(need_mib) +
           " MiB needed: running with --no-huge (4 KiB pages, slower TLB); for more: echo 256 > /proc/sys/vm/nr_hugepages";
  } else {
    args.push_back("--huge-unlink");  // no file left in hugetlbfs, whatever happens to us
    note = "memory: hugepages (" + std::to_string(free >> 20) + " MiB free, about " + std::to_string(need_mib) +
           " MiB used; files unlinked once mapped)";
  }
  args.insert(args.end(), user.begin(), user.end());
  return args;
}

void init_eal(std::vector<std::string> args, const std::string& note) {
  // EAL pins the calling thread to the main lcore; the caller places it
  // itself (topo), so its affinity is put back.
  cpu_set_t saved;
  CPU_ZERO(&saved);
  const bool have_saved = sched_getaffinity(0, sizeof saved, &saved) == 0;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The threads EAL starts (interrupt, multi-process, telemetry) are not
  // ours to reach later: capabilities are per thread, and a new thread copies
  // its creator's. So this thread narrows itself to DPDK's running set first
  // and no EAL thread ever holds more (util/privileges.hpp). Unprivileged, or
  // where the drop fails, EAL runs with what we have and init says why.
  const std::vector<int> running = dpdk_running_capabilities();
  keep_only_capabilities(running);
  const int rc = rte_eal_init(static_cast<int>(args.size()), argv.data());
  if (rc < 0) {
    std::string cmd;
    for (const std::string& a : args) cmd += (cmd.empty() ? "" : " ") + a;
    throw BackendUnavailable("Couldn't initialise DPDK (EAL: " + cmd + "): " + rte_strerror(rte_errno) + "; " + note +
                             " (the EAL's own messages above say more; without hugepages try --dpdk-args --no-huge)");
  }
  if (have_saved) sched_setaffinity(0, sizeof saved, &saved);
}

uint16_t find_port(const std::string& spec) {
  if (rte_eth_dev_count_avail() == 0)
    throw BackendUnavailable(
        "DPDK found no port: give one, e.g. --dpdk-args \"--no-pci --vdev=net_tap0,iface=rltap0\", or bind a NIC to "
        "vfio-pci (dpdk-devbind.py -b vfio-pci 0000:01:00.0) and pass -a 0000:01:00.0");
  if (spec.empty()) {
    uint16_t p;
    RTE_ETH_FOREACH_DEV(p) return p;
  }
  if (spec.find_first_not_of("0123456789") == std::string::npos) {
    const auto p = static_cast<uint16_t>(std::stoul(spec));
    if (!rte_eth_dev_is_valid_port(p))
      throw SetupError("--device " + spec + ": no DPDK port with that id (" + std::to_string(rte_eth_dev_count_avail()) +
                       " port(s))");
    return p;
  }
  uint16_t p = 0;
  if (rte_eth_dev_get_port_by_name(spec.c_str(), &p) != 0)
    throw SetupError("--device " + spec + ": no DPDK port of that name (a PCI address or vdev name, or a port id)");
  return p;
}

void check(int rc, const std::string& what) {
  if (rc < 0) throw SetupError("Couldn't " + what + ": " + rte_strerror(-rc));
}

// One EAL per process, shared by the ports of a port set (pktgen/rx --device
// a,b): the first port starts it with the run's arguments, the last one to
// close takes it down. Ports are opened and closed on the main thread only.
struct SharedEal {
  unsigned ports = 0;
  std::string runtime_dir, note;
};
SharedEal g_eal;

}  // namespace

std::vector<int> dpdk_running_capabilities() {
  // The PMDs' own control paths (tap netlink, link state ioctls) and EAL
  // teardown (hugepage and runtime files) run after setup.
  return {CAP_NET_RAW, CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_IPC_LOCK, CAP_DAC_OVERRIDE};
}

DpdkPort::DpdkPort(const DpdkPortConfig& cfg) {
  const auto queues = static_cast<uint16_t>(cfg.worker_cpus.size());
  // The main lcore: the reporter's CPU, else one no worker uses, else the first allowed.
  int main_cpu = cfg.main_cpu;
  const std::vector<int> allowed = topo::allowed_cpus();
  for (int c : allowed)
    if (main_cpu < 0 && std::find(cfg.worker_cpus.begin(), cfg.worker_cpus.end(), c) == cfg.worker_cpus.end()) main_cpu = c;
  if (main_cpu < 0) main_cpu = allowed.empty() ? 0 : allowed.front();

  // Pool sizes first: they decide between hugepages and --no-huge.
  const uint32_t rx_desc = cfg.transmit ? kIdleDescriptors : kRxDescriptors;
  const uint32_t tx_desc = cfg.transmit ? kTxDescriptors : kIdleDescriptors;
  // Each sending worker's own TX pool: what its TX ring can hold, its
  // lcore's mempool cache (up to 1.5x the cache size), and one batch in hand.
  tx_pool_mbufs_ = cfg.transmit ? round_up_pow2(tx_desc + kPoolCache * 3 / 2 + DpdkTxQueue::kMaxBatch) - 1 : 0;
  const uint32_t data_room = std::max<uint32_t>(RTE_MBUF_DEFAULT_BUF_SIZE, cfg.max_frame_bytes + RTE_PKTMBUF_HEADROOM);
  // net_af_xdp fills each RX queue's XDP fill ring from our pool at setup,
  // whatever nb_rx_desc says (libxdp's default ring, 2048 frames here, 4096 to be safe).
  bool af_xdp = false;
  for (const std::string& a : cfg.eal_args) af_xdp |= a.find("net_af_xdp") != std::string::npos;
  const uint32_t rx_reserved = af_xdp ? std::max<uint32_t>(rx_desc, kAfXdpFillFrames) : rx_desc;
  const uint32_t per_queue = rx_reserved + 2 * std::max<uint32_t>(cfg.batch, 64);  // the shared (RX) pool
  const uint64_t pool_bytes = (uint64_t{queues} * (per_queue + tx_pool_mbufs_) + (queues + 1ull) * kPoolCache) *
                              (data_room + 256);

  if (g_eal.ports == 0) {
    remove_stale_runtime_dirs(cfg.tool);
    init_eal(eal_arguments(cfg, main_cpu, pool_bytes, eal_note_), eal_note_);
    g_eal.runtime_dir = rte_eal_get_runtime_dir();
    eal_note_ += "; main lcore on cpu " + std::to_string(main_cpu) + ", workers register as lcores on their CPUs";
    g_eal.note = eal_note_;
  } else {
    // Another port of this process's set started it, with the same --dpdk-args; its memory grows as pools ask
    // (with --no-huge, -m was sized for the first port's pools: a pool beyond it fails with a clear error).
    eal_note_ = "EAL shared with this run's other port(s): " + g_eal.note;
  }
  ++g_eal.ports;
  eal_up_ = true;
  max_frame_bytes_ = cfg.max_frame_bytes;
  try {
    open_port(cfg, queues, rx_desc, tx_desc, data_room, per_queue);
  } catch (...) {
    close();  // the EAL is up: take it down, and its runtime directory, before the error leaves
    throw;
  }
}

void DpdkPort::open_port(const DpdkPortConfig& cfg, uint16_t queues, uint32_t rx_desc, uint32_t tx_desc,
                         uint32_t data_room, uint32_t per_queue) {

  port_ = find_port(cfg.port);
  port_found_ = true;
  rte_eth_dev_info info{};
  check(rte_eth_dev_info_get(port_, &info), "read DPDK port " + std::to_string(port_) + "'s device info");
  name_ = rte_dev_name(info.device);
  driver_ = info.driver_name ? info.driver_name : "?";
  const rte_bus* bus = rte_dev_bus(info.device);
  virtual_ = bus && std::strcmp(rte_bus_name(bus), "vdev") == 0;
  if (info.if_index) {
    char ifname[IF_NAMESIZE] = {};
    if (if_indextoname(info.if_index, ifname)) kernel_iface_ = ifname;
  }
  if (queues > info.max_tx_queues || queues > info.max_rx_queues)
    throw SetupError("DPDK port " + name_ + " (" + driver_ + ") has " + std::to_string(info.max_tx_queues) + " TX / " +
                     std::to_string(info.max_rx_queues) + " RX queues; " + std::to_string(queues) +
                     " workers need one each (use fewer --threads" +
                     (driver_ == "net_af_packet" ? ", or qpairs=N in the vdev arguments)" : ")"));
  rte_ether_addr mac{};
  check(rte_eth_macaddr_get(port_, &mac), "read the MAC of DPDK port " + name_);
  std::copy(mac.addr_bytes, mac.addr_bytes + 6, mac_.begin());
  uint16_t mtu = RTE_ETHER_MTU;
  rte_eth_dev_get_mtu(port_, &mtu);
  mtu_ = mtu;
  if (cfg.transmit && cfg.max_frame_bytes > mtu_ + RTE_ETHER_HDR_LEN)
    throw SetupError("frames of " + std::to_string(cfg.max_frame_bytes - RTE_ETHER_HDR_LEN) + " B IP exceed the MTU " +
                     std::to_string(mtu_) + " of DPDK port " + name_);

  if (cfg.peer_ip) {
    // Before the port starts (see DpdkPortConfig::peer_ip).
    if (driver_ == "net_tap" && !kernel_iface_.empty()) {
      peer_mac_ = net::interface_info(kernel_iface_).mac;
    } else if (!kernel_iface_.empty()) {
      peer_mac_ = net::neighbour_mac(*cfg.peer_ip, static_cast<int>(info.if_index));
      if (!peer_mac_)
        peer_why_ = "no neighbour entry for the destination on " + kernel_iface_ + " (the interface " + name_ +
                    " rides on): ping it once, or give --dst-mac";
    } else {
      peer_why_ = "DPDK port " + name_ + " (" + driver_ + ") has no kernel side to learn the destination MAC from: give --dst-mac";
    }
  }

  // Port: one queue pair per worker; RSS spreads flows over RX queues where the PMD can.
  rte_eth_conf conf{};
  conf.rxmode.mtu = mtu_;
  const uint64_t rss_hf = (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
  const bool rss = !cfg.transmit && queues > 1 && rss_hf;
  if (rss) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf = rss_hf;
  }
  if (cfg.transmit) conf.txmode.offloads = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
  check(rte_eth_dev_configure(port_, queues, queues, &conf), "configure DPDK port " + name_);
  uint16_t nb_rxd = static_cast<uint16_t>(rx_desc), nb_txd = static_cast<uint16_t>(tx_desc);
  check(rte_eth_dev_adjust_nb_rx_tx_desc(port_, &nb_rxd, &nb_txd), "fit the descriptor counts of DPDK port " + name_);

  // Mempools: one per NUMA socket with workers on it; each queue on its worker's socket.
  const int port_socket = rte_eth_dev_socket_id(port_);
  for (unsigned q = 0; q < queues; ++q) {
    int socket = cfg.worker_cpus[q] >= 0 ? cpu_numa_node(cfg.worker_cpus[q]) : port_socket;
    if (socket < 0) socket = 0;
    queue_socket_.push_back(socket);
    if (std::none_of(pools_.begin(), pools_.end(), [&](auto& p) { return p.first == socket; })) pools_.emplace_back(socket, nullptr);
  }
  std::string pool_text;
  for (auto& [socket, pool] : pools_) {
    const auto on_socket = static_cast<uint32_t>(std::count(queue_socket_.begin(), queue_socket_.end(), socket));
    // Mempools are fastest at 2^k - 1 elements (the ring holds 2^k).
    const uint32_t n = round_up_pow2(on_socket * per_queue + (queues + 1) * kPoolCache) - 1;
    // Names are the EAL's, process-wide: the port id keeps a port set's pools apart.
    const std::string pool_name = "rateline_p" + std::to_string(port_) + "s" + std::to_string(socket);
    pool = rte_pktmbuf_pool_create(pool_name.c_str(), n, kPoolCache, 0, static_cast<uint16_t>(data_room), socket);
    if (!pool)
      throw SetupError("Couldn't create the DPDK mempool of " + std::to_string(n) + " mbufs on socket " +
                       std::to_string(socket) + ": " + rte_strerror(rte_errno) + "; " + eal_note_);
    pool_text += (pool_text.empty() ? "" : ", ") + std::to_string(n) + " mbufs x " + std::to_string(data_room) +
                 " B on socket " + std::to_string(socket);
  }
  // TX pools: one per sending queue, so that every mbuf a queue sends comes
  // back to it with its frame intact (dpdk_queues.hpp).
  for (uint16_t q = 0; cfg.transmit && q < queues; ++q) {
    const std::string pool_name = "rateline_p" + std::to_string(port_) + "tx" + std::to_string(q);
    rte_mempool* pool = rte_pktmbuf_pool_create(pool_name.c_str(), tx_pool_mbufs_, kPoolCache, 0,
                                                static_cast<uint16_t>(data_room), queue_socket_[q]);
    if (!pool)
      throw SetupError("Couldn't create the DPDK TX mempool of " + std::to_string(tx_pool_mbufs_) + " mbufs for queue " +
                       std::to_string(q) + ": " + rte_strerror(rte_errno) + "; " + eal_note_);
    tx_pools_.push_back(pool);
  }
  if (cfg.transmit)
    pool_text += ", and " + std::to_string(queues) + " TX mempool(s) of " + std::to_string(tx_pool_mbufs_) + " mbufs";
  // Every TX mbuf has refcount 1 and comes from its queue's own pool: the
  // conditions of MBUF_FAST_FREE, which lets a PMD return it to the pool
  // without looking at it.
  const uint64_t fast_free = cfg.transmit ? info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE : 0;
  for (uint16_t q = 0; q < queues; ++q) {
    const int socket = queue_socket_[q];
    rte_mempool* pool = std::find_if(pools_.begin(), pools_.end(), [&](auto& p) { return p.first == socket; })->second;
    rte_eth_txconf txconf = info.default_txconf;
    txconf.offloads = fast_free;
    check(rte_eth_tx_queue_setup(port_, q, nb_txd, static_cast<unsigned>(socket), &txconf),
          "set up TX queue " + std::to_string(q) + " of DPDK port " + name_);
    check(rte_eth_rx_queue_setup(port_, q, nb_rxd, static_cast<unsigned>(socket), nullptr, pool),
          "set up RX queue " + std::to_string(q) + " of DPDK port " + name_);
  }
  check(rte_eth_dev_start(port_), "start DPDK port " + name_);
  started_ = true;
  if (!cfg.transmit) rte_eth_promiscuous_enable(port_);  // count every frame that arrives; PMDs without it say ENOTSUP
  if (!cfg.transmit && driver_ == "net_af_packet" && info.if_index) {
    socket_drops_ = std::make_unique<PmdSocketDrops>(static_cast<int>(info.if_index));
    if (!socket_drops_->sockets()) socket_drops_.reset();  // none found: say nothing rather than a false 0
  }

  // Link: up to 3 s for it to come up, then the PMD's speed.
  rte_eth_link link{};
  for (int i = 0; i < 30; ++i) {
    if (rte_eth_link_get_nowait(port_, &link) == 0 && link.link_status == RTE_ETH_LINK_UP) break;
    usleep(100'000);
  }
  if (link.link_status == RTE_ETH_LINK_UP && link.link_speed != RTE_ETH_SPEED_NUM_NONE &&
      link.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN)
    link_speed_mbps_ = link.link_speed;

  summary_ = "DPDK port " + std::to_string(port_) + " " + name_ + " (" + driver_ + (virtual_ ? ", virtual" : "") + ") " +
             mac_text(mac_) + (kernel_iface_.empty() ? "" : " on kernel interface " + kernel_iface_) + ", link " +
             (link.link_status == RTE_ETH_LINK_UP ? "up" : "down") + ", " + std::to_string(queues) + " RX + " +
             std::to_string(queues) + " TX queue(s) x " + std::to_string(nb_rxd) + "/" + std::to_string(nb_txd) +
             " descriptors, RSS " +
             (cfg.transmit ? "unused (sending)" : rss ? "on" : queues > 1 ? "not offered by the PMD" : "off (one queue)") +
             ", mempool " + pool_text;
}

DpdkPort::~DpdkPort() { close(); }

void DpdkPort::close() {
  if (started_) rte_eth_dev_stop(port_);
  if (port_found_) rte_eth_dev_close(port_);
  for (auto& [socket, pool] : pools_) rte_mempool_free(pool);
  for (rte_mempool* pool : tx_pools_) rte_mempool_free(pool);
  if (!eal_up_) return;
  eal_up_ = false;
  if (--g_eal.ports) return;  // a port of the set still uses it
  rte_eal_cleanup();
  // EAL leaves its runtime directory (config, fbarrays) behind: it was ours alone.
  if (g_eal.runtime_dir.find("/rateline-") != std::string::npos) remove_dir_files(g_eal.runtime_dir);
  g_eal.runtime_dir.clear();
}

report::LinkInfo DpdkPort::link() const {
  report::LinkInfo l;
  l.device = name_;
  if (link_speed_mbps_) l.speed_mbps = static_cast<double>(link_speed_mbps_);
  l.nominal = virtual_;
  return l;
}

DpdkTxConfig DpdkPort::tx_config(unsigned worker) const {
  DpdkTxConfig c;
  c.port = port_;
  c.queue = static_cast<uint16_t>(worker);
  c.pool = tx_pools_.at(worker);
  c.max_frame_bytes = max_frame_bytes_;
  return c;
}

DpdkRxConfig DpdkPort::rx_config(unsigned worker, uint32_t batch) const {
  DpdkRxConfig c;
  c.port = port_;
  c.queue = static_cast<uint16_t>(worker);
  c.batch = batch;
  c.report_port_drops = worker == 0;
  if (worker == 0) c.socket_drops = socket_drops_.get();
  return c;
}

report::PortCounters DpdkPort::counters() const {
  report::PortCounters c;
  rte_eth_stats st{};
  if (rte_eth_stats_get(port_, &st) == 0) {
    c.ipackets = st.ipackets;
    c.opackets = st.opackets;
    c.imissed = st.imissed;
    c.ierrors = st.ierrors;
    c.oerrors = st.oerrors;
    c.rx_nombuf = st.rx_nombuf;
  }
  if (socket_drops_) c.pmd_socket_drops = socket_drops_->total();
  const int n = rte_eth_xstats_get_names(port_, nullptr, 0);
  if (n > 0) {
    std::vector<rte_eth_xstat_name> names(static_cast<size_t>(n));
    std::vector<rte_eth_xstat> values(static_cast<size_t>(n));
    if (rte_eth_xstats_get_names(port_, names.data(), static_cast<unsigned>(n)) == n &&
        rte_eth_xstats_get(port_, values.data(), static_cast<unsigned>(n)) == n) {
      for (const rte_eth_xstat& v : values)
        if (v.value && v.id < names.size()) c.xstats.emplace_back(names[v.id].name, v.value);
    }
  }
  return c;
}

}  // namespace rateline::drivers
