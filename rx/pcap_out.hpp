// rx --pcap-out: the frames the workers kept (engine/frame_keeper.hpp),
// merged in arrival order into one pcap file when the run ends.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/frame_keeper.hpp"
#include "socket/udp_socket.hpp"

namespace rateline::rx {

struct KeptFrames {
  size_t first = 0;           // frames from the start of the run
  size_t bad = 0;             // bad frames after those
  uint64_t bad_not_kept = 0;  // bad frames past every worker's room
  std::string error;          // the file could not be written
  nlohmann::json to_json(const std::string& path) const;
};

// Writes the first `first` frames of all workers (by receive time) and the
// bad ones after them to `path`. A socket backend's datagrams get Ethernet,
// IP and UDP headers made from the sender's address and `bind` (the
// kernel took the real ones off): zero MACs, a correct UDP checksum over
// what arrived.
KeptFrames write_kept_frames(const std::string& path, const std::vector<const engine::FrameKeeper*>& keepers,
                             uint32_t first, const drivers::SocketAddress& bind);

}  // namespace rateline::rx
