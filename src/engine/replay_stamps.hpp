// pktgen --replay --replay-stamp: which frames of a capture carry a data
// payload of ours, in which flow, so that a receiver counts them exactly.
//
// A frame is stamped when it is a whole UDP datagram (parsed: IPv4 or IPv6,
// up to two VLAN tags, no fragment) with at least wire::kMinPayloadBytes of
// payload; it keeps its headers and length and gets, in place of its own
// payload, stream = its flow, the next sequence of that flow and the batch's
// send stamp, its UDP checksum computed afresh. A flow is one (source and
// destination address, source and destination port): each is a stream, with
// its own sequence and end markers, built from its first frame's headers.
// Anything else goes out byte for byte, as --replay alone sends it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "net/frame.hpp"
#include "net/pcap_file.hpp"
#include "wire/test_payload.hpp"

namespace rateline::engine {

struct ReplayStamps {
  static constexpr uint16_t kAsIs = 0xffff;  // a frame sent as it is
  struct Frame {
    uint16_t flow = kAsIs;  // the stream it carries, or kAsIs
    uint16_t plan = 0;      // its payload length's plan in `plans`
    net::ParsedUdp parsed;  // where its headers and payload are
  };
  std::vector<Frame> frames;             // one per frame of the capture
  std::vector<wire::PayloadPlan> plans;  // one per payload length stamped
  std::vector<net::UdpEndpoints> flows;  // each flow's addresses and ports (its first frame's)
  bool ipv6 = false;                     // every stamped frame's family
};

// Throws std::invalid_argument when there is nothing to stamp, more flows
// than max_flows, or IPv4 and IPv6 flows mixed (one family per run).
ReplayStamps plan_replay_stamps(const net::PcapFrames& capture, uint16_t sender, uint32_t max_flows);

}  // namespace rateline::engine
