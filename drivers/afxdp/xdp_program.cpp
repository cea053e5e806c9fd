#include "afxdp/xdp_program.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "xdp_steer_object.h"  // generated: the compiled steering program
#include "util/errors.hpp"

namespace rateline::drivers {
namespace {

int quiet_libbpf(enum libbpf_print_level level, const char* fmt, va_list args) {
  // Only warnings and errors: libbpf's debug chatter is not for users.
  if (level == LIBBPF_DEBUG || level == LIBBPF_INFO) return 0;
  return vfprintf(stderr, fmt, args);
}

std::string why(int err, const std::string& what) {
  err = err < 0 ? -err : err;
  std::string t = "Couldn't " + what + ": " + std::strerror(err);
  if (err == EPERM) t += " (needs CAP_NET_ADMIN and CAP_BPF, or root)";
  return t;
}

}  // namespace

XdpSteerProgram::XdpSteerProgram(int ifindex, const std::string& ifname, uint16_t udp_port, uint16_t port_count) {
  libbpf_set_print(quiet_libbpf);
  LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "rateline_steer");
  obj_ = bpf_object__open_mem(kXdpSteerObject, kXdpSteerObject_size, &opts);
  if (!obj_) throw BackendUnavailable(why(errno, "open the XDP steering program"));
  bpf_map* rodata = bpf_object__find_map_by_name(obj_, ".rodata");
  const uint16_t ports[2] = {udp_port, port_count};  // struct steer_ports, host order
  if (!rodata || bpf_map__set_initial_value(rodata, ports, sizeof ports) != 0) {
    bpf_object__close(obj_);
    throw BackendUnavailable("Couldn't set the port in the XDP steering program");
  }
  if (const int err = bpf_object__load(obj_); err != 0) {
    bpf_object__close(obj_);
    throw BackendUnavailable(why(err, "load the XDP steering program"));
  }
  bpf_program* prog = bpf_object__find_program_by_name(obj_, "rateline_steer");
  link_ = bpf_program__attach_xdp(prog, ifindex);
  if (!link_) {
    const int err = errno;
    bpf_object__close(obj_);
    throw BackendUnavailable(why(err, "attach XDP to " + ifname) +
                             (err == EBUSY || err == EEXIST ? " (another XDP program is attached: rx --xdp-cleanup " + ifname + ")" : ""));
  }
  map_fd_ = bpf_object__find_map_fd_by_name(obj_, "xsks");
  fragments_fd_ = bpf_object__find_map_fd_by_name(obj_, "steer_fragments");
  // Which mode the kernel chose: native (driver) when the driver supports XDP, else generic.
  LIBBPF_OPTS(bpf_xdp_query_opts, q);
  mode_ = "attached";
  if (bpf_xdp_query(ifindex, 0, &q) == 0)
    mode_ = q.attach_mode == XDP_ATTACHED_DRV ? "native" : q.attach_mode == XDP_ATTACHED_SKB ? "generic" : q.attach_mode == XDP_ATTACHED_HW ? "offload" : "multi";
}

XdpSteerProgram::~XdpSteerProgram() {
  if (link_) bpf_link__destroy(link_);
  if (obj_) bpf_object__close(obj_);
}

uint64_t XdpSteerProgram::fragments() const {
  const int cpus = libbpf_num_possible_cpus();
  std::vector<uint64_t> per_cpu(cpus > 0 ? static_cast<size_t>(cpus) : 1);
  const uint32_t zero = 0;
  if (fragments_fd_ < 0 || bpf_map_lookup_elem(fragments_fd_, &zero, per_cpu.data()) != 0) return 0;
  uint64_t n = 0;
  for (uint64_t v : per_cpu) n += v;
  return n;
}

bool xdp_attached(int ifindex) {
  LIBBPF_OPTS(bpf_xdp_query_opts, q);
  return bpf_xdp_query(ifindex, 0, &q) == 0 && q.attach_mode != XDP_ATTACHED_NONE;
}

std::string xdp_detach_all(const std::string& ifname) {
  const int ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (!ifindex) return "no interface " + ifname;
  if (!xdp_attached(ifindex)) return "no XDP program on " + ifname;
  std::string out;
  for (unsigned flags : {XDP_FLAGS_SKB_MODE, XDP_FLAGS_DRV_MODE, XDP_FLAGS_HW_MODE}) {
    const int err = bpf_xdp_detach(ifindex, flags, nullptr);
    if (err == 0 && !xdp_attached(ifindex)) return "detached the XDP program from " + ifname;
    if (err && err != -EINVAL && err != -ENOENT && err != -EOPNOTSUPP) out = why(err, "detach XDP from " + ifname);
  }
  if (xdp_attached(ifindex))
    return out.empty() ? "an XDP program is still attached to " + ifname + " (held by a bpf_link of a running process)" : out;
  return "detached the XDP program from " + ifname;
}

}  // namespace rateline::drivers
