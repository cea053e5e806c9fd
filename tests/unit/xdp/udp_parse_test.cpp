// src/net/udp_parse.bpf.h is what every XDP program of rateline uses to
// find a frame's UDP datagram: compiled here as C++, it must call the same
// frames ours as net::parse_udp_frame, at the same offsets, for every shape
// (tags, options, fragments, other protocols) and at every truncation.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "net/frame.hpp"
#include "net/udp_parse.bpf.h"
#include "socket/udp_socket.hpp"

namespace rateline {
namespace {

// The XDP counter's rule (drivers/xdp/xdp_rx.bpf.c): a UDP header found, and
// lengths that agree with the IP header and the frame.
struct BpfVerdict {
  bool ours = false;
  bool fragment = false;  // counted as a fragment (rx's `fragments`), not as foreign
  uint32_t udp_off = 0, payload_len = 0;
};

BpfVerdict bpf_parse(const std::vector<uint8_t>& frame) {
  // Two bytes ahead of the frame, as drivers place it (NET_IP_ALIGN): the IP
  // header is then 4-byte aligned, as its struct needs in C++ (BPF reads any).
  alignas(8) static uint8_t buffer[2 + 4096];
  uint8_t* data = buffer + 2;
  if (!frame.empty()) std::memcpy(data, frame.data(), frame.size());  // an empty vector's data() may be null
  rl_udp_at at{};
  void* end = data + frame.size();
  const int found = rl_find_udp(data, end, &at);
  if (found == RL_UDP_FRAGMENT) return {.fragment = true};
  if (found) return {};
  const uint32_t udp_len = ntohs(at.udp->len);
  if (udp_len < 8 || at.l4_limit > frame.size() || at.udp_off + udp_len > at.l4_limit) return {};
  return {.ours = true, .udp_off = at.udp_off, .payload_len = udp_len - 8};
}

std::vector<uint8_t> udp_frame(bool ipv6, uint32_t payload) {
  net::UdpEndpoints ep;
  ep.src_mac = {0x02, 0, 0, 0, 0, 1};
  ep.dst_mac = {0x02, 0, 0, 0, 0, 2};
  ep.src_ip = drivers::make_address(ipv6 ? "2001:db8::1" : "192.0.2.1", 0).ip();
  ep.dst_ip = drivers::make_address(ipv6 ? "2001:db8::2" : "192.0.2.2", 0).ip();
  ep.src_port = 40000;
  ep.dst_port = 9000;
  std::vector<uint8_t> f(128 + payload);
  const size_t headers = net::build_udp_headers(f, ep, payload);
  f.resize(headers + payload);
  for (uint32_t i = 0; i < payload; ++i) f[headers + i] = static_cast<uint8_t>(i);
  return f;
}

// A VLAN tag (802.1Q or 802.1ad) after the MAC addresses.
std::vector<uint8_t> tagged(std::vector<uint8_t> f, uint16_t tpid, uint16_t vid) {
  const uint8_t tag[4] = {static_cast<uint8_t>(tpid >> 8), static_cast<uint8_t>(tpid), static_cast<uint8_t>(vid >> 8),
                          static_cast<uint8_t>(vid)};
  f.insert(f.begin() + 12, tag, tag + 4);
  return f;
}

struct Shape {
  std::string name;
  std::vector<uint8_t> frame;
};

std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (bool v6 : {false, true}) {
    const std::string ip = v6 ? "IPv6 " : "IPv4 ";
    out.push_back({ip + "plain", udp_frame(v6, 40)});
    out.push_back({ip + "empty payload", udp_frame(v6, 0)});
    out.push_back({ip + "802.1Q", tagged(udp_frame(v6, 40), 0x8100, 5)});
    out.push_back({ip + "QinQ", tagged(tagged(udp_frame(v6, 40), 0x8100, 5), 0x88a8, 7)});
    out.push_back({ip + "three tags", tagged(tagged(tagged(udp_frame(v6, 40), 0x8100, 5), 0x8100, 6), 0x88a8, 7)});
    std::vector<uint8_t> tcp = udp_frame(v6, 40);
    tcp[v6 ? 14 + 6 : 14 + 9] = 6;  // next header / protocol: TCP
    out.push_back({ip + "TCP", tcp});
    std::vector<uint8_t> short_udp = udp_frame(v6, 40);
    const size_t udp = v6 ? 14 + 40 : 14 + 20;
    short_udp[udp + 4] = 0, short_udp[udp + 5] = 7;  // UDP length 7: below its own header
    out.push_back({ip + "UDP length 7", short_udp});
    std::vector<uint8_t> long_udp = udp_frame(v6, 40);
    long_udp[udp + 4] = 0, long_udp[udp + 5] = 200;  // longer than the frame
    out.push_back({ip + "UDP length beyond the frame", long_udp});
    std::vector<uint8_t> padded = udp_frame(v6, 10);
    padded.resize(padded.size() + 20, 0);  // Ethernet padding after the IP packet
    out.push_back({ip + "padded frame", padded});
  }
  std::vector<uint8_t> frag = udp_frame(false, 40);
  frag[14 + 6] = 0x20;  // more fragments
  out.push_back({"IPv4 first fragment", frag});
  frag[14 + 6] = 0x00, frag[14 + 7] = 0x10;  // offset 16
  out.push_back({"IPv4 later fragment", frag});
  std::vector<uint8_t> frag_opts = frag;  // a fragment with 4 bytes of options: IHL 6, cut at every length
  const uint8_t nops[4] = {1, 1, 1, 0};
  frag_opts.insert(frag_opts.begin() + 14 + 20, nops, nops + 4);
  frag_opts[14] = 0x46;
  frag_opts[14 + 3] = static_cast<uint8_t>(frag_opts[14 + 3] + 4);
  out.push_back({"IPv4 fragment with options", frag_opts});
  std::vector<uint8_t> frag6 = udp_frame(true, 40);
  frag6[14 + 6] = 44;  // next header: a fragment header
  out.push_back({"IPv6 fragment", frag6});
  std::vector<uint8_t> ihl4 = udp_frame(false, 40);
  ihl4[14] = 0x44;
  out.push_back({"IPv4 IHL 4", ihl4});
  std::vector<uint8_t> v5 = udp_frame(false, 40);
  v5[14] = 0x55;
  out.push_back({"IPv4 header version 5", v5});
  // IPv4 with 4 bytes of options: IHL 6, the UDP header 4 bytes later.
  std::vector<uint8_t> opts = udp_frame(false, 40);
  const uint8_t nop[4] = {1, 1, 1, 0};
  opts.insert(opts.begin() + 14 + 20, nop, nop + 4);
  opts[14] = 0x46;
  const uint16_t tot = static_cast<uint16_t>((opts[14 + 2] << 8 | opts[14 + 3]) + 4);
  opts[14 + 2] = static_cast<uint8_t>(tot >> 8), opts[14 + 3] = static_cast<uint8_t>(tot);
  out.push_back({"IPv4 with options", opts});
  std::vector<uint8_t> tot_short = udp_frame(false, 40);
  tot_short[14 + 2] = 0, tot_short[14 + 3] = 20;  // IP total length: header only
  out.push_back({"IPv4 total length below UDP", tot_short});
  std::vector<uint8_t> arp = udp_frame(false, 40);
  arp[12] = 0x08, arp[13] = 0x06;
  out.push_back({"ARP", arp});
  return out;
}

TEST(UdpParseBpf, AgreesWithTheEngineOnEveryShapeAndTruncation) {
  int ours = 0, fragments = 0;
  for (const Shape& s : shapes()) {
    for (size_t len = 0; len <= s.frame.size(); ++len) {
      std::vector<uint8_t> f(s.frame.begin(), s.frame.begin() + static_cast<std::ptrdiff_t>(len));
      const net::ParsedUdp p = net::parse_udp_frame(f);
      const BpfVerdict b = bpf_parse(f);  // a copy: the engine's parse above read f in place
      const bool engine_ours = p.status == net::ParseStatus::ok;
      ASSERT_EQ(b.fragment, p.status == net::ParseStatus::fragment) << s.name << ", " << len << " of " << s.frame.size();
      ASSERT_EQ(b.ours, engine_ours) << s.name << ", " << len << " of " << s.frame.size() << " bytes; engine status "
                                     << static_cast<int>(p.status);
      if (b.ours) {
        EXPECT_EQ(b.udp_off, p.udp_offset) << s.name << ", " << len;
        EXPECT_EQ(b.payload_len, p.payload_len) << s.name << ", " << len;
        ++ours;
      }
      fragments += b.fragment;
    }
  }
  EXPECT_GT(ours, 10);  // the comparison saw frames both call ours
  EXPECT_GT(fragments, 2);  // and fragments
}

}  // namespace
}  // namespace rateline
