// A userspace-driven port's own counters (DPDK's rte_eth_stats and xstats):
// what the NIC says it took and refused, printed after rx's and pktgen's
// tables and carried in their JSON, so every count can be checked against it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace rateline::report {

struct PortCounters {
  uint64_t ipackets = 0, opackets = 0, imissed = 0, ierrors = 0, oerrors = 0, rx_nombuf = 0;
  // net_af_packet: frames its kernel sockets' rings had no room for (not in imissed; dpdk/pmd_socket_drops.hpp).
  std::optional<uint64_t> pmd_socket_drops;
  std::vector<std::pair<std::string, uint64_t>> xstats;  // the driver's extended counters, non-zero ones
};

// Which port: its name (PCI address or vdev), id and driver.
struct PortIdentity {
  std::string name;
  uint16_t id = 0;
  std::string driver;
};

// "ipackets 0, opackets 100003, imissed 0, ierrors 0, oerrors 0, rx_nombuf 0; xstats: tx_good_packets 100003, ..."
std::string port_counters_text(const PortCounters& c);
// {"port", "port_id", "driver", "ipackets", ..., "xstats": {name: value}} for the JSON result.
nlohmann::json port_counters_json(const PortCounters& c, const PortIdentity& port);

}  // namespace rateline::report
