// rx --layers (src/report/layers.hpp): rows per stream key at the driver and
// the application layer, the difference, and what the sockets' drops explain.
#include "report/layers.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace {

using rateline::engine::RxResult;
using rateline::engine::RxStreamState;
using rateline::net::SenderAddress;

// Sequences [0, n) of stream `stream` of sender `sender` at 192.0.2.`host`:7000.
void receive(RxResult& r, uint8_t host, uint16_t sender, uint16_t stream, uint64_t n) {
  RxStreamState& s = r.streams.emplace_back();
  const uint8_t ip[4] = {192, 0, 2, host};
  s.key = {SenderAddress::v4(ip, 7000), sender, stream};
  s.seen = true;
  for (uint64_t q = 0; q < n; ++q) s.seq.record(q);
  ++r.counters.streams_seen;
  r.counters.data += n;
}

TEST(Layers, TwoSendersWithOneStreamIdAreTwoRows) {
  RxResult driver, app;
  receive(driver, 1, 11, 0, 1000);
  receive(driver, 2, 22, 0, 500);
  receive(app, 1, 11, 0, 990);
  receive(app, 2, 22, 0, 500);
  app.counters.backend_drops = 4;  // the sockets explain 4 of the 10
  const auto d = rateline::report::summarize({driver}, 0), a = rateline::report::summarize({app}, 0);

  const nlohmann::json j = rateline::report::layers_json(d, a, false);
  ASSERT_EQ(j["streams"].size(), 2u);
  EXPECT_EQ(j["streams"][0]["from"], "192.0.2.1:7000");
  EXPECT_EQ(j["streams"][0]["sender_id"], 11);
  EXPECT_EQ(j["streams"][0]["difference"], 10);
  EXPECT_EQ(j["streams"][1]["from"], "192.0.2.2:7000");
  EXPECT_EQ(j["streams"][1]["difference"], 0);
  EXPECT_EQ(j["driver_received"], 1500);
  EXPECT_EQ(j["application_received"], 1490);
  EXPECT_EQ(j["difference"], 10);
  EXPECT_EQ(j["socket_drops"], 4);

  const std::string t = rateline::report::layers_table(d, a, "veth1");
  EXPECT_NE(t.find("192.0.2.1:7000"), std::string::npos) << t;
  EXPECT_NE(t.find("192.0.2.2:7000"), std::string::npos) << t;
  EXPECT_NE(t.find("socket drops (sk_drops) 4, unexplained 6"), std::string::npos) << t;
}

}  // namespace
