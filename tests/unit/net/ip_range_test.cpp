// Address ranges (src/net/ip_range.hpp): what --dst and --src-ip accept.
#include "net/ip_range.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace {

using rateline::net::ip_text;
using rateline::net::parse_ip_range;

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

}  // namespace
