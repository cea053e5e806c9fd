// Frame building (src/net/frame.hpp): round trips, checksums, FrameSizes,
// reflected frames. The parser's robustness: frame_parse_test.cpp.
#include "net/frame.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "frame_harness.hpp"

namespace {

using namespace rateline::net;
using namespace rateline::net::frame_harness;

// ---- building ----

TEST(BuildUdpHeaders, Ipv4HeaderFields) {
  const auto ep = v4_endpoints();
  std::vector<uint8_t> h(headers_len(false));
  ASSERT_EQ(headers_len(false), 42u);
  ASSERT_EQ(build_udp_headers(h, ep, 100), 42u);
  EXPECT_TRUE(std::equal(ep.dst_mac.begin(), ep.dst_mac.end(), h.begin()));
  EXPECT_TRUE(std::equal(ep.src_mac.begin(), ep.src_mac.end(), h.begin() + 6));
  EXPECT_EQ(be16(&h[12]), kEtherTypeIpv4);
  const uint8_t* ip = &h[14];
  EXPECT_EQ(ip[0], 0x45);
  EXPECT_EQ(be16(ip + 2), 20 + 8 + 100);
  EXPECT_EQ(be16(ip + 6), 0x4000);  // DF, offset 0
  EXPECT_EQ(ip[8], 17);             // ttl
  EXPECT_EQ(ip[9], IPPROTO_UDP);
  EXPECT_EQ(ref_sum_be(ip, 20), 0xffffu) << "IPv4 header checksum";
  EXPECT_EQ(0, std::memcmp(ip + 12, ep.src_ip.bytes.data(), 4));
  EXPECT_EQ(0, std::memcmp(ip + 16, ep.dst_ip.bytes.data(), 4));
  const uint8_t* udp = ip + 20;
  EXPECT_EQ(be16(udp), 5000);
  EXPECT_EQ(be16(udp + 2), 6001);
  EXPECT_EQ(be16(udp + 4), 108);
}

TEST(BuildUdpHeaders, Ipv6HeaderFields) {
  const auto ep = v6_endpoints();
  std::vector<uint8_t> h(headers_len(true));
  ASSERT_EQ(headers_len(true), 62u);
  ASSERT_EQ(build_udp_headers(h, ep, 1400), 62u);
  EXPECT_EQ(be16(&h[12]), kEtherTypeIpv6);
  const uint8_t* ip = &h[14];
  EXPECT_EQ(ip[0] >> 4, 6);
  EXPECT_EQ(be16(ip + 4), 1408);  // payload length = UDP length
  EXPECT_EQ(ip[6], IPPROTO_UDP);
  EXPECT_EQ(ip[7], 17);  // hop limit
  EXPECT_EQ(0, std::memcmp(ip + 8, ep.src_ip.bytes.data(), 16));
  EXPECT_EQ(0, std::memcmp(ip + 24, ep.dst_ip.bytes.data(), 16));
  EXPECT_EQ(be16(ip + 40 + 4), 1408);
}

TEST(BuildUdpHeaders, TooSmallBufferWritesNothing) {
  std::vector<uint8_t> h(41, 0xaa);
  EXPECT_EQ(build_udp_headers(h, v4_endpoints(), 10), 0u);
  EXPECT_TRUE(std::all_of(h.begin(), h.end(), [](uint8_t b) { return b == 0xaa; }));
}

// ---- round trips ----

struct RoundTripCase {
  bool v6;
  uint32_t payload;
};

class UdpRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(UdpRoundTrip, ParseGivesPortsOffsetsAndLength) {
  const auto [v6, payload] = GetParam();
  const auto ep = v6 ? v6_endpoints() : v4_endpoints();
  const auto f = make_frame(ep, payload);
  const ParsedUdp p = parse_udp_frame(f);
  ASSERT_EQ(p.status, ParseStatus::ok);
  EXPECT_EQ(p.ipv6, v6);
  EXPECT_EQ(p.vlan, 0);
  EXPECT_EQ(p.src_port, 5000);
  EXPECT_EQ(p.dst_port, 6001);
  EXPECT_EQ(p.l3_offset, 14u);
  EXPECT_EQ(p.udp_offset, v6 ? 54u : 34u);
  EXPECT_EQ(p.payload_offset, v6 ? 62u : 42u);
  EXPECT_EQ(p.payload_len, payload);
  EXPECT_TRUE(udp_checksums_ok(f, p));
  EXPECT_TRUE(ref_udp_ok(f, v6)) << "UDP checksum disagrees with the reference";
}

TEST_P(UdpRoundTrip, FlippingAnyPayloadByteFailsChecksum) {
  const auto [v6, payload] = GetParam();
  if (payload == 0) GTEST_SKIP();
  const auto ep = v6 ? v6_endpoints() : v4_endpoints();
  const auto f = make_frame(ep, payload, 3);
  const ParsedUdp p = parse_udp_frame(f);
  ASSERT_EQ(p.status, ParseStatus::ok);
  for (uint32_t i = 0; i < payload; ++i) {
    auto g = f;
    g[p.payload_offset + i] ^= 0x01;
    const ParsedUdp q = parse_udp_frame(g);
    ASSERT_EQ(q.status, ParseStatus::ok);
    ASSERT_FALSE(udp_checksums_ok(g, q)) << "payload byte " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, UdpRoundTrip,
                         ::testing::Values(RoundTripCase{false, 0}, RoundTripCase{false, 1}, RoundTripCase{false, 18},
                                           RoundTripCase{false, 33}, RoundTripCase{false, 1400},
                                           RoundTripCase{false, 1471}, RoundTripCase{true, 0}, RoundTripCase{true, 1},
                                           RoundTripCase{true, 33}, RoundTripCase{true, 1400},
                                           RoundTripCase{true, 1451}),
                         [](const auto& info) {
                           return std::string(info.param.v6 ? "v6_" : "v4_") + std::to_string(info.param.payload);
                         });

TEST(UdpChecksum, RandomPayloadsMatchReference) {
  std::mt19937 rng(77);
  for (int rep = 0; rep < 400; ++rep) {
    const bool v6 = rep & 1;
    const uint32_t len = rng() % 1500;
    const auto f = make_frame(v6 ? v6_endpoints() : v4_endpoints(), len, rng());
    ASSERT_TRUE(ref_udp_ok(f, v6)) << "len " << len;
    ASSERT_NE(be16(f.data() + (v6 ? 54 : 34) + 6), 0) << "UDP checksum must never be sent as 0";
  }
}

TEST(UdpChecksum, FlippedHeaderOrAddressFailsVerification) {
  for (bool v6 : {false, true}) {
    const auto f = make_frame(v6 ? v6_endpoints() : v4_endpoints(), 64);
    const ParsedUdp p = parse_udp_frame(f);
    ASSERT_EQ(p.status, ParseStatus::ok);
    // Source address byte: covered by the pseudo-header (and the IPv4 header checksum).
    auto g = f;
    g[14 + (v6 ? 8 : 12)] ^= 0x40;
    EXPECT_FALSE(udp_checksums_ok(g, parse_udp_frame(g))) << (v6 ? "v6" : "v4");
    // Source port.
    g = f;
    g[p.udp_offset] ^= 0x01;
    EXPECT_FALSE(udp_checksums_ok(g, parse_udp_frame(g))) << (v6 ? "v6" : "v4");
  }
}

TEST(UdpChecksum, Ipv4HeaderChecksumIsVerified) {
  auto f = make_frame(v4_endpoints(), 64);
  f[14 + 8] ^= 0x01;  // TTL: not in the UDP pseudo-header, only in the IP checksum
  const ParsedUdp p = parse_udp_frame(f);
  ASSERT_EQ(p.status, ParseStatus::ok);
  EXPECT_FALSE(udp_checksums_ok(f, p));
}

// What a socket sender behind a veth puts on the wire (CHECKSUM_PARTIAL):
// the folded pseudo-header sum, not complemented, for a device to finish.
// Computed here from the RFC 768 / 8200 definition, independently of frame.cpp.
void store_partial_checksum(std::vector<uint8_t>& f, bool v6) {
  const size_t l3 = 14, udp = v6 ? 54 : 34;
  uint32_t sum = 17 + be16(f.data() + udp + 4);  // protocol, UDP length
  const size_t addr = l3 + (v6 ? 8 : 12), addr_bytes = v6 ? 32 : 8;
  for (size_t i = 0; i < addr_bytes; i += 2) sum += be16(f.data() + addr + i);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  f[udp + 6] = static_cast<uint8_t>(sum >> 8);
  f[udp + 7] = static_cast<uint8_t>(sum);
}

TEST(UdpChecksum, CheckTellsGoodBadAndLeftForOffload) {
  for (bool v6 : {false, true})
    for (uint32_t len : {18u, 31u, 1400u}) {
      const auto f = make_frame(v6 ? v6_endpoints() : v4_endpoints(), len, 5);
      EXPECT_EQ(check_udp_checksums(f, parse_udp_frame(f)), ChecksumCheck::ok);
      auto bad = f;
      bad[(v6 ? 62 : 42) + len / 2] ^= 0x10;
      EXPECT_EQ(check_udp_checksums(bad, parse_udp_frame(bad)), ChecksumCheck::bad) << len;
      auto partial = f;
      store_partial_checksum(partial, v6);
      EXPECT_EQ(check_udp_checksums(partial, parse_udp_frame(partial)), ChecksumCheck::unfilled) << len;
      if (!v6) {  // a partial checksum does not excuse a broken IPv4 header
        auto ttl = partial;
        ttl[14 + 8] ^= 0x01;
        EXPECT_EQ(check_udp_checksums(ttl, parse_udp_frame(ttl)), ChecksumCheck::bad);
      }
      auto partial_other_port = partial;  // a field one bit off the partial sum is just wrong
      partial_other_port[v6 ? 54 + 7 : 34 + 7] ^= 0x01;
      EXPECT_EQ(check_udp_checksums(partial_other_port, parse_udp_frame(partial_other_port)), ChecksumCheck::bad);
    }
}

TEST(UdpChecksum, ZeroUdpChecksumMeansUnusedOnIpv4Only) {
  auto f = make_frame(v4_endpoints(), 40);
  f[34 + 6] = f[34 + 7] = 0;
  EXPECT_TRUE(udp_checksums_ok(f, parse_udp_frame(f)));
  auto g = make_frame(v6_endpoints(), 40);
  g[54 + 6] = g[54 + 7] = 0;
  EXPECT_FALSE(udp_checksums_ok(g, parse_udp_frame(g)));
}

TEST(UdpChecksum, ComputedZeroIsSentAsFfff) {
  for (bool v6 : {false, true}) {
    const auto ep = v6 ? v6_endpoints() : v4_endpoints();
    auto f = make_frame(ep, 2);
    const size_t udp = v6 ? 54 : 34;
    // Choose the 2 payload bytes so the one's-complement sum is 0xffff: checksum 0.
    f[udp + 8] = f[udp + 9] = 0;
    f[udp + 6] = f[udp + 7] = 0;
    const uint8_t* l3 = f.data() + 14;
    uint32_t s = v6 ? ref_sum_be(l3 + 8, 32) : ref_sum_be(l3 + 12, 8);
    uint8_t t[4] = {0, 17, 0, 10};
    s = ref_sum_be(t, 4, s);
    s = ref_sum_be(f.data() + udp, 10, s);
    const uint16_t word = static_cast<uint16_t>(0xffff - s);
    put_be16(&f[udp + 8], word);
    udp_finish_checksum(f, v6);
    EXPECT_EQ(be16(&f[udp + 6]), 0xffff) << (v6 ? "v6" : "v4");
    EXPECT_TRUE(udp_checksums_ok(f, parse_udp_frame(f)));
  }
}

// The sender's fused path (engine/tx_loop.hpp): header sum once per flow, the
// payload sum kept while writing, never a re-read. It must store exactly what
// udp_finish_checksum stores, for every length and both families.
TEST(UdpChecksum, FusedSenderChecksumEqualsFullRecompute) {
  if constexpr (std::endian::native != std::endian::little) GTEST_SKIP() << "fused path is little-endian only";
  std::mt19937_64 rng(2026);
  for (int rep = 0; rep < 3000; ++rep) {
    const bool v6 = rep & 1;
    const uint32_t len = rep < 64 ? 32 + rep : 32 + static_cast<uint32_t>(rng() % 8969);  // 32..9000
    const auto ep = v6 ? v6_endpoints() : v4_endpoints();
    const size_t hl = headers_len(v6);
    std::vector<uint8_t> f(hl + len);
    ASSERT_EQ(build_udp_headers(f, ep, len), hl);
    const uint64_t hsum = udp_headers_sum({f.data(), hl}, v6);
    const auto plan = rateline::wire::PayloadPlan::make(len);
    const uint16_t stream = static_cast<uint16_t>(rng());
    const uint64_t seq = rep < 8 ? ~0ull - rep : rng();
    const uint64_t ts = rng();
    const auto sums = rateline::wire::fill_data_payload(f.data() + hl, plan, stream, seq, ts);
    EXPECT_EQ(ones_fold(sums.ones), ones_fold(ones_sum(f.data() + hl, len))) << "len " << len;
    udp_store_checksum(f.data(), static_cast<uint32_t>(hl), hsum, sums.ones);
    auto g = f;
    udp_finish_checksum(g, v6);
    ASSERT_EQ(be16(f.data() + hl - 2), be16(g.data() + hl - 2)) << (v6 ? "v6" : "v4") << " len " << len;
    ASSERT_TRUE(ref_udp_ok(f, v6)) << "len " << len;
    ASSERT_TRUE(udp_checksums_ok(f, parse_udp_frame(f)));
    const auto d = rateline::wire::decode(f.data() + hl, len);
    ASSERT_EQ(d.verdict, rateline::wire::Verdict::data) << "len " << len;
    ASSERT_EQ(d.seq, seq);
    ASSERT_EQ(d.stream, stream);
    ASSERT_EQ(d.tx_ns, ts);
  }
}

TEST(ParseUdpFrame, EthernetPaddingIsIgnored) {
  // 5 B payload: 47 B of headers+payload padded to the 60 B minimum (no FCS).
  auto f = make_frame(v4_endpoints(), 5);
  f.resize(60, 0);
  const ParsedUdp p = parse_udp_frame(f);
  ASSERT_EQ(p.status, ParseStatus::ok);
  EXPECT_EQ(p.payload_len, 5u);
  EXPECT_TRUE(udp_checksums_ok(f, p));
}

// ---- sizes ----

TEST(FrameSizes, Ipv4Payload1400) {
  const FrameSizes s = FrameSizes::for_payload(1400, false);
  EXPECT_EQ(s.payload, 1400u);
  EXPECT_EQ(s.l3, 1428u);
  EXPECT_EQ(s.l2, 1446u);
  EXPECT_EQ(s.l1, 1466u);
  // REFERENCE: 1 Gbit/s fills with 85,266 such frames per second.
  EXPECT_EQ(static_cast<uint64_t>(1e9 / (8.0 * s.l1)), 85266u);
}

TEST(FrameSizes, Ipv6AndVlanAddTheirHeaders) {
  const FrameSizes v6 = FrameSizes::for_payload(1400, true);
  EXPECT_EQ(v6.l3, 1448u);
  EXPECT_EQ(v6.l2, 1466u);
  EXPECT_EQ(v6.l1, 1486u);
  const FrameSizes vlan = FrameSizes::for_payload(1400, false, true);
  EXPECT_EQ(vlan.l3, 1428u);
  EXPECT_EQ(vlan.l2, 1450u);
  EXPECT_EQ(vlan.l1, 1470u);
}

TEST(FrameSizes, EighteenBytePayloadIsMinimumFrame) {
  const FrameSizes s = FrameSizes::for_payload(18, false);
  EXPECT_EQ(s.l3, 46u);
  EXPECT_EQ(s.l2, 64u);
  EXPECT_EQ(s.l1, 84u);
  EXPECT_EQ(FrameSizes::for_payload(19, false).l2, 65u);
}

TEST(FrameSizes, SmallPayloadsPadTo64) {
  for (uint32_t p = 0; p <= 18; ++p) {
    const FrameSizes s = FrameSizes::for_payload(p, false);
    EXPECT_EQ(s.l3, p + 28) << p;
    EXPECT_EQ(s.l2, 64u) << p;
    EXPECT_EQ(s.l1, 84u) << p;
  }
  EXPECT_EQ(FrameSizes::for_payload(0, true).l2, 66u);  // 14 + 40 + 8 + 4: IPv6 frames are never short
  EXPECT_EQ(FrameSizes::for_payload(14, false, true).l2, 64u);
  EXPECT_EQ(FrameSizes::for_payload(15, false, true).l2, 65u);
}

TEST(ReflectUdpFrame, SwapsBothEndsAndKeepsEveryChecksumRight) {
  for (bool v6 : {false, true})
    for (bool tagged : {false, true}) {
      const UdpEndpoints ep = v6 ? v6_endpoints() : v4_endpoints();
      auto f = make_frame(ep, 100, 9);
      if (tagged) f = with_tag(f, 0x8100, 0x2005);
      const ParsedUdp p = parse_udp_frame(f);
      ASSERT_EQ(p.status, ParseStatus::ok);
      auto g = f;
      g[p.udp_offset + 6] ^= 0x5a;  // as if left for offload: the reply's checksum is computed afresh
      reflect_udp_frame(g, p);
      const ParsedUdp q = parse_udp_frame(g);
      ASSERT_EQ(q.status, ParseStatus::ok);
      EXPECT_TRUE(udp_checksums_ok(g, q)) << v6 << tagged;
      EXPECT_TRUE(std::equal(g.begin(), g.begin() + 6, f.begin() + 6));  // destination MAC = the sender's
      EXPECT_TRUE(std::equal(g.begin() + 6, g.begin() + 12, f.begin()));
      const size_t a = v6 ? 8 : 12, n = v6 ? 16 : 4;
      EXPECT_TRUE(std::equal(g.begin() + p.l3_offset + a, g.begin() + p.l3_offset + a + n,
                             f.begin() + p.l3_offset + a + n));  // destination address = the sender's
      EXPECT_EQ(q.src_port, p.dst_port);
      EXPECT_EQ(q.dst_port, p.src_port);
      EXPECT_EQ(q.vlan, p.vlan);
      EXPECT_TRUE(std::equal(g.begin() + p.payload_offset, g.end(), f.begin() + p.payload_offset));  // payload untouched
    }
}

}  // namespace
