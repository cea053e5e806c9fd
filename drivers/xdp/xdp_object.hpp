// A compiled BPF object embedded in the binary, opened, configured and
// loaded: the setup the XDP backend's TX and RX programs share. Errors are
// BackendUnavailable with the cause and what to do ("Couldn't load ...").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

struct bpf_object;
struct bpf_link;

namespace rateline::drivers {

class BpfObject {
 public:
  BpfObject(const unsigned char* image, size_t bytes, const char* name);
  ~BpfObject();
  BpfObject(const BpfObject&) = delete;
  BpfObject& operator=(const BpfObject&) = delete;

  // Before load(): the .rodata image (its exact size) and a map's entries.
  void set_rodata(const void* data, size_t bytes);
  void set_max_entries(const char* map, uint32_t entries);
  void set_autoload(const char* prog, bool load);  // a program the run does not need is not loaded
  void load();

  int map_fd(const char* map) const;
  int prog_fd(const char* prog) const;
  // Attaches a program whose section names its hook (raw_tp/...): nullptr and `why` on failure.
  bpf_link* attach(const char* prog, std::string& why) const;
  bpf_object* get() const { return obj_; }

 private:
  bpf_object* obj_ = nullptr;
  std::string name_;
};

// "Couldn't <what>: <strerror>" and, for EPERM, which privileges are missing.
std::string bpf_error(int err, const std::string& what);

// "native", "generic", ...: how an XDP program sits on `ifindex` now.
std::string xdp_attach_mode(int ifindex);

}  // namespace rateline::drivers
