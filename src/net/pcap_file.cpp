#include "net/pcap_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace rateline::net {
namespace {

void store32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void store16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

uint32_t load32(const uint8_t* p, bool swap) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return swap ? __builtin_bswap32(v) : v;
}

}  // namespace

std::array<uint8_t, kPcapFileHeaderBytes> pcap_file_header() {
  std::array<uint8_t, kPcapFileHeaderBytes> h{};
  store32(h.data(), kPcapMagicNs);
  store16(h.data() + 4, 2);  // version 2.4
  store16(h.data() + 6, 4);
  // 8: thiszone, 12: sigfigs, both 0
  store32(h.data() + 16, kPcapSnapBytes);
  store32(h.data() + 20, kLinktypeEthernet);
  return h;
}

void write_pcap_record_header(uint8_t* out, uint64_t t_ns, uint32_t len) {
  store32(out, static_cast<uint32_t>(t_ns / 1'000'000'000));
  store32(out + 4, static_cast<uint32_t>(t_ns % 1'000'000'000));
  store32(out + 8, len);
  store32(out + 12, len);
}

PcapFrames parse_pcap(std::span<const uint8_t> file) {
  if (file.empty()) throw PcapError("empty file, not a pcap capture");
  if (file.size() >= 4 && load32(file.data(), false) == 0x0a0d0d0a)  // pcapng's section header block, either order
    throw PcapError("pcapng not supported, convert with editcap -F pcap");
  if (file.size() < kPcapFileHeaderBytes) {
    // A short file that starts like a pcap is a truncated one; anything else is another format.
    const uint32_t m = file.size() >= 4 ? load32(file.data(), false) : 0;
    const bool ours = m == kPcapMagicUs || m == kPcapMagicNs || __builtin_bswap32(m) == kPcapMagicUs ||
                      __builtin_bswap32(m) == kPcapMagicNs;
    throw PcapError(ours ? "truncated pcap: " + std::to_string(file.size()) + " B, shorter than the 24-byte file header"
                         : std::string("not a pcap file (no pcap magic number)"));
  }
  PcapFrames out;
  const uint32_t magic = load32(file.data(), false);
  bool swap = false;
  if (magic == kPcapMagicUs || magic == kPcapMagicNs) {
    out.nanosecond = magic == kPcapMagicNs;
  } else if (__builtin_bswap32(magic) == kPcapMagicUs || __builtin_bswap32(magic) == kPcapMagicNs) {
    swap = true;
    out.nanosecond = __builtin_bswap32(magic) == kPcapMagicNs;
  } else {
    throw PcapError("not a pcap file (no pcap magic number)");
  }
  const uint32_t linktype = load32(file.data() + 20, swap) & 0x0fffffff;  // the high bits are FCS flags
  if (linktype != kLinktypeEthernet)
    throw PcapError("link type " + std::to_string(linktype) + " is not Ethernet (1): only Ethernet frames can be sent");
  size_t off = kPcapFileHeaderBytes;
  out.offsets.push_back(0);
  while (off < file.size()) {
    const size_t index = out.size();
    if (file.size() - off < kPcapRecordHeaderBytes)
      throw PcapError("truncated pcap: record " + std::to_string(index) + "'s header is cut off at byte " +
                      std::to_string(file.size()));
    const uint8_t* r = file.data() + off;
    const uint32_t sec = load32(r, swap), frac = load32(r + 4, swap), caplen = load32(r + 8, swap),
                   len = load32(r + 12, swap);
    if (caplen > kPcapSnapBytes)
      throw PcapError("corrupt pcap: record " + std::to_string(index) + " claims " + std::to_string(caplen) + " B");
    if (file.size() - off - kPcapRecordHeaderBytes < caplen)
      throw PcapError("truncated pcap: record " + std::to_string(index) + " (" + std::to_string(caplen) +
                      " B) is cut off at byte " + std::to_string(file.size()));
    if (caplen < len)
      throw PcapError("record " + std::to_string(index) + " was captured cut short (" + std::to_string(caplen) +
                      " of " + std::to_string(len) + " B, snap length): it cannot be sent as it was");
    const uint8_t* data = r + kPcapRecordHeaderBytes;
    out.bytes.insert(out.bytes.end(), data, data + caplen);
    out.offsets.push_back(static_cast<uint32_t>(out.bytes.size()));
    out.t_ns.push_back(uint64_t{sec} * 1'000'000'000 + (out.nanosecond ? frac : uint64_t{frac} * 1000));
    if (caplen > out.max_len) out.max_len = caplen;
    off += kPcapRecordHeaderBytes + caplen;
  }
  if (out.size() == 0) throw PcapError("pcap file holds no frames");
  return out;
}

PcapFrames read_pcap_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw PcapError("Couldn't open " + path + ": " + std::strerror(errno));
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw PcapError("Couldn't read " + path + ": " + std::strerror(errno));
  try {
    return parse_pcap(bytes);
  } catch (const PcapError& e) {
    throw PcapError(path + ": " + e.what());
  }
}

}  // namespace rateline::net
