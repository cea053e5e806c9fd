// The Prometheus exposition writer (label escaping, HELP/TYPE once per
// family, cumulative histogram buckets ending in +Inf with _sum and _count),
// the --metrics address parser, and the metrics server answering on loopback.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "report/metrics_server.hpp"
#include "report/prometheus_text.hpp"
#include "util/errors.hpp"

namespace rateline::report {
namespace {

TEST(PrometheusText, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(escape_label_value(R"(a"b\c)" "\nd"), R"(a\"b\\c\nd)");
  EXPECT_EQ(escape_label_value("plain 127.0.0.1:9000"), "plain 127.0.0.1:9000");
  EXPECT_EQ(escape_help("say \"x\" \\ y\nz"), "say \"x\" \\\\ y\\nz");
}

TEST(PrometheusText, FamilyHasHelpAndTypeOnceThenItsSamples) {
  PrometheusText page;
  page.family("rateline_x_packets_total", PrometheusText::Type::counter, "Packets.\nSecond line");
  page.sample({{"worker", "0"}}, 5);
  page.sample({{"worker", "1"}, {"from", "a\"b"}}, 18446744073709551615ull);
  page.family("rateline_y", PrometheusText::Type::gauge, "A gauge.");
  page.sample({}, 0);
  page.sample_double({{"k", "v"}}, 0.25);
  EXPECT_EQ(page.text(),
            "# HELP rateline_x_packets_total Packets.\\nSecond line\n"
            "# TYPE rateline_x_packets_total counter\n"
            "rateline_x_packets_total{worker=\"0\"} 5\n"
            // Integer counts print exactly, all 20 digits (not 1.8446744073709552e+19).
            "rateline_x_packets_total{worker=\"1\",from=\"a\\\"b\"} 18446744073709551615\n"
            "# HELP rateline_y A gauge.\n"
            "# TYPE rateline_y gauge\n"
            "rateline_y 0\n"
            "rateline_y{k=\"v\"} 0.25\n");
}

TEST(PrometheusText, DoublesRoundTripAndSpecials) {
  EXPECT_EQ(prom_double(1.5), "1.5");
  EXPECT_EQ(prom_double(1.0 / 0.0), "+Inf");
  EXPECT_EQ(prom_double(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(prom_double(0.0 / 0.0), "NaN");
  EXPECT_EQ(std::stod(prom_double(0.1 + 0.2)), 0.1 + 0.2);
}

TEST(PrometheusText, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  PromHistogram h{{0.001, 0.01}, {2, 5}, 7, 0.5};
  PrometheusText page;
  page.family("rateline_lat_seconds", PrometheusText::Type::histogram, "Latency.");
  page.histogram({{"worker", "3"}}, h);
  EXPECT_EQ(page.text(),
            "# HELP rateline_lat_seconds Latency.\n"
            "# TYPE rateline_lat_seconds histogram\n"
            "rateline_lat_seconds_bucket{worker=\"3\",le=\"0.001\"} 2\n"
            "rateline_lat_seconds_bucket{worker=\"3\",le=\"0.01\"} 5\n"
            "rateline_lat_seconds_bucket{worker=\"3\",le=\"+Inf\"} 7\n"
            "rateline_lat_seconds_sum{worker=\"3\"} 0.5\n"
            "rateline_lat_seconds_count{worker=\"3\"} 7\n");
}

TEST(PrometheusText, LatencyBucketsFallOnPowerOfTwoEdgesExactly) {
  stats::LatencyHistogram lat;
  lat.record(1023);  // < 2^10: in the first bucket
  lat.record(1024);  // = 2^10: not <= 1.024 us's edge as counted (samples below 2^k), so in the next
  lat.record(2047);
  lat.record(5'000'000'000ull);  // 5 s: beyond the last bound, only in +Inf
  const PromHistogram p = latency_seconds(lat);
  ASSERT_EQ(p.bounds.size(), 21u);
  EXPECT_DOUBLE_EQ(p.bounds.front(), 1024e-9);
  EXPECT_DOUBLE_EQ(p.bounds.back(), 1073741824e-9);
  EXPECT_EQ(p.cumulative[0], 1u);
  EXPECT_EQ(p.cumulative[1], 3u);
  EXPECT_EQ(p.cumulative.back(), 3u);
  for (size_t i = 1; i < p.cumulative.size(); ++i) EXPECT_LE(p.cumulative[i - 1], p.cumulative[i]);
  EXPECT_EQ(p.count, 4u);
  EXPECT_DOUBLE_EQ(p.sum, (1023 + 1024 + 2047 + 5'000'000'000.0) / 1e9);
}

TEST(MetricsEndpoint, ParsesPortAddressAndIpv6) {
  MetricsEndpoint e = parse_metrics_endpoint("9464");
  EXPECT_EQ(e.address, "127.0.0.1");
  EXPECT_EQ(e.port, 9464);
  e = parse_metrics_endpoint("0.0.0.0:0");
  EXPECT_EQ(e.address, "0.0.0.0");
  EXPECT_EQ(e.port, 0);
  e = parse_metrics_endpoint("[::1]:9100");
  EXPECT_EQ(e.address, "::1");
  EXPECT_EQ(e.port, 9100);
  EXPECT_THROW(parse_metrics_endpoint("99999"), std::invalid_argument);
  EXPECT_THROW(parse_metrics_endpoint("nohost:80"), std::invalid_argument);
  EXPECT_THROW(parse_metrics_endpoint(":80"), std::invalid_argument);
  EXPECT_THROW(parse_metrics_endpoint("127.0.0.1:"), std::invalid_argument);
  EXPECT_THROW(parse_metrics_endpoint("80x"), std::invalid_argument);
}

std::string http_get(uint16_t port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return "connect failed";
  }
  (void)!::write(fd, request.data(), request.size());
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) reply.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return reply;
}

TEST(MetricsServer, ServesThePublishedPageAndRefusesTheRest) {
  MetricsServer server({"127.0.0.1", 0});
  const uint16_t port = static_cast<uint16_t>(std::stoi(server.listening().substr(server.listening().rfind(':') + 1)));
  ASSERT_NE(port, 0);
  server.start();
  server.publish("rateline_y 1\n");
  const std::string ok = http_get(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << ok;
  EXPECT_NE(ok.find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(ok.find("Content-Length: 13\r\n"), std::string::npos);
  EXPECT_EQ(ok.substr(ok.size() - 13), "rateline_y 1\n");
  EXPECT_EQ(http_get(port, "GET /other HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 404", 0), 0u);
  EXPECT_EQ(http_get(port, "POST /metrics HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 405", 0), 0u);
  // A second server on the same port is refused with the cause and the fix.
  try {
    MetricsServer again({"127.0.0.1", port});
    ADD_FAILURE() << "bound a taken port";
  } catch (const SetupError& e) {
    EXPECT_NE(std::string(e.what()).find("Give another port"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rateline::report
