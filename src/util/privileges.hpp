// Least privilege after setup: a thread keeps only the capabilities its
// backend still uses once sockets, rings and programs exist.
//
// Linux capabilities are per thread, so every thread of ours calls this for
// itself once its setup is done (the workers after opening their queues, the
// main thread after all of them). It trims the bounding set too, so a child
// we spawn as uid 0 (the ledger's `tc`) cannot regain what we dropped, and
// clears the ambient set. Threads made by libraries are not ours to change:
// they copy their creator's sets when they start, so we narrow the creating
// thread first (DPDK: before rte_eal_init, drivers/dpdk/dpdk_port.cpp).
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace rateline {

struct CapabilityDrop {
  bool had_any = false;  // false: nothing to drop (an unprivileged user)
  uint64_t kept = 0;     // bit mask of capabilities still effective
  std::string error;     // empty when the drop took
};

CapabilityDrop keep_only_capabilities(std::span<const int> keep);

// What a user of XDP or AF_XDP keeps: map reads and BPF_PROG_RUN go through
// bpf(), gated on bpf_capable(): CAP_BPF, or CAP_SYS_ADMIN on kernels older
// than 5.8 that have no CAP_BPF. Detaching our program at exit is netlink
// (CAP_NET_ADMIN); nothing looks a program up by id (that would need CAP_SYS_ADMIN).
std::vector<int> bpf_user_capabilities();

// "CAP_NET_RAW,CAP_NET_ADMIN" for a mask; "none" for 0.
std::string capability_names(uint64_t mask);

// One line at start: what our threads kept (nothing when we had nothing to
// drop). `workers` are anything with a `caps` member.
template <class Workers>
void report_capabilities(const char* tool, const CapabilityDrop& main_thread, const Workers& workers) {
  if (!main_thread.had_any) return;
  uint64_t kept = main_thread.kept;
  std::string error = main_thread.error;
  for (const auto& w : workers) {
    kept |= w->caps.kept;
    if (error.empty()) error = w->caps.error;
  }
  std::printf("%s: privileges after setup: our threads keep %s, every other capability dropped%s%s\n", tool,
              capability_names(kept).c_str(), error.empty() ? "" : "; could not drop all: ", error.c_str());
  std::fflush(stdout);
}

}  // namespace rateline
