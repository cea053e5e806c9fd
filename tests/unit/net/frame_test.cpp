// Frame building and parsing (src/net/frame.hpp): round trips, checksums,
// parser robustness on truncated and foreign frames, FrameSizes.
#include "net/frame.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "net/checksum.hpp"
#include "wire/test_payload.hpp"

namespace {

using namespace rateline::net;

uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
void put_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

// Independent RFC 1071 over big-endian words; returns the folded sum (not complemented).
uint32_t ref_sum_be(const uint8_t* p, size_t len, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<uint32_t>(p[i]) << 8 | p[i + 1];
  if (len & 1) sum += static_cast<uint32_t>(p[len - 1]) << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum;
}

UdpEndpoints v4_endpoints() {
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

UdpEndpoints v6_endpoints() {
  UdpEndpoints ep = v4_endpoints();
  in6_addr a{}, b{};
  inet_pton(AF_INET6, "fd00::1", &a);
  inet_pton(AF_INET6, "fd00:1234:5678::abcd", &b);
  ep.src_ip = IpAddress::v6(a);
  ep.dst_ip = IpAddress::v6(b);
  return ep;
}

// A complete frame (no FCS) with `payload_len` random payload bytes, checksum finished.
std::vector<uint8_t> make_frame(const UdpEndpoints& ep, uint32_t payload_len, uint32_t seed = 1) {
  const bool v6 = ep.dst_ip.is_v6;
  std::vector<uint8_t> f(headers_len(v6) + payload_len);
  EXPECT_EQ(build_udp_headers(f, ep, payload_len), headers_len(v6));
  std::mt19937 rng(seed);
  for (size_t i = headers_len(v6); i < f.size(); ++i) f[i] = static_cast<uint8_t>(rng());
  udp_finish_checksum(f, v6);
  return f;
}

// Reference UDP checksum verification over pseudo-header + UDP datagram.
bool ref_udp_ok(const std::vector<uint8_t>& f, bool v6) {
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
std::vector<uint8_t> with_tag(const std::vector<uint8_t>& f, uint16_t tpid, uint16_t tci) {
  std::vector<uint8_t> t(f.begin(), f.begin() + 12);
  t.push_back(static_cast<uint8_t>(tpid >> 8));
  t.push_back(static_cast<uint8_t>(tpid));
  t.push_back(static_cast<uint8_t>(tci >> 8));
  t.push_back(static_cast<uint8_t>(tci));
  t.insert(t.end(), f.begin() + 12, f.end());
  return t;
}

void fix_ipv4_checksum(std::vector<uint8_t>& f, size_t l3 = kEthHeaderBytes) {
  uint8_t* ip = f.data() + l3;
  const size_t ihl = (ip[0] & 0x0f) * 4u;
  ip[10] = ip[11] = 0;
  const uint16_t c = ones_checksum(ones_sum(ip, ihl));
  std::memcpy(ip + 10, &c, 2);
}

ParsedUdp parse_exact(const std::vector<uint8_t>& f, size_t len) {
  // A heap buffer of exactly `len` bytes, so any overread is past the allocation.
  std::vector<uint8_t> copy(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(len));
  return parse_udp_frame(std::span<const uint8_t>(copy.data(), copy.size()));
}

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

}  // namespace

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
