// Classic pcap files (the libpcap format tcpdump -w writes; not pcapng):
// the writer's headers, and a reader that checks every length before it
// trusts it. A 24-byte file header (magic, version 2.4, snap length, link
// type), then per frame a 16-byte record header (seconds, sub-second part,
// captured length, original length) and the captured bytes. The magic says
// the byte order and whether the sub-second part is us (0xa1b2c3d4) or ns
// (0xa1b23c4d).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace rateline::net {

inline constexpr uint32_t kPcapMagicUs = 0xa1b2c3d4;
inline constexpr uint32_t kPcapMagicNs = 0xa1b23c4d;
inline constexpr uint32_t kLinktypeEthernet = 1;
inline constexpr uint32_t kPcapFileHeaderBytes = 24;
inline constexpr uint32_t kPcapRecordHeaderBytes = 16;
// tcpdump's default: holds any frame pktgen builds (65527 B of UDP payload under IPv6).
inline constexpr uint32_t kPcapSnapBytes = 262144;

// The file header of a nanosecond, Ethernet capture in this host's byte order.
std::array<uint8_t, kPcapFileHeaderBytes> pcap_file_header();
// One record header: `t_ns` since the epoch, a frame of `len` bytes captured whole.
void write_pcap_record_header(uint8_t* out, uint64_t t_ns, uint32_t len);

// A capture's frames, read whole into one buffer.
struct PcapFrames {
  std::vector<uint8_t> bytes;     // the frames, back to back
  std::vector<uint32_t> offsets;  // frame i is bytes[offsets[i], offsets[i + 1])
  std::vector<uint64_t> t_ns;     // each frame's record time, ns since the epoch
  bool nanosecond = false;        // the file's stamps were ns (else us)
  uint32_t max_len = 0;           // longest frame

  size_t size() const { return t_ns.size(); }
  std::span<const uint8_t> frame(size_t i) const { return {bytes.data() + offsets[i], offsets[i + 1] - offsets[i]}; }
};

// What is wrong with a file that is not a usable capture (one line, no path).
struct PcapError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Parses a whole file: either byte order, us or ns stamps, Ethernet link
// type. Throws PcapError for an empty or truncated file, another format
// (pcapng included), another link type, a frame captured shorter than it
// was (snap length), or a file without frames.
PcapFrames parse_pcap(std::span<const uint8_t> file);
// Reads and parses `path`; errors name the path.
PcapFrames read_pcap_file(const std::string& path);

}  // namespace rateline::net
