// pktgen/rx --key-file: the per-packet tag (wire/packet_tag.hpp) as the send
// loop writes it and the receive loop checks it, through the fake queues of
// loop_harness.hpp: a keyed run is counted exactly, and nothing without the
// key's tag is decoded at all.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "loop_harness.hpp"
#include "util/key_file.hpp"
#include "wire/packet_tag.hpp"

namespace {

using namespace rateline;
using namespace rateline::loop_harness;

wire::PacketKey key_of(unsigned char fill) {
  secret::Key s;
  s.fill(fill);
  return wire::packet_key(s);
}

// make_plan's flows and headers, with every payload tagged: the test payload
// plans are kTagBytes shorter than the UDP payloads the headers announce.
template <Layer L>
engine::TxPlan tagged_plan(const Config& c, const wire::PacketKey& key) {
  engine::TxPlan p = make_plan<L>(c);
  p.payload = wire::PayloadPlan::make(c.payload - wire::kTagBytes);
  p.end_payload = wire::end_marker_plan(c.payload - wire::kTagBytes);
  p.tag_bytes = wire::kTagBytes;
  p.tag_key = key;
  if constexpr (L == Layer::ethernet)
    for (uint16_t f = 0; f < c.flows; ++f)
      net::build_udp_headers(p.flows[f].end_headers, endpoints(c.ipv6, f), wire::kTagBytes + p.end_payload.len);
  return p;
}

TEST(PacketTag, CoversTheHeaderAndAnEndMarkersBodyAndNothingElseChangesIt) {
  const wire::PacketKey key = key_of(7);
  std::vector<uint8_t> p(wire::kTagBytes + 1400);
  const wire::PayloadPlan pl = wire::PayloadPlan::make(1400);
  wire::fill_data_payload(p.data() + wire::kTagBytes, pl, 3, 12345, 999);
  wire::put_tag(key, p.data(), 1400);
  ASSERT_TRUE(wire::tag_ok(key, p.data(), static_cast<uint32_t>(p.size())));
  EXPECT_FALSE(wire::tag_ok(key_of(8), p.data(), static_cast<uint32_t>(p.size()))) << "another key";
  // Every bit of the tag and of the 64 bytes it covers matters.
  for (uint32_t i = 0; i < wire::kTagBytes + wire::kTagCoverBytes; ++i)
    for (int bit = 0; bit < 8; ++bit) {
      p[i] ^= static_cast<uint8_t>(1 << bit);
      EXPECT_FALSE(wire::tag_ok(key, p.data(), static_cast<uint32_t>(p.size()))) << "byte " << i << " bit " << bit;
      p[i] ^= static_cast<uint8_t>(1 << bit);
    }
  // Past them the payload checksum (which the tag covers) is the check.
  p[wire::kTagBytes + 200] ^= 1;
  EXPECT_TRUE(wire::tag_ok(key, p.data(), static_cast<uint32_t>(p.size())));
  EXPECT_EQ(wire::decode(p.data() + wire::kTagBytes, 1400).verdict, wire::Verdict::corrupt);
  EXPECT_FALSE(wire::tag_ok(key, p.data(), wire::kTagBytes - 1)) << "shorter than a tag";
}

TEST(PacketTag, KeyComesFromTheKeyFileAndIsNotTheSecretItself) {
  char dir_template[] = "/tmp/rateline-tag-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string path = dir + "/key";
  secret::make_key_file(path);
  const secret::Key s = secret::load_key_file(path);
  const wire::PacketKey a = wire::packet_key(s), b = wire::packet_key(secret::load_key_file(path));
  EXPECT_EQ(a.bytes, b.bytes) << "both ends derive the same key from one file";
  EXPECT_NE(0, std::memcmp(a.bytes.data(), s.data(), a.bytes.size())) << "the SipHash key is derived, not the secret";
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

class TaggedRun : public ::testing::TestWithParam<std::tuple<bool, uint32_t>> {};  // IPv6, UDP payload

// Through partial and refused commits: every frame carries valid UDP
// checksums (the tag's share added without reading it back), and a keyed
// receiver counts the run exactly.
TEST_P(TaggedRun, KeyedSenderIsCountedExactlyByAKeyedReceiver) {
  const auto [v6, payload] = GetParam();
  const Config c{2, v6, payload, 1000};
  const wire::PacketKey key = key_of(1);
  const auto plan = tagged_plan<Layer::ethernet>(c, key);
  const auto run = transmit<Layer::ethernet>(plan, pushy({}));  // no refusals for good: check_rx reads streams untagged
  EXPECT_EQ(run.result.counters.packets, c.quota);
  EXPECT_EQ(run.result.counters.payload_bytes, c.quota * payload) << "the tag is part of the payload sent";
  uint64_t data = 0, ends = 0;
  for (const TxRecord& rec : run.q->log) {
    net::ParsedUdp parsed;
    const auto pl = payload_of<Layer::ethernet>(rec.bytes, &parsed);
    ASSERT_TRUE(net::udp_checksums_ok(rec.bytes, parsed));
    ASSERT_TRUE(wire::tag_ok(key, pl.data(), static_cast<uint32_t>(pl.size())));
    const wire::Decoded d = decode(pl.subspan(wire::kTagBytes));
    data += d.verdict == wire::Verdict::data;
    ends += d.verdict == wire::Verdict::end;
    if (d.verdict == wire::Verdict::data) {
      EXPECT_EQ(pl.size(), payload);
    }
  }
  EXPECT_EQ(data, c.quota);
  EXPECT_EQ(ends, 3u * c.flows);
  const auto rx = receive<Layer::ethernet>(delivered(run), key);
  check_rx(c, run, rx);
  EXPECT_EQ(rx.counters.unauthenticated, 0u);
  EXPECT_EQ(rx.counters.bad_udp_checksum, 0u);
}

INSTANTIATE_TEST_SUITE_P(Sizes, TaggedRun,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(26u, 31u, 40u, 72u, 1400u)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "ipv6_" : "ipv4_") +
                                  std::to_string(std::get<1>(info.param));
                         });

// A keyed receiver decodes nothing without the key's tag: not an untagged
// run (its markers included), not one tagged with another key, not a
// tagged packet with a flipped bit; none of them makes a stream. The keyed
// sender among them is counted exactly.
TEST(TaggedRun, NothingWithoutTheKeysTagTouchesAStream) {
  const Config c{1, false, 64, 1000};
  const wire::PacketKey key = key_of(1);
  const auto keyed = transmit<Layer::ethernet>(tagged_plan<Layer::ethernet>(c, key), pushy({}));
  auto frames = delivered(keyed);
  const size_t n_keyed = frames.size();
  const Config stranger{2, false, 64, 500};
  for (const auto& f : delivered(transmit<Layer::ethernet>(make_plan<Layer::ethernet>(stranger), pushy({})))) frames.push_back(f);
  for (const auto& f : delivered(transmit<Layer::ethernet>(tagged_plan<Layer::ethernet>(stranger, key_of(2)), pushy({}))))
    frames.push_back(f);
  auto flipped = frames[10];  // the keyed sender's own packet, one bit off in its sequence, checksums made good again
  flipped[net::headers_len(false) + wire::kTagBytes + 15] ^= 1;
  net::udp_finish_checksum(flipped, false);
  frames.push_back(flipped);
  const uint64_t strangers = frames.size() - n_keyed;
  const auto rx = receive<Layer::ethernet>(frames, key);
  EXPECT_EQ(rx.counters.unauthenticated, strangers);
  EXPECT_EQ(rx.counters.frames, frames.size());
  ASSERT_EQ(rx.streams.size(), 1u) << "only the keyed sender's stream exists";
  const engine::RxStreamState& s = *rx.find(stream_id(0));
  EXPECT_TRUE(s.ended);
  EXPECT_EQ(s.seq.counts().unique, c.quota);
  EXPECT_EQ(s.seq.counts().duplicates, 0u);
  EXPECT_EQ(s.seq.lost_given_total(s.end.total_sent), 0u);
  EXPECT_EQ(rx.counters.corrupt + rx.counters.malformed + rx.counters.foreign, 0u);
  const report::RxSummary sum = report::summarize({rx}, 0);
  EXPECT_EQ(sum.unique, c.quota);
  EXPECT_EQ(sum.lost, 0u);
  EXPECT_EQ(sum.totals.unauthenticated, strangers);
}

// A receiver without a key sees a tagged payload as someone else's UDP: the
// tag is where our magic would be.
TEST(TaggedRun, AnUnkeyedReceiverCountsTaggedPacketsAsForeign) {
  const Config c{1, false, 1400, 300};
  const auto run = transmit<Layer::ethernet>(tagged_plan<Layer::ethernet>(c, key_of(1)), pushy({}));
  const auto rx = receive<Layer::ethernet>(delivered(run));
  EXPECT_EQ(rx.counters.data, 0u);
  EXPECT_EQ(rx.counters.foreign + rx.counters.malformed + rx.counters.corrupt, rx.counters.frames);
}

}  // namespace
