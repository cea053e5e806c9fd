#include "util/privileges.hpp"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace rateline {

namespace {

int last_cap() {
  std::ifstream f("/proc/sys/kernel/cap_last_cap");
  int n = 0;
  if (f >> n && n > 0 && n < 64) return n;
  return 40;  // CAP_CHECKPOINT_RESTORE, Linux 5.9
}

struct Sets {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  uint64_t effective() const { return uint64_t{data[1].effective} << 32 | data[0].effective; }
  uint64_t permitted() const { return uint64_t{data[1].permitted} << 32 | data[0].permitted; }
  void mask(uint64_t keep) {
    for (int i = 0; i < 2; ++i) {
      const auto k = static_cast<uint32_t>(keep >> (32 * i));
      data[i].effective &= k;
      data[i].permitted &= k;
      data[i].inheritable &= k;
    }
  }
};

}  // namespace

CapabilityDrop keep_only_capabilities(std::span<const int> keep) {
  CapabilityDrop r;
  uint64_t keep_mask = 0;
  for (int c : keep) keep_mask |= uint64_t{1} << c;
  Sets s;
  if (syscall(SYS_capget, &s.header, s.data) != 0) {
    r.error = std::string("capget: ") + std::strerror(errno);
    return r;
  }
  r.had_any = s.permitted() != 0;
  if (!r.had_any) return r;
  // Bounding set first: dropping from it needs CAP_SETPCAP, which the capset below removes.
  const int last = last_cap();
  for (int c = 0; c <= last; ++c) {
    // Already out (a second call, as DPDK's pre-EAL narrowing makes): nothing to drop, and no CAP_SETPCAP left to do it.
    if (keep_mask >> c & 1 || prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 0) continue;
    if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno != EINVAL && r.error.empty())
      r.error = std::string("PR_CAPBSET_DROP: ") + std::strerror(errno);
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);  // EINVAL before Linux 4.3: nothing to clear
  s.mask(keep_mask);
  if (syscall(SYS_capset, &s.header, s.data) != 0 && r.error.empty())
    r.error = std::string("capset: ") + std::strerror(errno);
  Sets now;
  if (syscall(SYS_capget, &now.header, now.data) == 0) r.kept = now.effective();
  return r;
}

std::vector<int> bpf_user_capabilities() {
  // A kernel knows CAP_BPF (Linux 5.8) when its last capability is at least that.
  if (last_cap() >= CAP_BPF) return {CAP_NET_RAW, CAP_NET_ADMIN, CAP_BPF, CAP_PERFMON};
  return {CAP_NET_RAW, CAP_NET_ADMIN, CAP_SYS_ADMIN};
}

std::string capability_names(uint64_t mask) {
  static const char* const names[] = {
      "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
      "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
      "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO",
      "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
      "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
      "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
      "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE"};
  std::string out;
  for (int c = 0; c < 64; ++c) {
    if (!(mask >> c & 1)) continue;
    if (!out.empty()) out += ',';
    out += c < static_cast<int>(std::size(names)) ? names[c] : "cap" + std::to_string(c);
  }
  return out.empty() ? "none" : out;
}

}  // namespace rateline
