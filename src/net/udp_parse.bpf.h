// Where the UDP datagram of a frame is, for every XDP program of rateline
// (the AF_XDP steering program and the XDP-native counter): the BPF side of
// net::parse_udp_frame (net/frame.hpp), so that a frame one program calls
// ours the other does too. Ethernet with up to two VLAN tags (802.1Q,
// 802.1ad), IPv4 (version and IHL checked, no fragment) or IPv6 (UDP as the
// next header; extension headers are not a test stream), then UDP.
//
// Compiled by clang -target bpf (included from *.bpf.c) and, for
// tests/unit/xdp/udp_parse_test.cpp, as C++: kernel headers, no libc,
// explicit pointer casts.
#pragma once

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>

struct rl_vlan_tag {
  __be16 tci;
  __be16 proto;
};

struct rl_udp_at {
  struct udphdr *udp;  // within the frame: rl_find_udp checked all 8 bytes
  __u32 udp_off;       // from the frame's start
  __u32 l4_limit;      // end of the IP packet as its header says, from the frame's start
  __u8 *l3;            // the IP header (checked: a whole iphdr or ipv6hdr)
  __u32 ipv6;          // 1 for IPv6
};

#define RL_UDP_FRAGMENT 1  // an IP fragment (net::ParseStatus::fragment): it may be ours, cut up on the way

// 0 and *at filled when the frame carries a whole UDP header; RL_UDP_FRAGMENT
// for an IP fragment whose header is whole; -1 for anything else.
static __always_inline int rl_find_udp(void *data, void *end, struct rl_udp_at *at) {
  struct ethhdr *eth = (struct ethhdr *)data;
  if ((void *)(eth + 1) > end) return -1;
  __u16 proto = eth->h_proto;
  void *l3 = eth + 1;
#if defined(__clang__)
#pragma unroll
#endif
  for (int tags = 0; tags < 2; tags++) {
    if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD)) break;
    struct rl_vlan_tag *v = (struct rl_vlan_tag *)l3;
    if ((void *)(v + 1) > end) return -1;
    proto = v->proto;
    l3 = v + 1;
  }
  __u8 *udp;
  if (proto == bpf_htons(ETH_P_IP)) {
    struct iphdr *ip = (struct iphdr *)l3;
    if ((void *)(ip + 1) > end) return -1;
    if (ip->version != 4 || ip->ihl < 5) return -1;
    if (ip->frag_off & bpf_htons(0x3fff)) {  // MF or an offset, whatever it carries (as the engine)
      if ((void *)((__u8 *)ip + ip->ihl * 4) > end || bpf_ntohs(ip->tot_len) < ip->ihl * 4) return -1;
      return RL_UDP_FRAGMENT;
    }
    if (ip->protocol != IPPROTO_UDP) return -1;
    udp = (__u8 *)ip + ip->ihl * 4;
    at->l3 = (__u8 *)ip;
    at->ipv6 = 0;
    at->l4_limit = (__u32)((__u8 *)ip - (__u8 *)data) + bpf_ntohs(ip->tot_len);
  } else if (proto == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr *ip6 = (struct ipv6hdr *)l3;
    if ((void *)(ip6 + 1) > end) return -1;
    if (ip6->version != 6) return -1;
    if (ip6->nexthdr == 44) return RL_UDP_FRAGMENT;  // a fragment header first
    if (ip6->nexthdr != IPPROTO_UDP) return -1;
    udp = (__u8 *)(ip6 + 1);
    at->l3 = (__u8 *)ip6;
    at->ipv6 = 1;
    at->l4_limit = (__u32)(udp - (__u8 *)data) + bpf_ntohs(ip6->payload_len);
  } else {
    return -1;
  }
  if ((void *)(udp + sizeof(struct udphdr)) > end) return -1;
  at->udp = (struct udphdr *)udp;
  at->udp_off = (__u32)(udp - (__u8 *)data);
  return 0;
}
