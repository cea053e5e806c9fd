// The engine's send and receive loops on an Ethernet queue (raw backends:
// the engine writes the headers), size mixes and replays, driven through the
// fake queues of loop_harness.hpp.
#include <gtest/gtest.h>

#include "loop_harness.hpp"

namespace {

using namespace rateline;
using namespace rateline::loop_harness;

// ---- Ethernet queue (raw backends: the engine writes the headers) ----

class RunTxEthernet : public ::testing::TestWithParam<bool> {};  // param: IPv6

TEST_P(RunTxEthernet, OneFlowFramesParseAndCarryValidUdpChecksums) {
  const Config c{1, GetParam(), 64, 1000};
  const auto plan = make_plan<Layer::ethernet>(c);
  const auto run = transmit<Layer::ethernet>(plan, pushy());
  check_tx(c, plan, run, 5);
  for (const auto& rec : run.q->log) EXPECT_EQ(rec.bytes.size(), net::headers_len(c.ipv6) + 64);
}

TEST_P(RunTxEthernet, OneFlowFramesRoundTripThroughRunRx) {
  const Config c{1, GetParam(), 64, 1000};
  const auto run = transmit<Layer::ethernet>(make_plan<Layer::ethernet>(c), pushy());
  const auto rx = receive<Layer::ethernet>(delivered(run));
  check_rx(c, run, rx);
  EXPECT_EQ(rx.counters.corrupt, 0u);
  EXPECT_EQ(rx.counters.foreign, 0u);
}

TEST_P(RunTxEthernet, InjectedFramesAreClassified) {
  const bool v6 = GetParam();
  const Config c{1, v6, 64, 1000};
  const auto run = transmit<Layer::ethernet>(make_plan<Layer::ethernet>(c), pushy());
  auto frames = delivered(run);
  const size_t payload_at = net::headers_len(v6);
  // Corrupted payload behind a recomputed (valid) UDP checksum: only the payload check sees it.
  auto corrupt = frames[20];
  corrupt[payload_at + 50] ^= 0x01;
  net::udp_finish_checksum(corrupt, v6);
  const auto dup = frames[21];
  auto other_port = frames[22];  // right payload, another destination port
  other_port[payload_at - 8 + 2] ^= 0x01;
  std::vector<uint8_t> arp(60, 0);
  arp[12] = 0x08;
  arp[13] = 0x06;
  auto truncated = frames[23];
  truncated.resize(payload_at - 3);
  frames.insert(frames.begin() + 100, corrupt);
  frames.insert(frames.begin() + 200, dup);
  frames.insert(frames.begin() + 300, other_port);
  frames.insert(frames.begin() + 400, arp);
  frames.insert(frames.begin() + 500, truncated);
  const auto rx = receive<Layer::ethernet>(frames);
  EXPECT_EQ(rx.counters.frames, frames.size());
  EXPECT_EQ(rx.counters.corrupt, 1u);
  EXPECT_EQ(rx.find(stream_id(0))->corrupt, 1u);
  EXPECT_EQ(rx.counters.foreign, 3u) << "other port, ARP, truncated frame";
  EXPECT_EQ(rx.counters.data, 1000u - 5 + 1);
  EXPECT_EQ(rx.find(stream_id(0))->seq.counts().duplicates, 1u);
  EXPECT_EQ(rx.counters.lost_so_far, 5u);
}

INSTANTIATE_TEST_SUITE_P(IpVersions, RunTxEthernet, ::testing::Bool(),
                         [](const auto& info) { return std::string(info.param ? "ipv6" : "ipv4"); });

// With several flows, slots the backend reuses (stale == false) still hold
// the headers of whichever flow used them last; a frame of stream B must
// still leave with flow B's source port.
TEST(RunTxEthernetFlows, ReusedSlotCarriesTheHeadersOfItsOwnFlow) {
  const Config c{2, false, 64, 1000};
  const auto plan = make_plan<Layer::ethernet>(c);
  const auto run = transmit<Layer::ethernet>(plan, pushy({}));
  uint64_t wrong = 0, first_wrong = ~0ull;
  for (size_t i = 0; i < run.q->log.size(); ++i) {
    net::ParsedUdp p;
    const wire::Decoded d = decode(payload_of<Layer::ethernet>(run.q->log[i].bytes, &p));
    ASSERT_EQ(p.status, net::ParseStatus::ok);
    const uint16_t flow = static_cast<uint16_t>(d.stream - 10);
    if (p.src_port != kSrcPortBase + flow) {
      if (!wrong) first_wrong = i;
      ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0u) << "frames with another flow's headers; first at frame " << first_wrong << " of "
                       << run.q->log.size();
}

// End markers are longer than the data when --size < 64 (end_marker_plan):
// on an Ethernet queue their IP and UDP length fields must say so.
TEST(RunTxEthernetFlows, EndMarkersLongerThanDataPayloadHaveTheirOwnLengths) {
  const Config c{1, false, 32, 100};
  const auto plan = make_plan<Layer::ethernet>(c);
  ASSERT_EQ(plan.end_payload.len, 64u);
  const auto run = transmit<Layer::ethernet>(plan, pushy({}));
  ASSERT_EQ(run.q->log.size(), 103u);
  for (size_t i = 100; i < 103; ++i) {
    net::ParsedUdp p;
    const auto pl = payload_of<Layer::ethernet>(run.q->log[i].bytes, &p);
    ASSERT_EQ(p.status, net::ParseStatus::ok);
    EXPECT_EQ(p.payload_len, 64u) << "end marker " << i - 100 << ": UDP length of the data packets";
    EXPECT_EQ(decode(pl).verdict, wire::Verdict::end) << "end marker " << i - 100;
  }
  const auto rx = receive<Layer::ethernet>(delivered(run));
  EXPECT_EQ(rx.counters.end_markers, 3u);
  EXPECT_EQ(rx.counters.malformed, 0u);
}

// A size mix (pktgen --size 18,100,1000 --weights 1,2,3): through partial,
// refused and failed commits and on reused slots, the k-th data packet taken
// has the size the cycle names at k (a failed one too: it was sent, the OS
// refused it), its lengths and UDP checksum are right for that size, and
// the receiver takes every one that was delivered.
template <Layer L>
void check_size_mix(bool ipv6) {
  const std::vector<uint32_t> sizes{18, 100, 1000};
  const std::vector<uint8_t> cycle = engine::size_mix_cycle({1, 2, 3});
  Config c{2, ipv6, 1000, 999};
  engine::TxPlan plan = make_plan<L>(c);
  for (uint32_t s : sizes) plan.mix.push_back(wire::PayloadPlan::make(s));
  plan.mix_cycle = cycle;
  plan.end_body.data_size = 0;
  for (uint16_t f = 0; f < c.flows; ++f)
    for (uint32_t s : sizes) {
      plan.flows[f].mix_headers.emplace_back();
      if constexpr (L == Layer::ethernet) net::build_udp_headers(plan.flows[f].mix_headers.back().bytes, endpoints(ipv6, f), s);
    }
  const auto run = transmit<L>(plan, pushy({5, 250, 251, 777}));
  const auto& r = run.result;
  EXPECT_EQ(r.counters.packets, c.quota);
  EXPECT_EQ(r.counters.failed, 4u);
  std::vector<uint64_t> want(sizes.size(), 0);
  uint64_t bytes = 0, k = 0, wrong_size = 0, bad = 0;
  for (const TxRecord& rec : run.q->log) {
    net::ParsedUdp parsed;
    const auto pl = payload_of<L>(rec.bytes, &parsed);
    const wire::Decoded d = decode(pl);
    if (d.verdict == wire::Verdict::end) continue;
    if (d.verdict != wire::Verdict::data) ++bad;
    if constexpr (L == Layer::ethernet) {
      if (!net::udp_checksums_ok(rec.bytes, parsed)) ++bad;
    }
    const uint8_t cls = cycle[k++ % cycle.size()];
    ++want[cls];
    bytes += sizes[cls];
    if (pl.size() != sizes[cls]) ++wrong_size;
  }
  EXPECT_EQ(k, c.quota);
  EXPECT_EQ(bad, 0u) << "data frames that do not decode or whose UDP checksum is wrong";
  EXPECT_EQ(wrong_size, 0u) << "data packets whose size is not the one the cycle names";
  EXPECT_EQ(r.mix_packets, want);
  EXPECT_EQ(r.counters.payload_bytes, bytes);
  const auto rx = receive<L>(delivered(run));
  EXPECT_EQ(rx.counters.data, c.quota - 4);
  EXPECT_EQ(rx.counters.corrupt + rx.counters.malformed, 0u);
}

TEST(RunTxSizeMix, UdpPayloadSizesFollowTheCycle) { check_size_mix<Layer::udp_payload>(false); }
TEST(RunTxSizeMix, EthernetSizesFollowTheCycleWithTheirOwnHeaders) { check_size_mix<Layer::ethernet>(false); }
TEST(RunTxSizeMix, EthernetIpv6) { check_size_mix<Layer::ethernet>(true); }

// The cycle: each size's share exact over one cycle, spread so that no size
// waits longer than its share allows, ties to the size listed first.
TEST(SizeMixCycle, WeightsExactPerCycleAndInterleaved) {
  const std::vector<uint8_t> imix = engine::size_mix_cycle({7, 4, 1});
  EXPECT_EQ(imix, (std::vector<uint8_t>{0, 1, 0, 0, 1, 0, 2, 0, 1, 0, 1, 0}));
  const std::vector<uint32_t> weights{5, 1, 30, 2};
  const std::vector<uint8_t> cycle = engine::size_mix_cycle(weights);
  ASSERT_EQ(cycle.size(), 38u);
  for (uint8_t k = 0; k < weights.size(); ++k) {
    EXPECT_EQ(static_cast<uint32_t>(std::count(cycle.begin(), cycle.end(), k)), weights[k]) << "size " << int{k};
    // Any window of the cycle (wrapping) holds size k within two packets of its share.
    for (size_t start = 0; start < cycle.size(); ++start)
      for (size_t len = 1; len <= cycle.size(); ++len) {
        size_t n = 0;
        for (size_t i = 0; i < len; ++i) n += cycle[(start + i) % cycle.size()] == k;
        const double share = static_cast<double>(len) * weights[k] / 38.0;
        EXPECT_LT(std::abs(static_cast<double>(n) - share), 2.0) << "size " << int{k} << " window " << start << "+" << len;
      }
  }
  EXPECT_EQ(engine::size_mix_cycle({1, 1}), (std::vector<uint8_t>{0, 1}));
}

// pktgen --replay: a capture's frames go out whole, byte for byte, in file
// order and from the first again after the last, through partial commits,
// refused commits and empty reserves; no end markers of the engine's own.
TEST(RunTxReplay, FramesGoOutWholeInFileOrderLoopingToTheQuota) {
  auto frames = std::make_shared<net::PcapFrames>();
  frames->offsets.push_back(0);
  for (uint32_t len : {60u, 1514u, 97u}) {
    for (uint32_t i = 0; i < len; ++i) frames->bytes.push_back(static_cast<uint8_t>(len + i * 7));
    frames->offsets.push_back(static_cast<uint32_t>(frames->bytes.size()));
    frames->t_ns.push_back(0);
    frames->max_len = std::max(frames->max_len, len);
  }
  engine::TxPlan plan = make_plan<Layer::ethernet>({1, false, 64, 10});
  plan.replay = frames;
  const auto run = transmit<Layer::ethernet>(plan, TxBehaviour{});
  ASSERT_EQ(run.q->log.size(), 10u);
  uint64_t bytes = 0;
  for (size_t i = 0; i < run.q->log.size(); ++i) {
    const std::span<const uint8_t> want = frames->frame(i % 3);
    EXPECT_EQ(run.q->log[i].bytes, std::vector<uint8_t>(want.begin(), want.end())) << "frame " << i;
    bytes += want.size();
  }
  EXPECT_EQ(run.result.counters.packets, 10u);
  EXPECT_EQ(run.result.counters.end_markers, 0u);
  EXPECT_EQ(run.result.counters.payload_bytes, bytes);
  EXPECT_EQ(run.q->contract_errors, 0u);
  EXPECT_EQ(run.q->oversize, 0u);
}

// pktgen --replay --replay-stamp: a capture of three UDP flows (sizes from
// the short form up) and frames with no room for a stamp, replayed through
// partial commits: every UDP frame carries our payload for its flow's stream
// with the next sequence, the rest go out byte for byte, and the engine's
// own receiver counts each flow exactly, its end markers believed.
TEST(RunTxReplay, StampedFramesCountExactlyPerFlowAndTheRestGoOutAsTheyAre) {
  auto frames = std::make_shared<net::PcapFrames>();
  frames->offsets.push_back(0);
  auto add = [&](const std::vector<uint8_t>& f) {
    frames->bytes.insert(frames->bytes.end(), f.begin(), f.end());
    frames->offsets.push_back(static_cast<uint32_t>(frames->bytes.size()));
    frames->t_ns.push_back(0);
    frames->max_len = std::max(frames->max_len, static_cast<uint32_t>(f.size()));
  };
  std::vector<uint64_t> per_flow(3, 0);
  std::vector<size_t> as_is;
  for (uint32_t i = 0; i < 90; ++i) {
    const uint16_t flow = static_cast<uint16_t>(i % 3);
    const uint32_t payload = (i % 3 == 0) ? 18 : (i % 3 == 1) ? 100 : 1000;
    std::vector<uint8_t> f(net::kMaxHeadersBytes + payload, static_cast<uint8_t>(i));
    f.resize(net::build_udp_headers(f, endpoints(false, flow), payload) + payload);
    net::udp_finish_checksum(f, false);
    add(f);
    ++per_flow[flow];
    if (i % 30 == 0) {
      std::vector<uint8_t> tiny(net::kMaxHeadersBytes + 10, 0xab);  // 10 B of payload: no room for a stamp
      tiny.resize(net::build_udp_headers(tiny, endpoints(false, 7), 10) + 10);
      net::udp_finish_checksum(tiny, false);
      as_is.push_back(frames->size());
      add(tiny);
    }
  }
  engine::TxPlan plan = make_plan<Layer::ethernet>({1, false, 64, 0});
  plan.replay = frames;
  plan.quota = frames->size();
  plan.end_markers = 2;
  engine::stamp_replay(plan, 4242, 16);
  ASSERT_EQ(plan.flows.size(), 3u);
  const auto run = transmit<Layer::ethernet>(plan, pushy({}));
  const std::vector<std::vector<uint8_t>> out = delivered(run);
  ASSERT_EQ(out.size(), frames->size() + 2 * 3);
  for (size_t i : as_is) {
    const std::span<const uint8_t> want = frames->frame(i);
    EXPECT_EQ(out[i], std::vector<uint8_t>(want.begin(), want.end())) << "frame " << i << " went out changed";
  }
  for (size_t i = 0; i < frames->size(); ++i) {
    const net::ParsedUdp p = net::parse_udp_frame(out[i]);
    ASSERT_EQ(p.status, net::ParseStatus::ok) << i;
    EXPECT_TRUE(net::udp_checksums_ok(out[i], p)) << "frame " << i;
    EXPECT_EQ(out[i].size(), frames->frame(i).size()) << "frame " << i << " changed length";
  }
  const engine::RxResult rx = receive<Layer::ethernet>(out);
  ASSERT_EQ(rx.streams.size(), 3u);
  for (const engine::RxStreamState& st : rx.streams) {
    const net::SenderAddress& from = st.key.from;
    const uint16_t flow = static_cast<uint16_t>(from.port - kSrcPortBase);
    ASSERT_LT(flow, 3u);
    EXPECT_EQ(st.key.stream, flow);
    EXPECT_EQ(st.key.sender, 4242);
    EXPECT_EQ(st.seq.counts().unique, per_flow[flow]) << "flow " << flow;
    EXPECT_EQ(st.seq.counts().duplicates, 0u);
    EXPECT_TRUE(st.ended) << "flow " << flow << ": its end markers were believed";
    EXPECT_EQ(st.end.total_sent, per_flow[flow]);
    EXPECT_EQ(st.corrupt, 0u);
  }
  EXPECT_EQ(rx.counters.foreign, as_is.size());  // the 10 B datagrams: not ours
}

}  // namespace
