// The one list of backends. Adding one: a folder drivers/<name>/ whose
// <name>_backend.cpp defines `<name>_backend`, its name in drivers/meson.build's
// folder list, and one line here. The order is the order --help lists them
// in; --backend auto ranks by each descriptor's auto_tx/auto_rx instead.
#include "backend.hpp"

#include <algorithm>

#include "util/errors.hpp"

#define RATELINE_BACKENDS(X) \
  X(dpdk)                    \
  X(xdp)                     \
  X(afxdp)                   \
  X(afpacket)                \
  X(uring)                   \
  X(socket)                  \
  X(null)                    \
  X(pcap)                    \
  /* one line per backend above, each ending in a backslash */

namespace rateline::drivers {

#define RATELINE_DECLARE(name) extern const BackendDescriptor name##_backend;
RATELINE_BACKENDS(RATELINE_DECLARE)
#undef RATELINE_DECLARE

namespace {
#define RATELINE_ADDRESS(name) &name##_backend,
const BackendDescriptor* const kBackends[] = {RATELINE_BACKENDS(RATELINE_ADDRESS)};
#undef RATELINE_ADDRESS

std::string as_asked(const BackendDescriptor& b, Direction dir) {
  const char* detail = dir == Direction::tx ? b.detail_tx : b.detail_rx;
  return std::string(b.name) + (detail ? std::string(" (") + detail + ")" : "") + ", as asked";
}

// Why `b` cannot work here ("" if it can, as far as can be told before opening it).
std::string why_not(const BackendDescriptor& b, bool frames_ok, const std::string& frames_why) {
  std::string why = b.why_not();
  if (why.empty() && b.kernel_interface && !frames_ok) why = frames_why;
  return why;
}

}  // namespace

FramePath no_wire_frame_path(const TxOptions& o, const char* name) {
  FramePath r;
  r.iface.name = name;
  r.iface.mac = kNoWireSrcMac;
  r.endpoints.src_mac = kNoWireSrcMac;
  r.endpoints.dst_mac = o.dst_mac.empty() ? kNoWireDstMac : net::parse_mac(o.dst_mac);
  r.endpoints.dst_ip = o.dst.ip();
  r.endpoints.src_ip = make_address(o.local_ip.empty() ? (o.ipv6 ? "::" : "0.0.0.0") : o.local_ip, 0).ip();
  r.endpoints.dst_port = o.dst.port();
  return r;
}

std::span<const BackendDescriptor* const> backends() { return kBackends; }

const BackendDescriptor* find_backend(const std::string& name) {
  for (const BackendDescriptor* b : kBackends)
    if (name == b->name) return b;
  return nullptr;
}

const BackendDescriptor& describe_backend(const std::string& name) {
  static const BackendDescriptor kNone{.name = "", .detail_tx = nullptr, .detail_rx = nullptr, .frames = false,
                                       .kernel_interface = false, .pins_workers = false, .auto_tx = 0, .auto_rx = 0,
                                       .auto_skip = nullptr, .fallback = nullptr, .why_not = nullptr,
                                       .capabilities = nullptr, .open_tx = nullptr, .open_rx = nullptr,
                                       .cleanup = nullptr, .moves_packets = false};
  const BackendDescriptor* b = find_backend(name);
  return b ? *b : kNone;
}

std::vector<std::string> backend_choices() {
  std::vector<std::string> names{"auto"};
  for (const BackendDescriptor* b : kBackends) names.emplace_back(b->name);
  return names;
}

std::vector<std::string> path_backend_choices() {
  std::vector<std::string> names{"auto"};
  for (const BackendDescriptor* b : kBackends)
    if (b->moves_packets) names.emplace_back(b->name);
  return names;
}

BackendChoice choose_backend(const std::string& requested, Direction dir, bool frames_ok,
                             const std::string& frames_why) {
  if (requested != "auto") {
    const BackendDescriptor* b = find_backend(requested);
    if (!b) throw BackendUnavailable("no backend named " + requested);
    const std::string why = why_not(*b, frames_ok, frames_why);
    if (why.empty()) return {b, as_asked(*b, dir)};
    if (!b->fallback) throw BackendUnavailable(why + "; --backend socket works without it");
    // The embedded default must work everywhere: a missing io_uring falls back, with the reason.
    return {find_backend(b->fallback), std::string(b->fallback) + " (fallback: " + why + ")"};
  }
  // auto: the backends auto may pick, in their order for this direction.
  std::vector<const BackendDescriptor*> order;
  std::string skipped;
  for (const BackendDescriptor* b : kBackends) {
    if ((dir == Direction::tx ? b->auto_tx : b->auto_rx) > 0) order.push_back(b);
    else if (b->auto_skip) skipped += std::string(b->name) + " skipped: " + b->auto_skip + "; ";
  }
  std::sort(order.begin(), order.end(), [dir](const BackendDescriptor* a, const BackendDescriptor* b) {
    return dir == Direction::tx ? a->auto_tx < b->auto_tx : a->auto_rx < b->auto_rx;
  });
  // Each failure is said; the last one before a fallback is said as the fallback's reason.
  std::string last_name, last_why;
  for (const BackendDescriptor* b : order) {
    const std::string why = why_not(*b, frames_ok, frames_why);
    if (why.empty()) {
      if (last_why.empty()) return {b, std::string(b->name) + " (auto: " + skipped + "fastest that works here)"};
      if (b == order.back()) return {b, std::string(b->name) + " (fallback: " + skipped + last_why + ")"};
      return {b, std::string(b->name) + " (auto: " + skipped + last_name + " skipped: " + last_why +
                     "; fastest that works here)"};
    }
    if (!last_why.empty()) skipped += last_name + " skipped: " + last_why + "; ";
    last_name = b->name;
    last_why = why;
  }
  throw BackendUnavailable("no backend works here: " + skipped + last_name + ": " + last_why);
}

}  // namespace rateline::drivers
