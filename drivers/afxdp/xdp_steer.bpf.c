// XDP program for the AF_XDP backend: frames for our UDP port go to the
// AF_XDP socket of their RX queue; everything else (ARP, other UDP, TCP, our
// port on a queue without a socket) passes to the kernel, so the host keeps
// working while rx runs.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, 64);
  __type(key, __u32);
  __type(value, __u32);
} xsks SEC(".maps");

// Set by the loader before the program is loaded (read-only data).
volatile const __u16 steer_port_be = 0;

struct vlan_tag {
  __be16 tci;
  __be16 proto;
};

SEC("xdp")
int rateline_steer(struct xdp_md *ctx) {
  void *data = (void *)(long)ctx->data;
  void *end = (void *)(long)ctx->data_end;
  struct ethhdr *eth = data;
  if ((void *)(eth + 1) > end) return XDP_PASS;
  __u16 proto = eth->h_proto;
  void *l3 = eth + 1;
  if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
    struct vlan_tag *v = l3;
    if ((void *)(v + 1) > end) return XDP_PASS;
    proto = v->proto;
    l3 = v + 1;
  }
  struct udphdr *udp;
  if (proto == bpf_htons(ETH_P_IP)) {
    struct iphdr *ip = l3;
    if ((void *)(ip + 1) > end) return XDP_PASS;
    if (ip->protocol != IPPROTO_UDP || (ip->frag_off & bpf_htons(0x3fff))) return XDP_PASS;
    udp = (void *)ip + ip->ihl * 4;
  } else if (proto == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr *ip6 = l3;
    if ((void *)(ip6 + 1) > end) return XDP_PASS;
    if (ip6->nexthdr != IPPROTO_UDP) return XDP_PASS;
    udp = (void *)(ip6 + 1);
  } else {
    return XDP_PASS;
  }
  if ((void *)(udp + 1) > end) return XDP_PASS;
  if (udp->dest != steer_port_be) return XDP_PASS;
  return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "GPL";
