// Shared by the frame tests (frame_test.cpp: building, checksums, sizes;
// frame_parse_test.cpp: the parser on tagged, foreign, inconsistent and
// truncated frames): endpoints, frames, and an independent RFC 1071 reference.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "net/checksum.hpp"
#include "net/frame.hpp"
#include "wire/decode.hpp"
#include "wire/test_payload.hpp"

namespace rateline::net::frame_harness {

inline uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline void put_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

// Independent RFC 1071 over big-endian words; returns the folded sum (not complemented).
inline uint32_t ref_sum_be(const uint8_t* p, size_t len, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<uint32_t>(p[i]) << 8 | p[i + 1];
  if (len & 1) sum += static_cast<uint32_t>(p[len - 1]) << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum;
}

inline UdpEndpoints v4_endpoints() {
  UdpEndpoints ep;
  ep.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  ep.dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  in_addr a{}, b{};
  inet_pton(AF_INET, "192.168.0.1", &a);
  inet_pton(AF_INET, "192.168.0.199", &b);
  ep.src_ip = IpAddress::v4(a);
  ep.dst_ip = IpAddress::v4(b);
  ep.src_port = 5000;
  ep.dst_port = 6001;
  ep.ttl = 17;
  return ep;
}

inline UdpEndpoints v6_endpoints() {
  UdpEndpoints ep = v4_endpoints();
  in6_addr a{}, b{};
  inet_pton(AF_INET6, "fd00::1", &a);
  inet_pton(AF_INET6, "fd00:1234:5678::abcd", &b);
  ep.src_ip = IpAddress::v6(a);
  ep.dst_ip = IpAddress::v6(b);
  return ep;
}

// A complete frame (no FCS) with `payload_len` random payload bytes, checksum finished.
inline std::vector<uint8_t> make_frame(const UdpEndpoints& ep, uint32_t payload_len, uint32_t seed = 1) {
  const bool v6 = ep.dst_ip.is_v6;
  std::vector<uint8_t> f(headers_len(v6) + payload_len);
  EXPECT_EQ(build_udp_headers(f, ep, payload_len), headers_len(v6));
  std::mt19937 rng(seed);
  for (size_t i = headers_len(v6); i < f.size(); ++i) f[i] = static_cast<uint8_t>(rng());
  udp_finish_checksum(f, v6);
  return f;
}

// Reference UDP checksum verification over pseudo-header + UDP datagram.
inline bool ref_udp_ok(const std::vector<uint8_t>& f, bool v6) {
  const uint8_t* l3 = f.data() + kEthHeaderBytes;
  const uint8_t* udp = l3 + (v6 ? kIpv6HeaderBytes : kIpv4HeaderBytes);
  const uint32_t udp_len = be16(udp + 4);
  uint32_t sum = 0;
  if (v6) {
    sum = ref_sum_be(l3 + 8, 32);
    uint8_t t[8] = {0, 0, static_cast<uint8_t>(udp_len >> 8), static_cast<uint8_t>(udp_len), 0, 0, 0, 17};
    sum = ref_sum_be(t, 8, sum);
  } else {
    sum = ref_sum_be(l3 + 12, 8);
    uint8_t t[4] = {0, 17, static_cast<uint8_t>(udp_len >> 8), static_cast<uint8_t>(udp_len)};
    sum = ref_sum_be(t, 4, sum);
  }
  sum = ref_sum_be(udp, udp_len, sum);
  return sum == 0xffff;
}

// Inserts a VLAN tag (TPID, TCI) after the MAC addresses.
inline std::vector<uint8_t> with_tag(const std::vector<uint8_t>& f, uint16_t tpid, uint16_t tci) {
  std::vector<uint8_t> t(f.begin(), f.begin() + 12);
  t.push_back(static_cast<uint8_t>(tpid >> 8));
  t.push_back(static_cast<uint8_t>(tpid));
  t.push_back(static_cast<uint8_t>(tci >> 8));
  t.push_back(static_cast<uint8_t>(tci));
  t.insert(t.end(), f.begin() + 12, f.end());
  return t;
}

inline void fix_ipv4_checksum(std::vector<uint8_t>& f, size_t l3 = kEthHeaderBytes) {
  uint8_t* ip = f.data() + l3;
  const size_t ihl = (ip[0] & 0x0f) * 4u;
  ip[10] = ip[11] = 0;
  const uint16_t c = ones_checksum(ones_sum(ip, ihl));
  std::memcpy(ip + 10, &c, 2);
}

inline ParsedUdp parse_exact(const std::vector<uint8_t>& f, size_t len) {
  // A heap buffer of exactly `len` bytes, so any overread is past the allocation.
  std::vector<uint8_t> copy(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(len));
  return parse_udp_frame(std::span<const uint8_t>(copy.data(), copy.size()));
}

}  // namespace rateline::net::frame_harness
