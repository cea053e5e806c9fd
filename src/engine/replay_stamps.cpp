#include "engine/replay_stamps.hpp"

#include <memory>

#include "engine/tx_plan.hpp"

#include <cstring>
#include <map>
#include <stdexcept>
#include <tuple>

namespace rateline::engine {

ReplayStamps plan_replay_stamps(const net::PcapFrames& capture, uint16_t sender, uint32_t max_flows) {
  ReplayStamps r;
  r.frames.resize(capture.size());
  std::map<uint32_t, uint16_t> plan_of_length;
  // (source address, destination address, source port, destination port) -> flow
  using Key = std::tuple<std::array<uint8_t, 16>, std::array<uint8_t, 16>, uint16_t, uint16_t>;
  std::map<Key, uint16_t> flow_of;
  bool have_v4 = false, have_v6 = false;
  for (size_t i = 0; i < capture.size(); ++i) {
    const std::span<const uint8_t> f = capture.frame(i);
    const net::ParsedUdp p = net::parse_udp_frame(f);
    if (p.status != net::ParseStatus::ok || p.payload_len < wire::kMinPayloadBytes) continue;
    const net::UdpEndpoints ep = net::endpoints_of(f, p);
    const Key key{ep.src_ip.bytes, ep.dst_ip.bytes, ep.src_port, ep.dst_port};
    auto [at, added] = flow_of.try_emplace(key, static_cast<uint16_t>(r.flows.size()));
    if (added) {
      if (r.flows.size() >= max_flows)
        throw std::invalid_argument("has more than " + std::to_string(max_flows) + " UDP flows to stamp");
      r.flows.push_back(ep);
      (p.ipv6 ? have_v6 : have_v4) = true;
    }
    auto [pl, new_length] = plan_of_length.try_emplace(p.payload_len, static_cast<uint16_t>(r.plans.size()));
    if (new_length) r.plans.push_back(wire::PayloadPlan::make(p.payload_len, wire::kHeaderBytes / 8, sender));
    r.frames[i] = {at->second, pl->second, p};
  }
  if (r.flows.empty())
    throw std::invalid_argument("has no UDP frame with room for a stamp (at least " +
                                std::to_string(wire::kMinPayloadBytes) + " B of payload)");
  if (have_v4 && have_v6) throw std::invalid_argument("mixes IPv4 and IPv6 flows: stamp one family per run");
  r.ipv6 = have_v6;
  return r;
}

void stamp_replay(TxPlan& plan, uint16_t sender, uint32_t max_flows) {
  auto stamps = std::make_shared<ReplayStamps>(plan_replay_stamps(*plan.replay, sender, max_flows));
  plan.end_payload = wire::end_marker_plan(0, sender);  // the smallest: any flow's MTU takes it
  plan.flows.clear();
  for (size_t i = 0; i < stamps->flows.size(); ++i) {
    TxFlow flow;
    flow.stream = static_cast<uint16_t>(i);
    flow.headers_len = static_cast<uint32_t>(net::build_udp_headers(flow.end_headers, stamps->flows[i], plan.end_payload.len));
    plan.flows.push_back(flow);
  }
  plan.end_body.stream_count = static_cast<uint16_t>(stamps->flows.size());
  plan.end_body.data_size = 0;  // each frame keeps its own length
  plan.ipv6 = stamps->ipv6;
  plan.vlan_tags = 0;  // each flow's end headers carry its own tags
  plan.replay_stamps = std::move(stamps);
}

}  // namespace rateline::engine
