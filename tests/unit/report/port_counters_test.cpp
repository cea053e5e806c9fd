// A port's own counters as printed and as carried in the JSON (src/report/port_counters.hpp).
#include "report/port_counters.hpp"

#include <gtest/gtest.h>

namespace {

TEST(PortCounters, TextAndJsonCarryEveryCounter) {
  rateline::report::PortCounters c;
  c.ipackets = 3003;
  c.opackets = 7;
  c.imissed = 2;
  c.xstats = {{"rx_good_packets", 3003}, {"rx_q0_errors", 1}};
  EXPECT_EQ(rateline::report::port_counters_text(c),
            "ipackets 3003, opackets 7, imissed 2, ierrors 0, oerrors 0, rx_nombuf 0; xstats: rx_good_packets 3003, "
            "rx_q0_errors 1");
  c.xstats.clear();
  EXPECT_EQ(rateline::report::port_counters_text(c), "ipackets 3003, opackets 7, imissed 2, ierrors 0, oerrors 0, rx_nombuf 0");
  const nlohmann::json j = rateline::report::port_counters_json(c, {"net_af_packet0", 1, "net_af_packet"});
  EXPECT_EQ(j["port"], "net_af_packet0");
  EXPECT_EQ(j["port_id"], 1);
  EXPECT_EQ(j["driver"], "net_af_packet");
  EXPECT_EQ(j["ipackets"], 3003);
  EXPECT_EQ(j["imissed"], 2);
  EXPECT_TRUE(j["xstats"].empty());
}

}  // namespace
