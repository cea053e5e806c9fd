#include "net/frame.hpp"

#include <algorithm>
#include <cstring>

#include "net/checksum.hpp"

namespace rateline::net {
namespace {

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

// Sum of the IPv4/IPv6 pseudo-header (RFC 768 / RFC 8200 8.1) for UDP.
uint64_t pseudo_header_sum(const uint8_t* l3, bool ipv6, uint32_t udp_len) {
  uint64_t acc = 0;
  uint8_t tail[8] = {};
  if (ipv6) {
    acc = ones_sum(l3 + 8, 32);  // src + dst
    tail[0] = static_cast<uint8_t>(udp_len >> 24);
    tail[1] = static_cast<uint8_t>(udp_len >> 16);
    tail[2] = static_cast<uint8_t>(udp_len >> 8);
    tail[3] = static_cast<uint8_t>(udp_len);
    tail[7] = IPPROTO_UDP;
    return ones_sum(tail, 8, acc);
  }
  acc = ones_sum(l3 + 12, 8);
  tail[1] = IPPROTO_UDP;
  tail[2] = static_cast<uint8_t>(udp_len >> 8);
  tail[3] = static_cast<uint8_t>(udp_len);
  return ones_sum(tail, 4, acc);
}

}  // namespace

IpAddress IpAddress::v4(in_addr a) {
  IpAddress r;
  std::memcpy(r.bytes.data(), &a, 4);
  return r;
}

IpAddress IpAddress::v6(const in6_addr& a) {
  IpAddress r;
  r.is_v6 = true;
  std::memcpy(r.bytes.data(), &a, 16);
  return r;
}

FrameSizes FrameSizes::for_payload(uint32_t payload_bytes, bool ipv6, unsigned vlan_tags) {
  FrameSizes s;
  s.payload = payload_bytes;
  s.l3 = payload_bytes + static_cast<uint32_t>(kUdpHeaderBytes + (ipv6 ? kIpv6HeaderBytes : kIpv4HeaderBytes));
  s.l2 = s.l3 + static_cast<uint32_t>(kEthHeaderBytes + kFcsBytes + vlan_tags * kVlanTagBytes);
  s.l2 = std::max<uint32_t>(s.l2, kMinFrameBytes);
  s.l1 = s.l2 + static_cast<uint32_t>(kL1OverheadBytes);
  return s;
}

size_t headers_len(bool ipv6, unsigned vlan_tags) {
  return kEthHeaderBytes + vlan_tags * kVlanTagBytes + (ipv6 ? kIpv6HeaderBytes : kIpv4HeaderBytes) + kUdpHeaderBytes;
}

namespace {

// Where the IP header of a frame built by build_udp_headers starts: after
// the Ethernet header and the VLAN tags it carries.
size_t l3_offset(const uint8_t* frame) {
  size_t off = 12;
  for (size_t tags = 0; tags < kMaxVlanTags; ++tags) {
    const uint16_t type = get16(frame + off);
    if (type != kEtherTypeVlan && type != kEtherTypeQinQ) break;
    off += kVlanTagBytes;
  }
  return off + 2;
}

}  // namespace

size_t build_udp_headers(std::span<uint8_t> out, const UdpEndpoints& ep, uint32_t payload_len) {
  const bool v6 = ep.dst_ip.is_v6;
  const unsigned tags = std::min<unsigned>(ep.vlan_tags, kMaxVlanTags);
  const size_t hl = headers_len(v6, tags);
  if (out.size() < hl) return 0;
  uint8_t* p = out.data();
  std::memcpy(p, ep.dst_mac.data(), 6);
  std::memcpy(p + 6, ep.src_mac.data(), 6);
  size_t off = 12;
  for (unsigned t = 0; t < tags; ++t, off += kVlanTagBytes) {
    put16(p + off, tags == 2 && t == 0 ? kEtherTypeQinQ : kEtherTypeVlan);
    put16(p + off + 2, ep.vlan_tci[t]);
  }
  put16(p + off, v6 ? kEtherTypeIpv6 : kEtherTypeIpv4);
  uint8_t* l3 = p + off + 2;
  const uint32_t udp_len = payload_len + static_cast<uint32_t>(kUdpHeaderBytes);
  uint8_t* udp;
  if (v6) {
    std::memset(l3, 0, kIpv6HeaderBytes);
    l3[0] = 0x60;
    put16(l3 + 4, static_cast<uint16_t>(udp_len));
    l3[6] = IPPROTO_UDP;
    l3[7] = ep.ttl;
    std::memcpy(l3 + 8, ep.src_ip.bytes.data(), 16);
    std::memcpy(l3 + 24, ep.dst_ip.bytes.data(), 16);
    udp = l3 + kIpv6HeaderBytes;
  } else {
    std::memset(l3, 0, kIpv4HeaderBytes);
    l3[0] = 0x45;
    put16(l3 + 2, static_cast<uint16_t>(udp_len + kIpv4HeaderBytes));
    put16(l3 + 6, 0x4000);  // DF: we measure what arrives, never fragments
    l3[8] = ep.ttl;
    l3[9] = IPPROTO_UDP;
    std::memcpy(l3 + 12, ep.src_ip.bytes.data(), 4);
    std::memcpy(l3 + 16, ep.dst_ip.bytes.data(), 4);
    const uint16_t csum = ones_checksum(ones_sum(l3, kIpv4HeaderBytes));
    std::memcpy(l3 + 10, &csum, 2);
    udp = l3 + kIpv4HeaderBytes;
  }
  put16(udp, ep.src_port);
  put16(udp + 2, ep.dst_port);
  put16(udp + 4, static_cast<uint16_t>(udp_len));
  udp[6] = udp[7] = 0;
  return hl;
}

void udp_finish_checksum(std::span<uint8_t> frame, bool ipv6) {
  uint8_t* l3 = frame.data() + l3_offset(frame.data());
  uint8_t* udp = l3 + (ipv6 ? kIpv6HeaderBytes : kIpv4HeaderBytes);
  const uint32_t udp_len = get16(udp + 4);
  udp[6] = udp[7] = 0;
  uint64_t acc = pseudo_header_sum(l3, ipv6, udp_len);
  acc = ones_sum(udp, udp_len, acc);
  uint16_t csum = ones_checksum(acc);
  if (csum == 0) csum = 0xffff;  // 0 means "no checksum" in UDP/IPv4 and is illegal in IPv6
  std::memcpy(udp + 6, &csum, 2);
}

uint64_t udp_headers_sum(std::span<const uint8_t> headers, bool ipv6) {
  const uint8_t* l3 = headers.data() + l3_offset(headers.data());
  const uint8_t* udp = l3 + (ipv6 ? kIpv6HeaderBytes : kIpv4HeaderBytes);
  uint64_t acc = pseudo_header_sum(l3, ipv6, get16(udp + 4));
  return ones_sum(udp, kUdpHeaderBytes - 2, acc);  // the checksum field itself counts as zero
}

bool udp_checksums_ok(std::span<const uint8_t> frame, const ParsedUdp& p) {
  if (p.status != ParseStatus::ok) return false;
  const uint8_t* l3 = frame.data() + p.l3_offset;
  if (!p.ipv6 && ones_fold(ones_sum(l3, (l3[0] & 0x0f) * 4u)) != 0xffff) return false;
  const uint8_t* udp = frame.data() + p.udp_offset;
  if (!p.ipv6 && udp[6] == 0 && udp[7] == 0) return true;  // checksum not used (IPv4 only)
  const uint32_t udp_len = p.payload_len + static_cast<uint32_t>(kUdpHeaderBytes);
  uint64_t acc = pseudo_header_sum(l3, p.ipv6, udp_len);
  acc = ones_sum(udp, udp_len, acc);
  return ones_fold(acc) == 0xffff;
}

ChecksumCheck check_udp_checksums(std::span<const uint8_t> frame, const ParsedUdp& p) {
  if (udp_checksums_ok(frame, p)) [[likely]] return ChecksumCheck::ok;
  if (p.status != ParseStatus::ok) return ChecksumCheck::bad;
  const uint8_t* l3 = frame.data() + p.l3_offset;
  if (!p.ipv6 && ones_fold(ones_sum(l3, (l3[0] & 0x0f) * 4u)) != 0xffff) return ChecksumCheck::bad;
  // CHECKSUM_PARTIAL: the kernel stored the folded pseudo-header sum, not complemented.
  const uint16_t pseudo = ones_fold(pseudo_header_sum(l3, p.ipv6, p.payload_len + static_cast<uint32_t>(kUdpHeaderBytes)));
  uint16_t field;
  std::memcpy(&field, frame.data() + p.udp_offset + 6, 2);
  return field == pseudo ? ChecksumCheck::unfilled : ChecksumCheck::bad;
}

void udp_refresh_checksum(std::span<uint8_t> frame, const ParsedUdp& p) {
  uint8_t* udp = frame.data() + p.udp_offset;
  const uint32_t udp_len = p.payload_len + static_cast<uint32_t>(kUdpHeaderBytes);
  udp[6] = udp[7] = 0;
  uint16_t csum = ones_checksum(ones_sum(udp, udp_len, pseudo_header_sum(frame.data() + p.l3_offset, p.ipv6, udp_len)));
  if (csum == 0) csum = 0xffff;
  std::memcpy(udp + 6, &csum, 2);
}

void reflect_udp_frame(std::span<uint8_t> frame, const ParsedUdp& p) {
  uint8_t* f = frame.data();
  std::swap_ranges(f, f + 6, f + 6);  // destination and source MAC
  uint8_t* l3 = f + p.l3_offset;
  if (p.ipv6) std::swap_ranges(l3 + 8, l3 + 24, l3 + 24);
  else std::swap_ranges(l3 + 12, l3 + 16, l3 + 16);
  uint8_t* udp = f + p.udp_offset;
  std::swap_ranges(udp, udp + 2, udp + 2);
  udp_refresh_checksum(frame, p);
}

bool reflect_udp_frame(std::span<uint8_t> frame) {
  const ParsedUdp p = parse_udp_frame(frame);
  if (p.status != ParseStatus::ok) return false;
  reflect_udp_frame(frame, p);
  return true;
}

UdpEndpoints endpoints_of(std::span<const uint8_t> frame, const ParsedUdp& p) {
  const uint8_t* f = frame.data();
  UdpEndpoints ep;
  std::memcpy(ep.dst_mac.data(), f, 6);
  std::memcpy(ep.src_mac.data(), f + 6, 6);
  for (size_t off = 12; off + 2 < p.l3_offset && ep.vlan_tags < kMaxVlanTags; off += kVlanTagBytes)
    ep.vlan_tci[ep.vlan_tags++] = get16(f + off + 2);
  const uint8_t* l3 = f + p.l3_offset;
  ep.src_ip.is_v6 = ep.dst_ip.is_v6 = p.ipv6;
  if (p.ipv6) {
    ep.ttl = l3[7];
    std::memcpy(ep.src_ip.bytes.data(), l3 + 8, 16);
    std::memcpy(ep.dst_ip.bytes.data(), l3 + 24, 16);
  } else {
    ep.ttl = l3[8];
    std::memcpy(ep.src_ip.bytes.data(), l3 + 12, 4);
    std::memcpy(ep.dst_ip.bytes.data(), l3 + 16, 4);
  }
  ep.src_port = p.src_port;
  ep.dst_port = p.dst_port;
  return ep;
}

ParsedUdp parse_udp_frame(std::span<const uint8_t> frame) {
  ParsedUdp r;
  const uint8_t* p = frame.data();
  const size_t len = frame.size();
  size_t off = kEthHeaderBytes;
  if (len < off) return r;
  uint16_t ethertype = get16(p + 12);
  for (int tags = 0; (ethertype == kEtherTypeVlan || ethertype == kEtherTypeQinQ) && tags < 2; ++tags) {
    if (len < off + kVlanTagBytes) return r;
    if (r.vlan == 0) r.vlan = get16(p + off) & 0x0fff;
    ethertype = get16(p + off + 2);
    off += kVlanTagBytes;
  }
  r.l3_offset = static_cast<uint32_t>(off);
  size_t l4_limit;  // end of the IP packet as its header declares it
  if (ethertype == kEtherTypeIpv4) {
    if (len < off + kIpv4HeaderBytes) return r;
    const uint8_t* ip = p + off;
    const size_t ihl = (ip[0] & 0x0f) * 4u;
    if ((ip[0] >> 4) != 4 || ihl < kIpv4HeaderBytes) { r.status = ParseStatus::bad_header; return r; }
    const size_t total = get16(ip + 2);
    if (len < off + ihl) return r;
    if (total < ihl) { r.status = ParseStatus::bad_header; return r; }
    if ((get16(ip + 6) & 0x3fff) != 0) { r.status = ParseStatus::fragment; return r; }  // MF or offset
    if (ip[9] != IPPROTO_UDP) { r.status = ParseStatus::not_udp; return r; }
    off += ihl;
    l4_limit = r.l3_offset + total;
  } else if (ethertype == kEtherTypeIpv6) {
    if (len < off + kIpv6HeaderBytes) return r;
    const uint8_t* ip = p + off;
    if ((ip[0] >> 4) != 6) { r.status = ParseStatus::bad_header; return r; }
    r.ipv6 = true;
    // Extension headers are not followed: a UDP test stream carries none.
    if (ip[6] == 44) { r.status = ParseStatus::fragment; return r; }
    if (ip[6] != IPPROTO_UDP) { r.status = ParseStatus::not_udp; return r; }
    l4_limit = off + kIpv6HeaderBytes + get16(ip + 4);
    off += kIpv6HeaderBytes;
  } else {
    r.status = ParseStatus::not_ip;
    return r;
  }
  if (l4_limit > len) return r;  // truncated capture or lying length
  if (l4_limit < off + kUdpHeaderBytes) { r.status = l4_limit < len ? ParseStatus::bad_header : ParseStatus::truncated; return r; }
  const uint8_t* udp = p + off;
  const size_t udp_len = get16(udp + 4);
  if (udp_len < kUdpHeaderBytes || off + udp_len > l4_limit) { r.status = ParseStatus::bad_header; return r; }
  r.src_port = get16(udp);
  r.dst_port = get16(udp + 2);
  r.udp_offset = static_cast<uint32_t>(off);
  r.payload_offset = static_cast<uint32_t>(off + kUdpHeaderBytes);
  r.payload_len = static_cast<uint32_t>(udp_len - kUdpHeaderBytes);
  r.status = ParseStatus::ok;
  return r;
}

}  // namespace rateline::net
