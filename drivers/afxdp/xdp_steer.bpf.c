// XDP program for the AF_XDP backend: frames for our UDP port go to the
// AF_XDP socket of their RX queue; everything else (ARP, other UDP, TCP, our
// port on a queue without a socket) passes to the kernel, so the host keeps
// working while rx runs. IP fragments pass too (the stack reassembles its
// copy) and are counted: a datagram of ours cut up on the way is then named
// in rx's ledger, not lost without a word.
#include <linux/bpf.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "net/udp_parse.bpf.h"

struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, 64);
  __type(key, __u32);
  __type(value, __u32);
} xsks SEC(".maps");

// IP fragments seen, per CPU (rx's `fragments`: they may be ours).
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} steer_fragments SEC(".maps");

// Set by the loader before the program is loaded (read-only data): our
// UDP destination ports, first .. first + count - 1 (rx --port A-B).
struct steer_ports {
  __u16 first;
  __u16 count;
};
volatile const struct steer_ports steer_ports = {};

SEC("xdp")
int rateline_steer(struct xdp_md *ctx) {
  void *data = (void *)(long)ctx->data;
  void *end = (void *)(long)ctx->data_end;
  // The same parse as the XDP-native counter (net/udp_parse.bpf.h): VLAN and QinQ, IHL checked, no fragments.
  struct rl_udp_at at;
  const int found = rl_find_udp(data, end, &at);
  if (found == RL_UDP_FRAGMENT) {
    __u32 zero = 0;
    __u64 *n = bpf_map_lookup_elem(&steer_fragments, &zero);
    if (n) (*n)++;
    return XDP_PASS;
  }
  if (found) return XDP_PASS;
  if ((void *)(at.udp + 1) > end) return XDP_PASS;  // (checked in rl_find_udp; said again for the verifier)
  if ((__u16)(bpf_ntohs(at.udp->dest) - steer_ports.first) >= steer_ports.count) return XDP_PASS;
  return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "GPL";
