// pktgen's option checks (option_checks.cpp), called by parse_options()
// once the command line is read. Each throws cli::UsageError with the one
// line to print.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pktgen_config.hpp"

namespace rateline::pktgen {

// --size A[,B,..] with --weights (as_l2: sizes are Ethernet frames incl. FCS): cfg.size, cfg.mix_sizes, weights.
void parse_sizes(Config& cfg, const std::string& size, const std::string& weights, bool as_l2, uint64_t max_payload);
// --vlan ID[:PCP][,ID[:PCP]]: the tags' TCIs, outer first.
std::vector<uint16_t> parse_vlan(const std::string& text);
// A port set (--device a,b): what it cannot do yet.
void check_port_set(const Config& cfg, bool no_dst);
// --pcap-out, --replay, --replay-stamp: backend, bounds, and the capture read and checked.
void check_file_options(Config& cfg);
// --key-file: the key read, and room for the tag in the smallest packet.
void check_key_file(Config& cfg);

}  // namespace rateline::pktgen
