#include "pcap_out.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "net/frame.hpp"
#include "net/pcap_file.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"

namespace rateline::rx {
namespace {

net::IpAddress ip_of(const net::SenderAddress& a) {
  net::IpAddress ip;
  if (a.is_v4()) {
    std::memcpy(ip.bytes.data(), a.ip.data() + 12, 4);
  } else {
    ip.is_v6 = true;
    std::memcpy(ip.bytes.data(), a.ip.data(), 16);
  }
  return ip;
}

// The frame a socket backend's datagram came in, as far as rx can tell.
std::vector<uint8_t> frame_around(const engine::KeptFrame& k, const drivers::SocketAddress& bind) {
  net::UdpEndpoints ep;
  ep.src_ip = ip_of(k.from);
  ep.dst_ip = bind.ip();
  if (ep.dst_ip.is_v6 != ep.src_ip.is_v6) ep.dst_ip = net::IpAddress{ep.src_ip.is_v6, {}};  // [::] seen from IPv4
  ep.src_port = k.from.port;
  ep.dst_port = bind.port();
  std::vector<uint8_t> frame(net::kMaxHeadersBytes + k.kept_len);
  const size_t headers = net::build_udp_headers(frame, ep, k.kept_len);
  std::memcpy(frame.data() + headers, k.bytes, k.kept_len);
  frame.resize(headers + k.kept_len);
  net::udp_finish_checksum(frame, ep.src_ip.is_v6);
  return frame;
}

}  // namespace

nlohmann::json KeptFrames::to_json(const std::string& path) const {
  return {{"path", path}, {"frames", first + bad}, {"first", first}, {"bad", bad}, {"bad_not_kept", bad_not_kept},
          {"error", error}};
}

KeptFrames write_kept_frames(const std::string& path, const std::vector<const engine::FrameKeeper*>& keepers,
                             uint32_t first, const drivers::SocketAddress& bind) {
  KeptFrames out;
  std::vector<const engine::KeptFrame*> all;
  for (const engine::FrameKeeper* k : keepers) {
    for (const engine::KeptFrame& f : k->frames()) all.push_back(&f);
    out.bad_not_kept += k->bad_not_kept();
  }
  std::stable_sort(all.begin(), all.end(), [](auto* a, auto* b) { return a->rx_ns < b->rx_ns; });
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    out.error = "Couldn't write " + path + ": " + errno_text(errno);
    return out;
  }
  const int64_t to_wall = realtime_minus_monotonic_ns();
  const auto header = net::pcap_file_header();
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  for (const engine::KeptFrame* k : all) {
    if (out.first < first) ++out.first;
    else if (k->bad) ++out.bad;
    else continue;  // another worker's early frame, after the run's first `first`
    std::vector<uint8_t> made;
    const uint8_t* bytes = k->bytes;
    uint32_t len = k->kept_len;
    if (k->payload_only) {
      made = frame_around(*k, bind);
      bytes = made.data();
      len = static_cast<uint32_t>(made.size());
    }
    uint8_t rec[net::kPcapRecordHeaderBytes];
    net::write_pcap_record_header(rec, static_cast<uint64_t>(static_cast<int64_t>(k->rx_ns) + to_wall), len);
    ok = ok && std::fwrite(rec, 1, sizeof rec, f) == sizeof rec && std::fwrite(bytes, 1, len, f) == len;
  }
  if (std::fclose(f) != 0 || !ok) out.error = "Couldn't write " + path + ": " + errno_text(errno);
  return out;
}

}  // namespace rateline::rx
