#include "lab.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <sstream>
#include <vector>

#include "process.hpp"
#include "util/errors.hpp"

namespace rateline::ceiling {

namespace {

void ip_cmd(const std::vector<std::string>& args) {
  std::string err;
  const int rc = run_command(args, nullptr, &err);
  if (rc != 0) {
    std::string cmd;
    for (const auto& a : args) cmd += (cmd.empty() ? "" : " ") + a;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    throw SetupError("Couldn't set up the lab: `" + cmd + "` failed (" + std::to_string(rc) + "): " + err);
  }
}

}  // namespace

std::vector<std::string> remove_stale_labs() {
  std::string out;
  if (run_command({"ip", "netns", "list"}, &out) != 0) return {};
  std::vector<std::string> removed;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    const std::string name = line.substr(0, line.find(' '));  // "rlc123a (id: 4)"
    if (name.size() < 5 || name.rfind("rlc", 0) != 0 || (name.back() != 'a' && name.back() != 'b')) continue;
    const std::string digits = name.substr(3, name.size() - 4);
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    // Its ceiling still runs (or the pid is reused and alive): not ours to touch.
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;
    if (run_command({"ip", "netns", "del", name}) == 0) removed.push_back(name);
  }
  return removed;
}

VethLab::VethLab() {
  const std::string id = std::to_string(getpid());
  ns_tx = "rlc" + id + "a";
  ns_rx = "rlc" + id + "b";
  if_tx = ("rlc" + id + "a").substr(0, 15);
  if_rx = ("rlc" + id + "b").substr(0, 15);
  ip_tx = "198.18.0.1";
  ip_rx = "198.18.0.2";
  // Locally administered, unicast; the pid keeps them unique on the host.
  char a[32], b[32];
  const unsigned p = static_cast<unsigned>(getpid());
  std::snprintf(a, sizeof a, "02:c6:%02x:%02x:%02x:01", (p >> 16) & 0xff, (p >> 8) & 0xff, p & 0xff);
  std::snprintf(b, sizeof b, "02:c6:%02x:%02x:%02x:02", (p >> 16) & 0xff, (p >> 8) & 0xff, p & 0xff);
  mac_tx = a;
  mac_rx = b;
}

VethLab::~VethLab() { destroy(); }

void VethLab::create() {
  made_ = true;  // from the first command on, destroy() has something to remove
  ip_cmd({"ip", "netns", "add", ns_tx});
  ip_cmd({"ip", "netns", "add", ns_rx});
  for (const auto& ns : {ns_tx, ns_rx}) {
    // Before any interface exists, so the veth ends are born without IPv6.
    // (A kernel without IPv6 has no such keys: nothing to turn off then.)
    run_command({"ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"});
    run_command({"ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"});
  }
  ip_cmd({"ip", "link", "add", if_tx, "netns", ns_tx, "address", mac_tx, "type", "veth", "peer", "name", if_rx, "netns",
          ns_rx, "address", mac_rx});
  ip_cmd({"ip", "-n", ns_tx, "addr", "add", ip_tx + "/24", "dev", if_tx});
  ip_cmd({"ip", "-n", ns_rx, "addr", "add", ip_rx + "/24", "dev", if_rx});
  for (const auto& [ns, ifn] : {std::pair{ns_tx, if_tx}, std::pair{ns_rx, if_rx}}) {
    ip_cmd({"ip", "-n", ns, "link", "set", "lo", "up"});
    ip_cmd({"ip", "-n", ns, "link", "set", ifn, "up"});
  }
  ip_cmd({"ip", "-n", ns_tx, "neigh", "replace", ip_rx, "lladdr", mac_rx, "dev", if_tx, "nud", "permanent"});
  ip_cmd({"ip", "-n", ns_rx, "neigh", "replace", ip_tx, "lladdr", mac_tx, "dev", if_rx, "nud", "permanent"});
}

void VethLab::shape(const std::string& spec) {
  std::vector<std::string> args = {"ip", "netns", "exec", ns_tx, "tc", "qdisc", "add", "dev", if_tx, "root"};
  std::istringstream in(spec);
  std::string w;
  while (in >> w) args.push_back(w);
  ip_cmd(args);
}

void VethLab::enable_receiver_napi() { ip_cmd({"ip", "netns", "exec", ns_rx, "ethtool", "-K", if_rx, "gro", "on"}); }
void VethLab::disable_receiver_napi() { ip_cmd({"ip", "netns", "exec", ns_rx, "ethtool", "-K", if_rx, "gro", "off"}); }

void VethLab::destroy() noexcept {
  if (!made_) return;
  made_ = false;
  // Deleting a namespace destroys the veth end in it, and with it the pair.
  for (const auto& ns : {ns_tx, ns_rx}) {
    try {
      run_command({"ip", "netns", "del", ns});
    } catch (...) {
    }
  }
}

}  // namespace rateline::ceiling
