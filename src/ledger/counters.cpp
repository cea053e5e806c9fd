#include "ledger/counters.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <poll.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "util/clock.hpp"
#include "util/owned.hpp"

extern char** environ;

namespace rateline::ledger {

namespace {

bool read_u64(const std::string& path, uint64_t& out) {
  std::ifstream f(path);
  unsigned long long v = 0;
  if (!(f >> v)) return false;
  out = v;
  return true;
}

// /proc/net/dev: the calling process's own namespace, whatever sysfs shows.
// "  name: rx_bytes rx_packets errs drop fifo frame compressed multicast tx_bytes tx_packets errs drop ..."
// (its rx "drop" is rx_dropped + rx_missed_errors).
struct ProcDev {
  uint64_t rx_packets = 0, rx_drop = 0, rx_fifo = 0, tx_packets = 0, tx_drop = 0;
};
std::map<std::string, ProcDev> read_proc_net_dev() {
  std::map<std::string, ProcDev> out;
  std::ifstream f("/proc/net/dev");
  std::string line;
  while (std::getline(f, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    std::istringstream in(line.substr(colon + 1));
    unsigned long long v[16] = {};
    int n = 0;
    while (n < 16 && in >> v[n]) ++n;
    if (n < 12 || name.empty()) continue;
    out[name] = {v[1], v[3], v[4], v[9], v[11]};
  }
  return out;
}

// sysfs describes the namespace it was mounted in. It is ours when it lists
// exactly this namespace's interfaces (those of /proc/net/dev), each with the
// ifindex this namespace gives that name.
bool sysfs_is_ours(const std::map<std::string, ProcDev>& proc) {
  std::vector<std::string> names;
  if (DIR* d = opendir("/sys/class/net")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    closedir(d);
  }
  if (names.size() != proc.size()) return false;
  for (const auto& name : names) {
    uint64_t ifindex = 0;
    if (!proc.count(name) || !read_u64("/sys/class/net/" + name + "/ifindex", ifindex) ||
        ifindex != if_nametoindex(name.c_str()))
      return false;
  }
  return true;
}

// Counter names that say a packet was thrown away (driver-specific, so by word).
bool is_drop_name(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
  for (const char* w : {"drop", "miss", "discard", "nobuf", "no_buf", "no_desc", "fifo", "overrun"})
    if (name.find(w) != std::string::npos) return true;
  return false;
}

// ethtool's driver name and -S counters, by ioctl (no ethtool binary needed).
void read_ethtool(DeviceCounters& d) {
  OwnedFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s) return;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, d.name.c_str(), IFNAMSIZ - 1);
  ethtool_drvinfo drv{};
  drv.cmd = ETHTOOL_GDRVINFO;
  ifr.ifr_data = reinterpret_cast<char*>(&drv);
  if (ioctl(s.get(), SIOCETHTOOL, &ifr) != 0) return;
  d.driver = drv.driver;
  const uint32_t n = drv.n_stats;
  if (n == 0 || n > 65536) return;
  std::vector<uint8_t> sbuf(sizeof(ethtool_gstrings) + size_t{n} * ETH_GSTRING_LEN);
  auto* strings = reinterpret_cast<ethtool_gstrings*>(sbuf.data());
  strings->cmd = ETHTOOL_GSTRINGS;
  strings->string_set = ETH_SS_STATS;
  strings->len = n;
  ifr.ifr_data = reinterpret_cast<char*>(strings);
  if (ioctl(s.get(), SIOCETHTOOL, &ifr) != 0) return;
  std::vector<uint8_t> vbuf(sizeof(ethtool_stats) + size_t{n} * sizeof(uint64_t));
  auto* stats = reinterpret_cast<ethtool_stats*>(vbuf.data());
  stats->cmd = ETHTOOL_GSTATS;
  stats->n_stats = n;
  ifr.ifr_data = reinterpret_cast<char*>(stats);
  if (ioctl(s.get(), SIOCETHTOOL, &ifr) != 0) return;
  const uint32_t got = std::min(n, std::min(strings->len, stats->n_stats));
  for (uint32_t i = 0; i < got; ++i) {
    const char* p = reinterpret_cast<const char*>(strings->data + size_t{i} * ETH_GSTRING_LEN);
    std::string name(p, strnlen(p, ETH_GSTRING_LEN));
    if (is_drop_name(name)) d.ethtool[name] = stats->data[i];
  }
}

// Runs argv (no shell), returns its stdout; nullopt when it cannot run or fails.
std::optional<std::string> capture(const std::vector<std::string>& argv, uint64_t timeout_ns) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return std::nullopt;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    return std::nullopt;
  }
  std::string text;
  const uint64_t deadline = now_ns() + timeout_ns;
  char buf[4096];
  for (;;) {
    const uint64_t now = now_ns();
    if (now >= deadline) {
      kill(pid, SIGKILL);  // our own child, by pid
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>((deadline - now) / 1'000'000 + 1));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (text.size() < (1u << 20)) text.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return text;
}

void read_qdiscs(Counters& c) {
  const auto out = capture({"tc", "-s", "-j", "qdisc", "show"}, 5 * kNsPerSec);
  if (!out) {
    c.notes.push_back("qdisc drops not read: `tc -s -j qdisc show` failed (install iproute2)");
    return;
  }
  try {
    const nlohmann::json j = nlohmann::json::parse(*out);
    for (const auto& q : j) {
      if (!q.value("root", false) || !q.contains("dev")) continue;
      for (auto& d : c.devices)
        if (d.name == q["dev"].get<std::string>()) {
          d.have_qdisc = true;
          d.qdisc_kind = q.value("kind", "");
          d.qdisc_drops = q.value("drops", uint64_t{0});
          d.qdisc_packets = q.value("packets", uint64_t{0});
          d.qdisc_bytes = q.value("bytes", uint64_t{0});
        }
    }
  } catch (const std::exception& e) {
    c.notes.push_back(std::string("qdisc drops not read: unexpected `tc -j` output: ") + e.what());
  }
}

void read_softnet(Counters& c) {
  std::ifstream f("/proc/net/softnet_stat");
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    unsigned long long processed = 0, dropped = 0, squeezed = 0;
    if (!(in >> std::hex >> processed >> dropped >> squeezed)) continue;
    c.have_softnet = true;
    c.softnet_dropped += dropped;
    c.softnet_squeezed += squeezed;
  }
  if (!c.have_softnet) c.notes.push_back("softnet drops not read: /proc/net/softnet_stat unreadable");
}

void read_snmp(Counters& c) {
  // /proc/net/snmp: a header line "Udp: Name Name ..." then a value line "Udp: 1 2 ...".
  std::ifstream f("/proc/net/snmp");
  std::string names, values;
  while (std::getline(f, names)) {
    if (names.rfind("Udp: ", 0) != 0) continue;
    if (!std::getline(f, values)) break;
    std::istringstream n(names.substr(5)), v(values.substr(5));
    std::string name;
    unsigned long long value = 0;
    while (n >> name && v >> value) {
      if (name == "InErrors") c.udp_in_errors += value;
      else if (name == "NoPorts") c.udp_no_ports += value;
      else if (name == "RcvbufErrors") c.udp_rcvbuf_errors += value;
      else if (name == "SndbufErrors") c.udp_sndbuf_errors += value;
      else if (name == "InCsumErrors") c.udp_in_csum_errors += value;
      else if (name == "MemErrors") c.udp_mem_errors += value;
    }
    c.have_snmp = true;
    break;
  }
  // /proc/net/snmp6: "Udp6InErrors   12" (absent when IPv6 is compiled out or disabled at boot).
  std::ifstream f6("/proc/net/snmp6");
  std::string name;
  unsigned long long value = 0;
  while (f6 >> name >> value) {
    if (name == "Udp6InErrors") c.udp_in_errors += value;
    else if (name == "Udp6NoPorts") c.udp_no_ports += value;
    else if (name == "Udp6RcvbufErrors") c.udp_rcvbuf_errors += value;
    else if (name == "Udp6SndbufErrors") c.udp_sndbuf_errors += value;
    else if (name == "Udp6InCsumErrors") c.udp_in_csum_errors += value;
    else if (name == "Udp6MemErrors") c.udp_mem_errors += value;
  }
  if (!c.have_snmp) c.notes.push_back("UDP drops not read: /proc/net/snmp unreadable");
}

uint64_t minus(uint64_t after, uint64_t before) { return after >= before ? after - before : 0; }

}  // namespace

const DeviceCounters* Counters::device(std::string_view name) const {
  for (const auto& d : devices)
    if (d.name == name) return &d;
  return nullptr;
}

Counters read_counters(const Scope& scope) {
  Counters c;
  const std::map<std::string, ProcDev> proc = read_proc_net_dev();
  const bool sysfs_ok = sysfs_is_ours(proc);
  if (!sysfs_ok)
    c.notes.push_back("interface counters from /proc/net/dev: this process's /sys shows another network namespace");
  std::vector<std::string> names = scope.devices;
  if (names.empty())
    for (const auto& [name, v] : proc) names.push_back(name);
  for (const auto& name : names) {
    if (name.empty()) continue;
    DeviceCounters d;
    d.name = name;
    const std::string base = "/sys/class/net/" + name + "/statistics/";
    if (!sysfs_ok || !read_u64(base + "rx_packets", d.rx_packets)) {
      const auto it = proc.find(name);
      if (it == proc.end()) {
        c.notes.push_back("interface " + name + " not found in this namespace");
        continue;
      }
      // No sysfs of this namespace (not run under `ip netns exec`): /proc/net/dev has the same
      // counters, with rx_missed_errors folded into rx "drop".
      d.rx_packets = it->second.rx_packets;
      d.tx_packets = it->second.tx_packets;
      d.rx_dropped = it->second.rx_drop;
      d.tx_dropped = it->second.tx_drop;
      d.rx_fifo_errors = it->second.rx_fifo;
      read_ethtool(d);
      c.devices.push_back(std::move(d));
      continue;
    }
    read_u64(base + "tx_packets", d.tx_packets);
    read_u64(base + "rx_dropped", d.rx_dropped);
    read_u64(base + "tx_dropped", d.tx_dropped);
    read_u64(base + "rx_missed_errors", d.rx_missed_errors);
    read_u64(base + "rx_fifo_errors", d.rx_fifo_errors);
    read_u64(base + "rx_over_errors", d.rx_over_errors);
    read_ethtool(d);
    c.devices.push_back(std::move(d));
  }
  if (scope.qdisc) read_qdiscs(c);
  read_softnet(c);
  read_snmp(c);
  return c;
}

Counters delta(const Counters& before, const Counters& after) {
  Counters d;
  for (const auto& a : after.devices) {
    const DeviceCounters* b = before.device(a.name);
    if (!b) {
      d.notes.push_back("interface " + a.name + " appeared during the run: left out");
      continue;
    }
    DeviceCounters x;
    x.name = a.name;
    x.driver = a.driver;
    x.rx_packets = minus(a.rx_packets, b->rx_packets);
    x.tx_packets = minus(a.tx_packets, b->tx_packets);
    x.rx_dropped = minus(a.rx_dropped, b->rx_dropped);
    x.tx_dropped = minus(a.tx_dropped, b->tx_dropped);
    x.rx_missed_errors = minus(a.rx_missed_errors, b->rx_missed_errors);
    x.rx_fifo_errors = minus(a.rx_fifo_errors, b->rx_fifo_errors);
    x.rx_over_errors = minus(a.rx_over_errors, b->rx_over_errors);
    for (const auto& [k, v] : a.ethtool) {
      const auto it = b->ethtool.find(k);
      x.ethtool[k] = minus(v, it == b->ethtool.end() ? v : it->second);
    }
    x.have_qdisc = a.have_qdisc && b->have_qdisc && a.qdisc_kind == b->qdisc_kind;
    x.qdisc_kind = a.qdisc_kind;
    if (x.have_qdisc) {
      x.qdisc_drops = minus(a.qdisc_drops, b->qdisc_drops);
      x.qdisc_packets = minus(a.qdisc_packets, b->qdisc_packets);
      x.qdisc_bytes = minus(a.qdisc_bytes, b->qdisc_bytes);
    }
    d.devices.push_back(std::move(x));
  }
  d.have_softnet = before.have_softnet && after.have_softnet;
  d.softnet_dropped = minus(after.softnet_dropped, before.softnet_dropped);
  d.softnet_squeezed = minus(after.softnet_squeezed, before.softnet_squeezed);
  d.have_snmp = before.have_snmp && after.have_snmp;
  d.udp_in_errors = minus(after.udp_in_errors, before.udp_in_errors);
  d.udp_no_ports = minus(after.udp_no_ports, before.udp_no_ports);
  d.udp_rcvbuf_errors = minus(after.udp_rcvbuf_errors, before.udp_rcvbuf_errors);
  d.udp_sndbuf_errors = minus(after.udp_sndbuf_errors, before.udp_sndbuf_errors);
  d.udp_in_csum_errors = minus(after.udp_in_csum_errors, before.udp_in_csum_errors);
  d.udp_mem_errors = minus(after.udp_mem_errors, before.udp_mem_errors);
  for (const auto* src : {&before.notes, &after.notes})
    for (const auto& n : *src)
      if (std::find(d.notes.begin(), d.notes.end(), n) == d.notes.end()) d.notes.push_back(n);
  return d;
}

nlohmann::json to_json(const Counters& c) {
  nlohmann::json devs = nlohmann::json::array();
  for (const auto& d : c.devices) {
    nlohmann::json j = {{"name", d.name}, {"driver", d.driver}, {"rx_packets", d.rx_packets},
                        {"tx_packets", d.tx_packets}, {"rx_dropped", d.rx_dropped}, {"tx_dropped", d.tx_dropped},
                        {"rx_missed_errors", d.rx_missed_errors}, {"rx_fifo_errors", d.rx_fifo_errors},
                        {"rx_over_errors", d.rx_over_errors}, {"ethtool", d.ethtool}};
    if (d.have_qdisc)
      j["qdisc"] = {{"kind", d.qdisc_kind}, {"drops", d.qdisc_drops}, {"packets", d.qdisc_packets}, {"bytes", d.qdisc_bytes}};
    devs.push_back(std::move(j));
  }
  nlohmann::json j = {{"devices", devs}, {"notes", c.notes}};
  if (c.have_softnet) j["softnet"] = {{"dropped", c.softnet_dropped}, {"squeezed", c.softnet_squeezed}};
  if (c.have_snmp)
    j["udp"] = {{"InErrors", c.udp_in_errors}, {"NoPorts", c.udp_no_ports}, {"RcvbufErrors", c.udp_rcvbuf_errors},
                {"SndbufErrors", c.udp_sndbuf_errors}, {"InCsumErrors", c.udp_in_csum_errors},
                {"MemErrors", c.udp_mem_errors}};
  return j;
}

Counters counters_from_json(const nlohmann::json& j) {
  Counters c;
  if (j.contains("devices"))
    for (const auto& dj : j["devices"]) {
      DeviceCounters d;
      d.name = dj.value("name", "");
      d.driver = dj.value("driver", "");
      d.rx_packets = dj.value("rx_packets", uint64_t{0});
      d.tx_packets = dj.value("tx_packets", uint64_t{0});
      d.rx_dropped = dj.value("rx_dropped", uint64_t{0});
      d.tx_dropped = dj.value("tx_dropped", uint64_t{0});
      d.rx_missed_errors = dj.value("rx_missed_errors", uint64_t{0});
      d.rx_fifo_errors = dj.value("rx_fifo_errors", uint64_t{0});
      d.rx_over_errors = dj.value("rx_over_errors", uint64_t{0});
      if (dj.contains("ethtool")) d.ethtool = dj["ethtool"].get<std::map<std::string, uint64_t>>();
      if (dj.contains("qdisc")) {
        d.have_qdisc = true;
        d.qdisc_kind = dj["qdisc"].value("kind", "");
        d.qdisc_drops = dj["qdisc"].value("drops", uint64_t{0});
        d.qdisc_packets = dj["qdisc"].value("packets", uint64_t{0});
        d.qdisc_bytes = dj["qdisc"].value("bytes", uint64_t{0});
      }
      c.devices.push_back(std::move(d));
    }
  if (j.contains("softnet")) {
    c.have_softnet = true;
    c.softnet_dropped = j["softnet"].value("dropped", uint64_t{0});
    c.softnet_squeezed = j["softnet"].value("squeezed", uint64_t{0});
  }
  if (j.contains("udp")) {
    const auto& u = j["udp"];
    c.have_snmp = true;
    c.udp_in_errors = u.value("InErrors", uint64_t{0});
    c.udp_no_ports = u.value("NoPorts", uint64_t{0});
    c.udp_rcvbuf_errors = u.value("RcvbufErrors", uint64_t{0});
    c.udp_sndbuf_errors = u.value("SndbufErrors", uint64_t{0});
    c.udp_in_csum_errors = u.value("InCsumErrors", uint64_t{0});
    c.udp_mem_errors = u.value("MemErrors", uint64_t{0});
  }
  if (j.contains("notes")) c.notes = j["notes"].get<std::vector<std::string>>();
  return c;
}

}  // namespace rateline::ledger
