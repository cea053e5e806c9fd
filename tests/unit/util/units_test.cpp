// Command-line unit parsers (src/util/units.hpp). Every error is
// std::invalid_argument with a message.
#include "util/units.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "util/clock.hpp"

namespace {

using namespace rateline::units;
using rateline::kNsPerMs;
using rateline::kNsPerUs;

// Fails unless `f` throws std::invalid_argument (nothing else) with a non-empty message.
template <class F>
void expect_invalid(F f, const std::string& input) {
  try {
    f();
    ADD_FAILURE() << "'" << input << "' was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_FALSE(std::string(e.what()).empty()) << "'" << input << "': empty message";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "'" << input << "' threw something other than invalid_argument: " << e.what();
  }
}

// ---- durations ----

TEST(ParseDuration, UnitsAndDecimals) {
  EXPECT_EQ(parse_duration_ns("250us", kNsPerMs), 250'000u);
  EXPECT_EQ(parse_duration_ns("1.5ms", kNsPerMs), 1'500'000u);
  EXPECT_EQ(parse_duration_ns("2s", kNsPerMs), 2'000'000'000u);
  EXPECT_EQ(parse_duration_ns("1min", kNsPerMs), 60'000'000'000u);
  EXPECT_EQ(parse_duration_ns("7ns", kNsPerMs), 7u);
  EXPECT_EQ(parse_duration_ns("0.5us", kNsPerMs), 500u);
  EXPECT_EQ(parse_duration_ns(" 3 ms ", kNsPerMs), 3'000'000u);
}

TEST(ParseDuration, BareNumberUsesDefaultUnit) {
  EXPECT_EQ(parse_duration_ns("10", kNsPerMs), 10'000'000u);
  EXPECT_EQ(parse_duration_ns("10", kNsPerUs), 10'000u);
  EXPECT_EQ(parse_duration_ns("2.5", kNsPerMs), 2'500'000u);
}

TEST(ParseDuration, ZeroIsZero) {
  EXPECT_EQ(parse_duration_ns("0", kNsPerMs), 0u);
  EXPECT_EQ(parse_duration_ns("0s", kNsPerMs), 0u);
}

TEST(ParseDuration, Errors) {
  for (const char* s : {"", "   ", "-1", "abc", "5parsecs", "1e400", "1e3ms", ".", "1.2.3ms", "ms", "+5ms",
                        "nan", "inf", "1000000000s"})
    expect_invalid([&] { parse_duration_ns(s, kNsPerMs); }, s);
}

// ---- counts ----

TEST(ParseCount, PlainAndSuffixed) {
  EXPECT_EQ(parse_count("100000"), 100'000u);
  EXPECT_EQ(parse_count("100k"), 100'000u);
  EXPECT_EQ(parse_count("100K"), 100'000u);
  EXPECT_EQ(parse_count("1M"), 1'000'000u);
  EXPECT_EQ(parse_count("2G"), 2'000'000'000u);
  EXPECT_EQ(parse_count("1.5k"), 1500u);
  EXPECT_EQ(parse_count("0"), 0u);
  EXPECT_EQ(parse_count("4294967296"), 4'294'967'296u);
}

TEST(ParseCount, Errors) {
  for (const char* s : {"1.5", "1Q", "", "-3", "abc", "1.0001k", "10m", "1e6"})
    expect_invalid([&] { parse_count(s); }, s);
}

TEST(ParseCount, HugeValuesAreExactOrRejectedNeverWrapped) {
  // The header promises values that would overflow are rejected, not wrapped.
  // 10^19 fits in uint64_t (max ~1.8447e19): it must come back exactly or be refused.
  for (const char* s : {"10000000000000000000", "10000000000G", "9300000000000000000"}) {
    try {
      const uint64_t v = parse_count(s);
      const uint64_t want = std::string(s) == "9300000000000000000" ? 9'300'000'000'000'000'000ull
                                                                    : 10'000'000'000'000'000'000ull;
      EXPECT_EQ(v, want) << "'" << s << "' parsed to a wrong value";
    } catch (const std::invalid_argument&) {
      SUCCEED();
    }
  }
  expect_invalid([] { parse_count("20000000000000000000"); }, "2e19");
  expect_invalid([] { parse_count("100000000000G"); }, "1e20 via G");
}

// ---- bytes ----

TEST(ParseBytes, BinarySuffixes) {
  EXPECT_EQ(parse_bytes("8"), 8u);
  EXPECT_EQ(parse_bytes("8B"), 8u);
  EXPECT_EQ(parse_bytes("4k"), 4096u);
  EXPECT_EQ(parse_bytes("4K"), 4096u);
  EXPECT_EQ(parse_bytes("4KiB"), 4096u);
  EXPECT_EQ(parse_bytes("1M"), 1'048'576u);
  EXPECT_EQ(parse_bytes("1MiB"), 1'048'576u);
  EXPECT_EQ(parse_bytes("1GiB"), 1'073'741'824u);
  EXPECT_EQ(parse_bytes("1.5k"), 1536u);
}

TEST(ParseBytes, Errors) {
  for (const char* s : {"", "x", "-8", "4kb", "1.3", "0.1k", "4TiB"}) expect_invalid([&] { parse_bytes(s); }, s);
}

// ---- rates ----

TEST(ParseRate, PacketRates) {
  const Rate a = parse_rate("100000");
  EXPECT_EQ(a.unit, RateUnit::pps);
  EXPECT_DOUBLE_EQ(a.value, 100000.0);
  const Rate b = parse_rate("10kpps");
  EXPECT_EQ(b.unit, RateUnit::pps);
  EXPECT_DOUBLE_EQ(b.value, 10000.0);
  const Rate c = parse_rate("1.5Mpps");
  EXPECT_EQ(c.unit, RateUnit::pps);
  EXPECT_DOUBLE_EQ(c.value, 1.5e6);
  const Rate d = parse_rate("100k");
  EXPECT_EQ(d.unit, RateUnit::pps);
  EXPECT_DOUBLE_EQ(d.value, 1e5);
}

TEST(ParseRate, BitRatesUseDecimalPrefixes) {
  const Rate a = parse_rate("100Mbit");
  EXPECT_EQ(a.unit, RateUnit::bits_per_sec);
  EXPECT_DOUBLE_EQ(a.value, 1e8);
  const Rate b = parse_rate("1Gbps");
  EXPECT_EQ(b.unit, RateUnit::bits_per_sec);
  EXPECT_DOUBLE_EQ(b.value, 1e9);
  const Rate c = parse_rate("500kbit/s");
  EXPECT_EQ(c.unit, RateUnit::bits_per_sec);
  EXPECT_DOUBLE_EQ(c.value, 5e5);
  const Rate d = parse_rate("1G bit/s");
  EXPECT_EQ(d.unit, RateUnit::bits_per_sec);
  EXPECT_DOUBLE_EQ(d.value, 1e9);
  const Rate e = parse_rate("2.5Gbit");
  EXPECT_DOUBLE_EQ(e.value, 2.5e9);
}

TEST(ParseRate, Errors) {
  for (const char* s : {"0", "fast", "", "0pps", "-5", "10xyz", "10Mbyte", "1e3"})
    expect_invalid([&] { parse_rate(s); }, s);
}

// ---- ports ----

TEST(ParsePortRange, SinglePort) {
  const PortRange r = parse_port_range("5000");
  EXPECT_EQ(r.first, 5000);
  EXPECT_EQ(r.last, 5000);
  EXPECT_EQ(r.count(), 1u);
}

TEST(ParsePortRange, Range) {
  const PortRange r = parse_port_range("5000-5007");
  EXPECT_EQ(r.first, 5000);
  EXPECT_EQ(r.last, 5007);
  EXPECT_EQ(r.count(), 8u);
  EXPECT_EQ(parse_port_range("1-65535").count(), 65535u);
  EXPECT_EQ(parse_port_range("65535").first, 65535);
  EXPECT_EQ(parse_port_range(" 10 - 12 ").count(), 3u);
}

TEST(ParsePortRange, Errors) {
  for (const char* s : {"0", "70000", "65536", "9-3", "a-b", "", "5000-", "-5000", "0-10", "10-70000", "5000x",
                        "1-2-3"})
    expect_invalid([&] { parse_port_range(s); }, s);
}

// ---- formatting ----

TEST(Formatting, SiAndDurationText) {
  EXPECT_EQ(si(812'345), "812.3k");
  EXPECT_EQ(si(1'200'000, 2), "1.20M");
  EXPECT_EQ(si(999), "999.0");
  EXPECT_EQ(si(3.5e9), "3.5G");
  EXPECT_EQ(duration_text(500), "500ns");
  EXPECT_EQ(duration_text(250'000), "250us");
  EXPECT_EQ(duration_text(1'500'000), "1.5ms");
  EXPECT_EQ(duration_text(2'000'000'000), "2.000s");
}

}  // namespace
