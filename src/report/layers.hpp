// rx --layers: one run counted at two layers of the receiving host (the XDP
// program at the driver, our sockets at the application). Per stream what
// reached each, the difference, and how much of it the sockets' own drop
// counter explains.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "report/rx_summary.hpp"

namespace rateline::report {

// `where`: the interface the driver layer counts on.
std::string layers_table(const RxSummary& driver, const RxSummary& app, const std::string& where);
nlohmann::json layers_json(const RxSummary& driver, const RxSummary& app, bool ipv6);

}  // namespace rateline::report
