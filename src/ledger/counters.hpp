// Drop counters of one network namespace, read where the kernel keeps them:
// per interface (/sys/class/net/DEV/statistics, ethtool -S, the root qdisc),
// per namespace (/proc/net/snmp and snmp6: Udp/Udp6 errors) and per host
// (/proc/net/softnet_stat: one row per CPU, shared by every namespace).
//
// read_counters() reads the namespace the calling process is in: interfaces
// are listed from /proc/net/dev (always this namespace's); their counters come
// from sysfs when sysfs belongs to this namespace (`ip netns exec` mounts one;
// checked by ifindex), else from /proc/net/dev, which folds rx_missed_errors
// into its rx "drop". Nothing here runs per packet: one read before a run, one after.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace rateline::ledger {

struct DeviceCounters {
  std::string name;
  std::string driver;  // from ethtool (ETHTOOL_GDRVINFO): "veth", "e1000e"; "" when unknown
  uint64_t rx_packets = 0, tx_packets = 0;
  uint64_t rx_dropped = 0, tx_dropped = 0;
  uint64_t rx_missed_errors = 0, rx_fifo_errors = 0, rx_over_errors = 0;
  // ethtool -S counters whose name says drop/miss/discard/no-buffer/fifo/overrun.
  std::map<std::string, uint64_t> ethtool;
  // Root qdisc (tc -s qdisc show): on a classful or mq root its counters cover the children.
  bool have_qdisc = false;
  std::string qdisc_kind;
  uint64_t qdisc_drops = 0;
  uint64_t qdisc_packets = 0, qdisc_bytes = 0;  // what it sent (bytes as the qdisc counts them)
};

struct Counters {
  std::vector<DeviceCounters> devices;
  bool have_softnet = false;
  uint64_t softnet_dropped = 0;   // backlog full (netdev_max_backlog), all CPUs
  uint64_t softnet_squeezed = 0;  // softirq ran out of budget: not a drop, a sign of CPU pressure
  bool have_snmp = false;
  // Udp + Udp6, this namespace. InErrors includes RcvbufErrors and InCsumErrors.
  uint64_t udp_in_errors = 0, udp_no_ports = 0, udp_rcvbuf_errors = 0, udp_sndbuf_errors = 0;
  uint64_t udp_in_csum_errors = 0, udp_mem_errors = 0;
  std::vector<std::string> notes;  // what could not be read, and why

  const DeviceCounters* device(std::string_view name) const;
};

struct Scope {
  std::vector<std::string> devices;  // empty: every interface in this namespace
  bool qdisc = false;                // also run `tc -s -j qdisc show` (the sender side: shaping drops there)
};

// Reads the counters of the calling process's network namespace. Never
// throws: what cannot be read is left out and named in `notes`.
Counters read_counters(const Scope& scope);

// after - before, per counter; a counter that went backwards (device reset)
// counts as 0. Devices missing from `before` are left out (their counters
// predate the run).
Counters delta(const Counters& before, const Counters& after);

nlohmann::json to_json(const Counters& c);
// Tolerant: missing fields read as 0 / absent. Throws nlohmann::json::exception on wrong types.
Counters counters_from_json(const nlohmann::json& j);

}  // namespace rateline::ledger
