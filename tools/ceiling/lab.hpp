// The local lab: two network namespaces joined by a veth pair, made with
// `ip` and removed again however the run ends (the destructor; the parent
// process outlives the measuring child for exactly this).
//
// Names carry our pid (rlc<pid>a / rlc<pid>b), so labs of parallel runs never
// collide. Addresses come from the benchmarking range 198.18.0.0/15 (RFC
// 2544 C.2.2); IPv6 is off and the neighbours are static, so no ARP, ND or
// router solicitation crosses the link: the interface counters count our
// packets only. These are the conventions of tools/lab/netlab.py, the lab of
// the tests and benches; this one is C++ because it is part of the product.
#pragma once

#include <string>
#include <vector>

namespace rateline::ceiling {

// Namespaces rlc<pid>a/b of labs whose ceiling no longer runs (it was
// SIGKILLed: nothing could remove them): deleted; returns their names.
std::vector<std::string> remove_stale_labs();

class VethLab {
 public:
  VethLab();  // names only; create() makes it
  ~VethLab();
  VethLab(const VethLab&) = delete;
  VethLab& operator=(const VethLab&) = delete;

  // Throws SetupError with the failing command and its message.
  void create();
  // `tc qdisc add dev <sender veth> root <spec>` in the sender's namespace.
  void shape(const std::string& spec);
  // A veth hands XDP-transmitted frames (pktgen --backend xdp) only to a peer
  // whose receive queue runs NAPI: an XDP program there turns it on, and so
  // does GRO. UDP without a GRO-enabled socket is not merged, so the stack's
  // work per packet stays what it was.
  void enable_receiver_napi();
  void disable_receiver_napi();
  void destroy() noexcept;

  std::string ns_tx, ns_rx, if_tx, if_rx, ip_tx, ip_rx, mac_tx, mac_rx;

 private:
  bool made_ = false;
};

}  // namespace rateline::ceiling
