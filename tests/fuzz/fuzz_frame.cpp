// libFuzzer target: an Ethernet frame from the wire, parsed down to the UDP
// payload (net::parse_udp_frame), its IP/UDP checksums verified, and the
// payload decoded as a rateline test header (wire::decode).
//
// Besides "no crash, no sanitizer report", it checks what the parser
// promises its callers: an ok result points inside the frame, and decode's
// verdict agrees with the header fields it returns.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "net/frame.hpp"
#include "wire/decode.hpp"
#include "wire/test_payload.hpp"

using namespace rateline;

// A broken invariant aborts: libFuzzer saves the input and the stage fails.
#define REQUIRE(cond)                                                                    \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> frame{data, size};
  const net::ParsedUdp p = net::parse_udp_frame(frame);
  if (p.status == net::ParseStatus::ok) {
    REQUIRE(p.l3_offset >= net::kEthHeaderBytes);
    REQUIRE(p.udp_offset >= p.l3_offset + (p.ipv6 ? net::kIpv6HeaderBytes : net::kIpv4HeaderBytes));
    REQUIRE(p.payload_offset == p.udp_offset + net::kUdpHeaderBytes);
    REQUIRE(uint64_t{p.payload_offset} + p.payload_len <= size);
    const bool checksums_ok = net::udp_checksums_ok(frame, p);
    const net::ChecksumCheck check = net::check_udp_checksums(frame, p);
    REQUIRE((check == net::ChecksumCheck::ok) == checksums_ok);
    const wire::Decoded d = wire::decode(data + p.payload_offset, p.payload_len);
    if (d.verdict == wire::Verdict::data || d.verdict == wire::Verdict::end)
      REQUIRE(p.payload_len >= (d.short_form ? wire::kShortHeaderBytes : wire::kHeaderBytes));
    if (d.short_form) REQUIRE(d.verdict != wire::Verdict::end && p.payload_len < wire::kHeaderBytes);
    if (d.verdict == wire::Verdict::end) REQUIRE(p.payload_len >= wire::kEndMarkerMinPayloadBytes);
  } else {
    REQUIRE(!net::udp_checksums_ok(frame, p));
  }
  // The same bytes as a bare UDP payload (socket backends hand those over).
  const wire::Decoded d = wire::decode(data, static_cast<uint32_t>(size));
  // Ours needs the long form's 4-byte magic, or the short form's 2-byte tag
  // (then shorter than its header is malformed, not foreign).
  if (d.verdict != wire::Verdict::foreign)
    REQUIRE(size >= 4 || (size >= 2 && data[0] == wire::kShortTag && data[1] == wire::kShortVersionKind));
  if (d.short_form) {  // the short form: 'r', version/kind, 18..31 bytes, no length field
    REQUIRE(size >= wire::kShortHeaderBytes && size < wire::kHeaderBytes);
    REQUIRE(data[0] == wire::kShortTag && data[1] == wire::kShortVersionKind);
    REQUIRE(d.seq < wire::kShortSeqLimit && d.tx_ns < wire::kShortSeqLimit);
  } else if (d.verdict == wire::Verdict::data || d.verdict == wire::Verdict::end || d.verdict == wire::Verdict::corrupt) {
    REQUIRE(size >= wire::kHeaderBytes);
    REQUIRE(wire::detail::load_be(data + 26, 2) == size);
  }
  return 0;
}
