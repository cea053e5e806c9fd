#include "xdp/xdp_object.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "util/errors.hpp"

namespace rateline::drivers {
namespace {

int quiet_libbpf(enum libbpf_print_level level, const char* fmt, va_list args) {
  // Warnings and errors only (a verifier rejection prints its log here).
  if (level == LIBBPF_DEBUG || level == LIBBPF_INFO) return 0;
  return vfprintf(stderr, fmt, args);
}

}  // namespace

std::string bpf_error(int err, const std::string& what) {
  err = err < 0 ? -err : err;
  std::string t = "Couldn't " + what + ": " + std::strerror(err);
  if (err == EPERM) t += " (needs CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON, or root)";
  return t;
}

BpfObject::BpfObject(const unsigned char* image, size_t bytes, const char* name) : name_(name) {
  libbpf_set_print(quiet_libbpf);
  LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = name);
  obj_ = bpf_object__open_mem(image, bytes, &opts);
  if (!obj_) throw BackendUnavailable(bpf_error(errno, std::string("open the BPF program ") + name));
}

BpfObject::~BpfObject() {
  if (obj_) bpf_object__close(obj_);
}

void BpfObject::set_rodata(const void* data, size_t bytes) {
  bpf_map* rodata = bpf_object__find_map_by_name(obj_, ".rodata");
  if (!rodata || bpf_map__set_initial_value(rodata, data, bytes) != 0)
    throw BackendUnavailable("Couldn't set the configuration of " + name_ + " (.rodata of " +
                             std::to_string(rodata ? bpf_map__value_size(rodata) : 0) + " B, expected " +
                             std::to_string(bytes) + ": xdp_shared.h and the program disagree)");
}

void BpfObject::set_max_entries(const char* map, uint32_t entries) {
  bpf_map* m = bpf_object__find_map_by_name(obj_, map);
  if (!m || bpf_map__set_max_entries(m, entries) != 0)
    throw BackendUnavailable(std::string("Couldn't size the map ") + map + " of " + name_);
}

void BpfObject::set_autoload(const char* prog, bool load) {
  bpf_program* p = bpf_object__find_program_by_name(obj_, prog);
  if (!p || bpf_program__set_autoload(p, load) != 0)
    throw BackendUnavailable(std::string("Couldn't choose whether to load ") + prog + " of " + name_);
}

void BpfObject::load() {
  if (const int err = bpf_object__load(obj_); err != 0)
    throw BackendUnavailable(bpf_error(err, "load the BPF program " + name_) +
                             (err == -EINVAL || err == -EACCES ? " (the verifier log above says why)" : ""));
}

int BpfObject::map_fd(const char* map) const { return bpf_object__find_map_fd_by_name(obj_, map); }

int BpfObject::prog_fd(const char* prog) const {
  bpf_program* p = bpf_object__find_program_by_name(obj_, prog);
  return p ? bpf_program__fd(p) : -1;
}

bpf_link* BpfObject::attach(const char* prog, std::string& why) const {
  bpf_program* p = bpf_object__find_program_by_name(obj_, prog);
  if (!p) {
    why = std::string("no program ") + prog;
    return nullptr;
  }
  bpf_link* l = bpf_program__attach(p);
  if (!l) why = bpf_error(errno, std::string("attach ") + bpf_program__section_name(p));
  return l;
}

std::string xdp_attach_mode(int ifindex) {
  LIBBPF_OPTS(bpf_xdp_query_opts, q);
  if (bpf_xdp_query(ifindex, 0, &q) != 0) return "attached";
  switch (q.attach_mode) {
    case XDP_ATTACHED_DRV: return "native";
    case XDP_ATTACHED_SKB: return "generic";
    case XDP_ATTACHED_HW: return "offload";
    case XDP_ATTACHED_NONE: return "none";
    default: return "multi";
  }
}

}  // namespace rateline::drivers
