// Layer rates and the udp_bench settings string (src/report/rates.hpp).
#include "report/rates.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

namespace {

using rateline::net::FrameSizes;
using namespace rateline::report;

TEST(RatesFor, GigabitOf1400BytePayloads) {
  // REFERENCE: 85,266 pps of 1400 B UDP payload over IPv4 fill 1 Gbit/s at L1.
  const FrameSizes s = FrameSizes::for_payload(1400, false);
  const Rates r = rates_for(85'266, s, 1.0);
  EXPECT_DOUBLE_EQ(r.pps, 85'266.0);
  EXPECT_NEAR(r.payload_mbps, 85'266.0 * 1400 * 8 / 1e6, 1e-9);  // 954.9792
  EXPECT_NEAR(r.l2_mbps, 85'266.0 * 1446 * 8 / 1e6, 1e-9);        // 986.357088
  EXPECT_NEAR(r.l1_mbps, 999.999648, 1e-6);
  EXPECT_NEAR(r.l1_mbps, 1000.0, 0.001);
}

TEST(RatesFor, ScalesWithTime) {
  const FrameSizes s = FrameSizes::for_payload(1400, false);
  const Rates a = rates_for(85'266, s, 1.0);
  const Rates b = rates_for(2 * 85'266, s, 2.0);
  EXPECT_DOUBLE_EQ(a.pps, b.pps);
  EXPECT_DOUBLE_EQ(a.l1_mbps, b.l1_mbps);
  const Rates c = rates_for(1000, s, 0.5);
  EXPECT_DOUBLE_EQ(c.pps, 2000.0);
}

TEST(RatesFor, MinimumFramesUsePaddedSize) {
  const FrameSizes s = FrameSizes::for_payload(18, false);  // 64 B frame, 84 B on the wire
  const Rates r = rates_for(1'488'095, s, 1.0);             // 1 Gbit/s of minimum frames
  EXPECT_NEAR(r.l1_mbps, 1'488'095.0 * 84 * 8 / 1e6, 1e-9);
  EXPECT_NEAR(r.l2_mbps, 1'488'095.0 * 64 * 8 / 1e6, 1e-9);
  EXPECT_NEAR(r.payload_mbps, 1'488'095.0 * 18 * 8 / 1e6, 1e-9);
}

TEST(RatesFor, ZeroOrNegativeTimeGivesZeros) {
  const FrameSizes s = FrameSizes::for_payload(1400, false);
  for (double t : {0.0, -1.0}) {
    const Rates r = rates_for(1'000'000, s, t);
    EXPECT_EQ(r.pps, 0.0) << t;
    EXPECT_EQ(r.payload_mbps, 0.0) << t;
    EXPECT_EQ(r.l2_mbps, 0.0) << t;
    EXPECT_EQ(r.l1_mbps, 0.0) << t;
  }
}

TEST(LineRate, PercentNeedsLinkSpeed) {
  const Rates r = rates_for(85'266, FrameSizes::for_payload(1400, false), 1.0);
  EXPECT_FALSE(line_rate_percent(r, std::nullopt).has_value());
  EXPECT_FALSE(line_rate_percent(r, 0.0).has_value());
  EXPECT_FALSE(line_rate_percent(r, -100.0).has_value());
  const auto p = line_rate_percent(r, 1000.0);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(*p, 99.9999648, 1e-7);
  const auto q = line_rate_percent(r, 10'000.0);
  ASSERT_TRUE(q.has_value());
  EXPECT_NEAR(*q, 9.99999648, 1e-8);
}

TEST(LineRate, PpsThatFillsLink) {
  EXPECT_NEAR(line_rate_pps(FrameSizes::for_payload(1400, false), 1000.0), 1e9 / (1466 * 8.0), 1e-9);
  EXPECT_NEAR(line_rate_pps(FrameSizes::for_payload(18, false), 1000.0), 1e9 / (84 * 8.0), 1e-9);
  EXPECT_EQ(static_cast<uint64_t>(line_rate_pps(FrameSizes::for_payload(1400, false), 1000.0)), 85'266u);
}

TEST(SettingsText, BurstDelayCountSize) {
  EXPECT_EQ(settings_text(100, 0, 100'000, 1400), "100-0-100000-1400");
  EXPECT_EQ(settings_text(100, 1'500'000, 100'000, 1400), "100-1.5-100000-1400");
  EXPECT_EQ(settings_text(1, 10'000'000, 5, 32), "1-10-5-32");
  EXPECT_EQ(settings_text(10, 250'000, 7, 64), "10-0.25-7-64");
}

TEST(SettingsText, UnboundedCountIsDash) {
  EXPECT_EQ(settings_text(100, 0, 0, 1400), "100-0---1400");
}

}  // namespace
