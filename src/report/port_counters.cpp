#include "report/port_counters.hpp"

namespace rateline::report {

std::string port_counters_text(const PortCounters& c) {
  std::string t = "ipackets " + std::to_string(c.ipackets) + ", opackets " + std::to_string(c.opackets) + ", imissed " +
                  std::to_string(c.imissed) + ", ierrors " + std::to_string(c.ierrors) + ", oerrors " +
                  std::to_string(c.oerrors) + ", rx_nombuf " + std::to_string(c.rx_nombuf);
  if (c.pmd_socket_drops) t += ", PMD socket ring drops " + std::to_string(*c.pmd_socket_drops);
  if (!c.xstats.empty()) {
    t += "; xstats:";
    for (size_t i = 0; i < c.xstats.size(); ++i)
      t += (i ? ", " : " ") + c.xstats[i].first + " " + std::to_string(c.xstats[i].second);
  }
  return t;
}

nlohmann::json port_counters_json(const PortCounters& c, const PortIdentity& port) {
  nlohmann::json x = nlohmann::json::object();
  for (const auto& [name, value] : c.xstats) x[name] = value;
  nlohmann::json j = {{"port", port.name}, {"port_id", port.id}, {"driver", port.driver}, {"ipackets", c.ipackets},
          {"opackets", c.opackets}, {"imissed", c.imissed}, {"ierrors", c.ierrors}, {"oerrors", c.oerrors},
          {"rx_nombuf", c.rx_nombuf}, {"xstats", x}};
  if (c.pmd_socket_drops) j["pmd_socket_drops"] = *c.pmd_socket_drops;
  return j;
}

}  // namespace rateline::report
