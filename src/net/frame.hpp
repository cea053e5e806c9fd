// Ethernet / IPv4 / IPv6 / UDP frame building and parsing.
//
// The builder writes a header template once per flow; per packet only the
// UDP checksum (which covers the payload) changes. The parser never trusts a
// length field: every offset is checked against the captured length, so a
// truncated or hostile frame is classified, never read past its end.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "net/checksum.hpp"

#include <netinet/in.h>

namespace rateline::net {

inline constexpr size_t kEthHeaderBytes = 14;
inline constexpr size_t kVlanTagBytes = 4;
inline constexpr size_t kIpv4HeaderBytes = 20;
inline constexpr size_t kIpv6HeaderBytes = 40;
inline constexpr size_t kUdpHeaderBytes = 8;
inline constexpr size_t kFcsBytes = 4;
// Preamble (7) + SFD (1) + inter-frame gap (12): what a frame costs on the wire beyond L2.
inline constexpr size_t kL1OverheadBytes = 20;
inline constexpr size_t kMinFrameBytes = 64;  // incl. FCS

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeQinQ = 0x88a8;

using MacAddress = std::array<uint8_t, 6>;

// An IPv4 or IPv6 address in network byte order.
struct IpAddress {
  bool is_v6 = false;
  std::array<uint8_t, 16> bytes{};  // IPv4 uses the first 4

  static IpAddress v4(in_addr a);
  static IpAddress v6(const in6_addr& a);
  bool operator==(const IpAddress&) const = default;
};

struct UdpEndpoints {
  MacAddress src_mac{};
  MacAddress dst_mac{};
  IpAddress src_ip;
  IpAddress dst_ip;
  uint16_t src_port = 0;  // host order
  uint16_t dst_port = 0;  // host order
  uint8_t ttl = 64;
  // 802.1Q tags, outermost first: none, one C-tag (TPID 0x8100), or QinQ,
  // an S-tag (TPID 0x88a8) then a C-tag. Each is a TCI: PCP << 13 | VID.
  uint8_t vlan_tags = 0;
  std::array<uint16_t, 2> vlan_tci{};
};

inline constexpr size_t kMaxVlanTags = 2;

// Sizes of one UDP datagram at each layer, for rate reporting (REFERENCE.md).
struct FrameSizes {
  uint32_t payload = 0;  // UDP payload
  uint32_t l3 = 0;       // IP packet
  uint32_t l2 = 0;       // Ethernet frame incl. FCS, padded to 64
  uint32_t l1 = 0;       // l2 + preamble/SFD/IFG

  static FrameSizes for_payload(uint32_t payload_bytes, bool ipv6, unsigned vlan_tags = 0);
};

// Writes Ethernet + IP + UDP headers for `payload_len` bytes of payload into
// `out` (must hold headers_len()). The IP checksum is final; the UDP checksum
// field is left as the checksum of headers and pseudo-header only: finish it
// per packet with udp_finish_checksum().
size_t headers_len(bool ipv6, unsigned vlan_tags = 0);
size_t build_udp_headers(std::span<uint8_t> out, const UdpEndpoints& ep, uint32_t payload_len);
// The largest headers build_udp_headers writes (IPv6, two tags): what a
// buffer that holds any flow's headers needs.
inline constexpr size_t kMaxHeadersBytes = 14 + 2 * 4 + 40 + 8;

// Fills in the UDP checksum of a frame built by build_udp_headers whose
// payload is now in place. Computes over pseudo-header, UDP header, payload.
void udp_finish_checksum(std::span<uint8_t> frame, bool ipv6);

// The sender's split of the same checksum, so the payload is never read back:
// udp_headers_sum() once per flow (pseudo-header and UDP header, checksum
// field as zero), the payload's ones_sum() accumulator from whoever wrote the
// payload, and udp_store_checksum() per packet. `headers` is what
// build_udp_headers wrote; the UDP checksum is its last two bytes.
uint64_t udp_headers_sum(std::span<const uint8_t> headers, bool ipv6);
inline void udp_store_checksum(uint8_t* frame, uint32_t headers_len, uint64_t headers_sum, uint64_t payload_sum) {
  uint16_t csum = ones_checksum(headers_sum + payload_sum);
  if (csum == 0) csum = 0xffff;  // 0 means "no checksum" in UDP/IPv4 and is illegal in IPv6
  std::memcpy(frame + headers_len - 2, &csum, 2);
}

// Verifies the IPv4 header checksum and the UDP checksum of a parsed frame.
struct ParsedUdp;
bool udp_checksums_ok(std::span<const uint8_t> frame, const ParsedUdp& p);

// What a receiver can say of a parsed frame's checksums.
enum class ChecksumCheck : uint8_t {
  ok,        // both right (or UDP/IPv4 without a checksum)
  unfilled,  // IPv4 header right; the UDP field holds only the pseudo-header's sum: the
             // frame was built on this host and its checksum left for a device to
             // finish (a socket sender behind a veth, where XDP cannot ask the kernel)
  bad,
};
ChecksumCheck check_udp_checksums(std::span<const uint8_t> frame, const ParsedUdp& p);

enum class ParseStatus : uint8_t {
  ok,
  truncated,    // shorter than its headers claim
  not_ip,       // EtherType we do not count (ARP, LLDP...)
  not_udp,      // IP but another protocol
  fragment,     // IP fragment: not ours to reassemble
  bad_header,   // IHL/version/length fields inconsistent
};

struct ParsedUdp {
  ParseStatus status = ParseStatus::truncated;
  bool ipv6 = false;
  uint16_t vlan = 0;        // 0 when untagged
  uint16_t src_port = 0;    // host order
  uint16_t dst_port = 0;    // host order
  uint32_t l3_offset = 0;
  uint32_t udp_offset = 0;
  uint32_t payload_offset = 0;
  uint32_t payload_len = 0;  // from the UDP length field, checked against the frame
};

// Parses an Ethernet frame (optionally one or two VLAN tags) down to the UDP payload.
ParsedUdp parse_udp_frame(std::span<const uint8_t> frame);

// Recomputes the UDP checksum of a parsed frame (status ok) over its
// pseudo-header, UDP header and payload as they are now.
void udp_refresh_checksum(std::span<uint8_t> frame, const ParsedUdp& p);

// A parsed frame's (status ok) MACs, VLAN tags, addresses, TTL and ports:
// build_udp_headers of these writes the same headers (IPv4 options aside).
UdpEndpoints endpoints_of(std::span<const uint8_t> frame, const ParsedUdp& p);

// rx --reflect on a raw receiver: turns a parsed UDP frame (status ok) into
// its reply in place: MACs, IP addresses and ports swapped, payload and tags
// untouched. The IPv4 header checksum survives the swap (a ones' complement
// sum does not depend on order); the UDP checksum is computed afresh, since
// the frame may have arrived with it left for offload (a veth peer's socket).
void reflect_udp_frame(std::span<uint8_t> frame, const ParsedUdp& p);
// The same for a frame not parsed yet: false (and the frame untouched) when it is not a whole UDP frame.
bool reflect_udp_frame(std::span<uint8_t> frame);

}  // namespace rateline::net
