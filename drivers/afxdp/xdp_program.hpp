// Loads and attaches the AF_XDP backend's steering program (xdp_steer.bpf.c).
//
// Attached through a bpf_link: the kernel detaches it when the last file
// descriptor of the link goes away, which includes the process being killed
// with SIGKILL, so no program is ever left on an interface by a crash. For a
// program left by something else (an old kernel without XDP links, another
// tool), `rx --xdp-cleanup IFACE` detaches whatever is attached.
#pragma once

#include <cstdint>
#include <string>

struct bpf_object;
struct bpf_link;

namespace rateline::drivers {

class XdpSteerProgram {
 public:
  // Throws BackendUnavailable with the reason (no CAP_BPF/CAP_NET_ADMIN, no
  // XDP support, verifier rejection).
  XdpSteerProgram(int ifindex, const std::string& ifname, uint16_t udp_port, uint16_t port_count = 1);
  ~XdpSteerProgram();
  XdpSteerProgram(const XdpSteerProgram&) = delete;
  XdpSteerProgram& operator=(const XdpSteerProgram&) = delete;

  int xsk_map_fd() const { return map_fd_; }
  // IP fragments the program passed on to the stack so far.
  uint64_t fragments() const;
  const std::string& mode() const { return mode_; }

 private:
  bpf_object* obj_ = nullptr;
  bpf_link* link_ = nullptr;
  int map_fd_ = -1;
  int fragments_fd_ = -1;
  std::string mode_;
};

// Detaches any XDP program from `ifname` (every mode). Returns what it did.
std::string xdp_detach_all(const std::string& ifname);

// Whether an XDP program is attached to `ifindex` now.
bool xdp_attached(int ifindex);

}  // namespace rateline::drivers
