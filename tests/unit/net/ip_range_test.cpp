// Address ranges (src/net/ip_range.hpp): what --dst, --src-ip and --dst-mac accept.
#include "net/ip_range.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "net/iface.hpp"

namespace {

using rateline::net::ip_text;
using rateline::net::mac_text;
using rateline::net::parse_ip_range;
using rateline::net::parse_mac_range;

TEST(IpRange, OneAddressIsOneFlow) {
  const auto r = parse_ip_range("10.0.0.7", 4096);
  EXPECT_EQ(r.count, 1u);
  EXPECT_EQ(ip_text(r.at(0)), "10.0.0.7");
  EXPECT_EQ(r.text(), "10.0.0.7");
}

TEST(IpRange, CountsAcrossOctetBoundaries) {
  const auto r = parse_ip_range("10.0.0.254-10.0.1.2", 4096);
  ASSERT_EQ(r.count, 5u);
  EXPECT_EQ(ip_text(r.at(0)), "10.0.0.254");
  EXPECT_EQ(ip_text(r.at(1)), "10.0.0.255");
  EXPECT_EQ(ip_text(r.at(2)), "10.0.1.0");
  EXPECT_EQ(ip_text(r.at(4)), "10.0.1.2");
  EXPECT_EQ(r.text(), "10.0.0.254-10.0.1.2");
}

TEST(IpRange, Ipv6CarriesIntoHigherBytes) {
  const auto r = parse_ip_range("fd00::ffff-fd00::1:3", 4096);
  ASSERT_EQ(r.count, 5u);
  EXPECT_EQ(ip_text(r.at(1)), "fd00::1:0");
  EXPECT_EQ(ip_text(r.at(4)), "fd00::1:3");
}

TEST(IpRange, RefusesWhatIsNotARange) {
  for (const char* bad : {"10.0.0.9-10.0.0.1", "10.0.0.1-fd00::1", "host.example", "10.0.0.1-", "10.0.0.0-10.0.16.0",
                          "fd00::1-fd01::1", "fd01::1-fd00::1"})
    EXPECT_THROW(parse_ip_range(bad, 4096), std::invalid_argument) << bad;
  EXPECT_NO_THROW(parse_ip_range("10.0.0.0-10.0.15.255", 4096));
  EXPECT_THROW(parse_ip_range("10.0.0.0-10.0.16.0", 4096), std::invalid_argument);
}

TEST(MacRange, CountsAsOne48BitNumberAcrossByteBoundaries) {
  const auto r = parse_mac_range("02:00:00:00:00:fe-02:00:00:00:01:01", 4096);
  ASSERT_EQ(r.count, 4u);
  EXPECT_EQ(mac_text(r.at(0)), "02:00:00:00:00:fe");
  EXPECT_EQ(mac_text(r.at(2)), "02:00:00:00:01:00");
  EXPECT_EQ(mac_text(r.at(3)), "02:00:00:00:01:01");
  EXPECT_EQ(parse_mac_range("02:00:00:00:00:07", 4096).count, 1u);
  for (const char* bad : {"02:00:00:00:00:09-02:00:00:00:00:01", "02:00:00:00:00:01-", "02:00:00:00:00:00-02:00:00:00:10:00",
                          "not-a-mac"})
    EXPECT_THROW(parse_mac_range(bad, 4096), std::invalid_argument) << bad;
  EXPECT_NO_THROW(parse_mac_range("02:00:00:00:00:00-02:00:00:00:0f:ff", 4096));
}

}  // namespace
