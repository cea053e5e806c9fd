#include "report/layers.hpp"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <tuple>

namespace rateline::report {

namespace {

// A stream's rows at both layers, by who sent it and its id (ordered: the
// address text, then sender and stream ids).
using LayerRows = std::map<std::tuple<std::string, uint16_t, uint16_t>, std::pair<uint64_t, uint64_t>>;

LayerRows layer_rows(const RxSummary& driver, const RxSummary& app) {
  LayerRows rows;
  for (const StreamRow& r : driver.streams) rows[{r.key.from.text(), r.key.sender, r.key.stream}].first = r.unique;
  for (const StreamRow& r : app.streams) rows[{r.key.from.text(), r.key.sender, r.key.stream}].second = r.unique;
  return rows;
}

}  // namespace

std::string layers_table(const RxSummary& driver, const RxSummary& app, const std::string& where) {
  const LayerRows rows = layer_rows(driver, app);  // stream -> (driver, application)
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "layers: driver = XDP on %s, application = our sockets\n", where.c_str());
  out += line;
  std::snprintf(line, sizeof line, "%8s %-30s %14s %14s %14s\n", "stream", "from", "driver", "application", "difference");
  out += line;
  uint64_t td = 0, ta = 0;
  for (const auto& [key, v] : rows) {
    std::snprintf(line, sizeof line, "%8u %-30s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n", std::get<2>(key),
                  std::get<0>(key).c_str(), v.first, v.second, v.first > v.second ? v.first - v.second : 0);
    out += line;
    td += v.first;
    ta += v.second;
  }
  const uint64_t diff = td > ta ? td - ta : 0;
  std::snprintf(line, sizeof line, "%8s %-30s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n", "total", "", td, ta, diff);
  out += line;
  // sk_drops counts every datagram a full buffer refused, end markers too.
  const uint64_t drops = app.totals.backend_drops;
  const uint64_t markers = driver.totals.end_markers > app.totals.end_markers ? driver.totals.end_markers - app.totals.end_markers : 0;
  std::snprintf(line, sizeof line,
                "between the layers: %" PRIu64 " data packets and %" PRIu64 " end markers lost; socket drops (sk_drops) %"
                PRIu64 ", unexplained %" PRIu64 "\n",
                diff, markers, drops, diff + markers > drops ? diff + markers - drops : 0);
  out += line;
  return out;
}

nlohmann::json layers_json(const RxSummary& driver, const RxSummary& app, bool ipv6) {
  const LayerRows rows = layer_rows(driver, app);
  nlohmann::json streams = nlohmann::json::array();
  uint64_t td = 0, ta = 0;
  for (const auto& [key, v] : rows) {
    streams.push_back({{"stream", std::get<2>(key)}, {"from", std::get<0>(key)}, {"sender_id", std::get<1>(key)},
                       {"driver", v.first}, {"application", v.second},
                       {"difference", v.first > v.second ? v.first - v.second : 0}});
    td += v.first;
    ta += v.second;
  }
  nlohmann::json d = to_json(driver, ipv6);
  d.erase("type");
  d.erase("tool");
  return {{"driver", d}, {"driver_received", td}, {"application_received", ta},
          {"difference", td > ta ? td - ta : 0},
          {"end_markers_difference", driver.totals.end_markers > app.totals.end_markers ? driver.totals.end_markers - app.totals.end_markers : 0},
          {"socket_drops", app.totals.backend_drops}, {"streams", streams}};
}

}  // namespace rateline::report
