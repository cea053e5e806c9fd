// The frame parser (net::parse_udp_frame) on tagged, foreign, inconsistent,
// truncated and random frames: it names what it found and never claims a
// payload past the end.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "frame_harness.hpp"

namespace {

using namespace rateline::net;
using namespace rateline::net::frame_harness;

// ---- tags ----

TEST(ParseUdpFrame, VlanTaggedFrame) {
  const auto f = with_tag(make_frame(v4_endpoints(), 100), kEtherTypeVlan, 0x2064);  // PCP 1, VID 100
  const ParsedUdp p = parse_udp_frame(f);
  ASSERT_EQ(p.status, ParseStatus::ok);
  EXPECT_EQ(p.vlan, 100);
  EXPECT_EQ(p.l3_offset, 18u);
  EXPECT_EQ(p.udp_offset, 38u);
  EXPECT_EQ(p.payload_offset, 46u);
  EXPECT_EQ(p.payload_len, 100u);
  EXPECT_EQ(p.src_port, 5000);
  EXPECT_TRUE(udp_checksums_ok(f, p));
}

TEST(ParseUdpFrame, VlanTaggedIpv6Frame) {
  const auto f = with_tag(make_frame(v6_endpoints(), 100), kEtherTypeVlan, 0x0fff);
  const ParsedUdp p = parse_udp_frame(f);
  ASSERT_EQ(p.status, ParseStatus::ok);
  EXPECT_TRUE(p.ipv6);
  EXPECT_EQ(p.vlan, 0x0fff);
  EXPECT_EQ(p.payload_offset, 66u);
  EXPECT_TRUE(udp_checksums_ok(f, p));
}

TEST(ParseUdpFrame, QinQDoubleTaggedFrameReportsOuterVlan) {
  const auto inner = with_tag(make_frame(v4_endpoints(), 64), kEtherTypeVlan, 200);
  const auto f = with_tag(inner, kEtherTypeQinQ, 300);
  const ParsedUdp p = parse_udp_frame(f);
  ASSERT_EQ(p.status, ParseStatus::ok);
  EXPECT_EQ(p.vlan, 300);
  EXPECT_EQ(p.l3_offset, 22u);
  EXPECT_EQ(p.payload_len, 64u);
  EXPECT_TRUE(udp_checksums_ok(f, p));
}

// pktgen --vlan: the builder writes the tags a parser and tshark expect
// (QinQ: 802.1ad outside, 802.1Q inside), and both checksum paths skip them.
TEST(BuildUdpHeaders, TaggedHeadersAreTheUntaggedOnesWithTagsInserted) {
  for (const bool v6 : {false, true})
    for (const unsigned tags : {1u, 2u}) {
      auto ep = v6 ? v6_endpoints() : v4_endpoints();
      const uint32_t len = 18 + 37 * tags;
      const auto plain = make_frame(ep, len);
      auto want = with_tag(plain, kEtherTypeVlan, 0xa064);  // PCP 5, VID 100
      if (tags == 2) want = with_tag(want, kEtherTypeQinQ, 200);
      ep.vlan_tags = static_cast<uint8_t>(tags);
      ep.vlan_tci = tags == 2 ? std::array<uint16_t, 2>{200, 0xa064} : std::array<uint16_t, 2>{0xa064, 0};
      const size_t hl = headers_len(v6, tags);
      ASSERT_EQ(hl, headers_len(v6) + 4 * tags);
      std::vector<uint8_t> f(hl + len);
      ASSERT_EQ(build_udp_headers(f, ep, len), hl);
      std::copy(plain.begin() + static_cast<long>(headers_len(v6)), plain.end(), f.begin() + static_cast<long>(hl));
      EXPECT_EQ(udp_headers_sum({f.data(), hl}, v6), udp_headers_sum({plain.data(), headers_len(v6)}, v6));
      udp_finish_checksum(f, v6);
      EXPECT_EQ(f, want) << (v6 ? "v6" : "v4") << " tags " << tags;
      const ParsedUdp p = parse_udp_frame(f);
      ASSERT_EQ(p.status, ParseStatus::ok);
      EXPECT_EQ(p.vlan, tags == 2 ? 200 : 100);
      EXPECT_EQ(p.payload_offset, hl);
      EXPECT_TRUE(udp_checksums_ok(f, p));
    }
  EXPECT_EQ(FrameSizes::for_payload(18, false, 2).l2, 72u);
  EXPECT_LE(headers_len(true, 2), kMaxHeadersBytes);
}

TEST(ParseUdpFrame, ThreeTagsAreNotIp) {
  auto f = make_frame(v4_endpoints(), 64);
  f = with_tag(with_tag(with_tag(f, kEtherTypeVlan, 1), kEtherTypeVlan, 2), kEtherTypeQinQ, 3);
  EXPECT_EQ(parse_udp_frame(f).status, ParseStatus::not_ip);
}

// ---- classification ----

TEST(ParseUdpFrame, ArpIsNotIp) {
  std::vector<uint8_t> f(14 + 28, 0);
  put_be16(&f[12], 0x0806);
  put_be16(&f[14], 1);       // htype ethernet
  put_be16(&f[16], 0x0800);  // ptype ipv4
  f[18] = 6;
  f[19] = 4;
  put_be16(&f[20], 1);  // request
  EXPECT_EQ(parse_udp_frame(f).status, ParseStatus::not_ip);
}

TEST(ParseUdpFrame, Ipv4TcpIsNotUdp) {
  auto f = make_frame(v4_endpoints(), 64);
  f[14 + 9] = IPPROTO_TCP;
  fix_ipv4_checksum(f);
  EXPECT_EQ(parse_udp_frame(f).status, ParseStatus::not_udp);
}

TEST(ParseUdpFrame, Ipv6TcpIsNotUdp) {
  auto f = make_frame(v6_endpoints(), 64);
  f[14 + 6] = IPPROTO_TCP;
  EXPECT_EQ(parse_udp_frame(f).status, ParseStatus::not_udp);
}

TEST(ParseUdpFrame, Ipv4FragmentsAreFragments) {
  for (uint16_t flags : {uint16_t{0x2000}, uint16_t{0x0001}, uint16_t{0x00b9}, uint16_t{0x6000}, uint16_t{0x3fff}}) {
    auto f = make_frame(v4_endpoints(), 64);
    put_be16(&f[14 + 6], flags);
    fix_ipv4_checksum(f);
    EXPECT_EQ(parse_udp_frame(f).status, ParseStatus::fragment) << std::hex << flags;
  }
  // DF alone (and the reserved bit) are not fragmentation.
  for (uint16_t flags : {uint16_t{0x0000}, uint16_t{0x4000}, uint16_t{0x8000}, uint16_t{0xc000}}) {
    auto f = make_frame(v4_endpoints(), 64);
    put_be16(&f[14 + 6], flags);
    fix_ipv4_checksum(f);
    EXPECT_EQ(parse_udp_frame(f).status, ParseStatus::ok) << std::hex << flags;
  }
}

TEST(ParseUdpFrame, Ipv6FragmentHeaderIsFragment) {
  auto f = make_frame(v6_endpoints(), 64);
  f[14 + 6] = 44;
  EXPECT_EQ(parse_udp_frame(f).status, ParseStatus::fragment);
}

TEST(ParseUdpFrame, Ipv4WithOptionsParsesPastThem) {
  // IHL 6: 4 bytes of options (NOPs) between the IP and UDP headers.
  auto f = make_frame(v4_endpoints(), 50);
  f.insert(f.begin() + 34, {0x01, 0x01, 0x01, 0x00});
  f[14] = 0x46;
  put_be16(&f[16], static_cast<uint16_t>(24 + 8 + 50));
  fix_ipv4_checksum(f);
  const ParsedUdp p = parse_udp_frame(f);
  ASSERT_EQ(p.status, ParseStatus::ok);
  EXPECT_EQ(p.udp_offset, 38u);
  EXPECT_EQ(p.payload_offset, 46u);
  EXPECT_EQ(p.payload_len, 50u);
  EXPECT_TRUE(udp_checksums_ok(f, p));
}

// ---- bad length fields ----

TEST(ParseUdpFrame, UdpLengthLargerThanFrameIsRejected) {
  for (bool v6 : {false, true}) {
    auto f = make_frame(v6 ? v6_endpoints() : v4_endpoints(), 100);
    const size_t udp = v6 ? 54 : 34;
    put_be16(&f[udp + 4], 108 + 100);
    const auto st = parse_udp_frame(f).status;
    EXPECT_TRUE(st == ParseStatus::bad_header || st == ParseStatus::truncated) << (v6 ? "v6 " : "v4 ") << int(st);
  }
}

TEST(ParseUdpFrame, UdpLengthBelowHeaderIsBadHeader) {
  for (uint16_t bad : {uint16_t{0}, uint16_t{7}}) {
    auto f = make_frame(v4_endpoints(), 100);
    put_be16(&f[34 + 4], bad);
    EXPECT_EQ(parse_udp_frame(f).status, ParseStatus::bad_header) << bad;
  }
}

TEST(ParseUdpFrame, UdpLengthShorterThanIpPayloadIsAccepted) {
  // A UDP length below the IP length is legal (trailer bytes): payload_len follows UDP.
  auto f = make_frame(v4_endpoints(), 100);
  put_be16(&f[34 + 4], 8 + 60);
  const ParsedUdp p = parse_udp_frame(f);
  ASSERT_EQ(p.status, ParseStatus::ok);
  EXPECT_EQ(p.payload_len, 60u);
}

TEST(ParseUdpFrame, IpTotalLengthLargerThanFrameIsTruncated) {
  auto f = make_frame(v4_endpoints(), 100);
  put_be16(&f[14 + 2], 20 + 108 + 1);
  fix_ipv4_checksum(f);
  EXPECT_EQ(parse_udp_frame(f).status, ParseStatus::truncated);
  auto g = make_frame(v6_endpoints(), 100);
  put_be16(&g[14 + 4], 108 + 1);
  EXPECT_EQ(parse_udp_frame(g).status, ParseStatus::truncated);
}

TEST(ParseUdpFrame, InconsistentIpv4HeaderIsBadHeader) {
  {
    auto f = make_frame(v4_endpoints(), 64);
    f[14] = 0x44;  // IHL 4 < 5
    EXPECT_EQ(parse_udp_frame(f).status, ParseStatus::bad_header);
  }
  {
    auto f = make_frame(v4_endpoints(), 64);
    f[14] = 0x65;  // version 6 under EtherType IPv4
    EXPECT_EQ(parse_udp_frame(f).status, ParseStatus::bad_header);
  }
  {
    auto f = make_frame(v4_endpoints(), 64);
    put_be16(&f[14 + 2], 19);  // total length < IHL
    EXPECT_EQ(parse_udp_frame(f).status, ParseStatus::bad_header);
  }
  {
    auto f = make_frame(v4_endpoints(), 64);
    put_be16(&f[14 + 2], 20 + 4);  // no room for the UDP header, frame longer
    EXPECT_EQ(parse_udp_frame(f).status, ParseStatus::bad_header);
  }
  {
    auto f = make_frame(v6_endpoints(), 64);
    f[14] = 0x40;  // version 4 under EtherType IPv6
    EXPECT_EQ(parse_udp_frame(f).status, ParseStatus::bad_header);
  }
}

// ---- truncation at every length ----

class TruncatedFrame : public ::testing::TestWithParam<int> {};

TEST_P(TruncatedFrame, EveryShorterLengthIsTruncatedOrBadHeader) {
  // 0: IPv4, 1: IPv6, 2: VLAN + IPv4, 3: QinQ + IPv6, 4: IPv4 with options
  const int kind = GetParam();
  std::vector<uint8_t> f;
  switch (kind) {
    case 0: f = make_frame(v4_endpoints(), 40); break;
    case 1: f = make_frame(v6_endpoints(), 40); break;
    case 2: f = with_tag(make_frame(v4_endpoints(), 40), kEtherTypeVlan, 7); break;
    case 3: f = with_tag(with_tag(make_frame(v6_endpoints(), 40), kEtherTypeVlan, 7), kEtherTypeQinQ, 9); break;
    default: {
      f = make_frame(v4_endpoints(), 40);
      f.insert(f.begin() + 34, {0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00});
      f[14] = 0x47;
      put_be16(&f[16], static_cast<uint16_t>(28 + 8 + 40));
      fix_ipv4_checksum(f);
    }
  }
  ASSERT_EQ(parse_udp_frame(f).status, ParseStatus::ok);
  for (size_t len = 0; len < f.size(); ++len) {
    const ParsedUdp p = parse_exact(f, len);
    EXPECT_TRUE(p.status == ParseStatus::truncated || p.status == ParseStatus::bad_header)
        << "len " << len << " status " << int(p.status);
    EXPECT_FALSE(udp_checksums_ok(std::span<const uint8_t>(f.data(), len), p)) << "len " << len;
  }
  EXPECT_EQ(parse_exact(f, f.size()).status, ParseStatus::ok);
}

INSTANTIATE_TEST_SUITE_P(Kinds, TruncatedFrame, ::testing::Range(0, 5));

TEST(ParseUdpFrame, RandomGarbageNeverClaimsPayloadPastTheEnd) {
  // Random bytes behind a valid-looking EtherType: whatever the status, an ok
  // result must describe bytes inside the frame.
  std::mt19937 rng(4242);
  for (int rep = 0; rep < 20000; ++rep) {
    const size_t len = rng() % 120;
    std::vector<uint8_t> f(len);
    for (auto& b : f) b = static_cast<uint8_t>(rng());
    if (len >= 14) {
      const uint16_t types[] = {kEtherTypeIpv4, kEtherTypeIpv6, kEtherTypeVlan, kEtherTypeQinQ};
      put_be16(&f[12], types[rng() % 4]);
      if (len >= 15) f[14] = static_cast<uint8_t>((rng() & 1 ? 0x40 : 0x60) | (f[14] & 0x0f));
      if (len >= 24 && (rng() & 1)) f[14 + 9] = 17;
      if (len >= 22 && (rng() & 1)) f[14 + 6] = 17;
    }
    const ParsedUdp p = parse_udp_frame(f);
    if (p.status == ParseStatus::ok) {
      ASSERT_LE(size_t{p.payload_offset} + p.payload_len, len);
      ASSERT_EQ(p.payload_offset, p.udp_offset + 8);
    }
  }
}

}  // namespace
