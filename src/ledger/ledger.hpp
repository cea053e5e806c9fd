// The drop ledger: for one run, sent minus received, and where each missing
// packet went, layer by layer along the path a packet takes:
//
//   sender      pktgen's own count of packets the OS refused (sendmsg errors)
//   sender-ip   Udp SndbufErrors the qdisc and device counters do not explain
//   qdisc       root qdisc drops on the sender's egress interface (tc -s)
//   sender-if   tx_dropped on the sender's interface
//   nic         receiver rx_missed_errors / rx_fifo_errors / rx_over_errors, ethtool -S drop counters
//   kernel      receive backlog: rx_dropped, /proc/net/softnet_stat dropped
//   udp         Udp InErrors + NoPorts beyond our own sockets' drops
//   socket      our sockets' sk_drops (receive buffer full), or AF_PACKET tp_drops
//   checks      rx's own verdict: payload checksum mismatch (corrupt), and on
//               raw receivers a wrong UDP checksum
//   fragments   raw receivers: IP fragments they saw and do not reassemble
//               (half their number at most: a datagram is 2 or more); claimed last
//   unattributed  what no counter explains: printed, never hidden
//
// Counters overlap (a backlog drop on a veth pair bumps the sender's
// tx_dropped, the receiver's rx_dropped and softnet's dropped; a socket drop
// is also an Udp InErrors), so each missing packet is attributed once: exact
// per-run counts first (pktgen's, rx's), then per-interface counters, then
// namespace- and host-wide ones, each claiming at most what is still
// unexplained. A line shows both what its counters moved (`counted`) and
// what it was given (`attributed`); counted > attributed means other traffic
// or an overlap moved the counter too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ledger/counters.hpp"

namespace rateline::ledger {

struct Path {
  uint64_t missing = 0;         // sent - received (distinct)
  uint64_t sent = 0, received = 0;
  uint64_t sender_failed = 0;   // pktgen "failed"
  uint64_t corrupt = 0;         // rx "corrupt"
  uint64_t socket_drops = 0;    // rx "socket_drops": sk_drops, or tp_drops for AF_PACKET
  uint64_t bad_udp_checksum = 0;  // rx "bad_udp_checksum" (raw receivers)
  uint64_t fragments = 0;       // rx "fragments" (raw receivers: seen, not reassembled)
  bool raw_receiver = false;    // rx tapped frames (AF_PACKET, AF_XDP): UDP counters are not on the measured path
  std::string receiver_backend; // for the socket line's wording
  bool receiver_drops_in_xdp = false;  // rx counts in XDP and drops there: xdp_drop is no loss
  std::optional<Counters> sender;    // deltas on the sender's side (unknown for plain rx)
  std::optional<Counters> receiver;  // deltas on the receiver's side
  std::string sender_device;         // the sender's egress interface, when known
};

struct Line {
  std::string layer;       // "qdisc", "socket", ... (see above)
  uint64_t attributed = 0;
  uint64_t counted = 0;    // what the layer's counters moved
  std::string evidence;    // which counters, on which interface
};

struct Ledger {
  uint64_t missing = 0, sent = 0, received = 0;
  std::vector<Line> lines;  // path order; layers whose counters did not move are left out
  uint64_t unattributed = 0;
  std::vector<std::string> notes;

  uint64_t attributed_to(const std::string& layer) const;
};

Ledger reconcile(const Path& p);

// Scope and path for a receiver on its own (plain rx): the sender's side is unknown.
Scope receiver_scope(const std::string& device);

// "drop ledger: ..." block for the terminal, one line per layer.
std::string format(const Ledger& l);
// "qdisc 173, socket 2" (attributed layers, largest first; "none" when nothing is missing).
std::string brief(const Ledger& l);
nlohmann::json to_json(const Ledger& l, const std::optional<Counters>& sender = std::nullopt,
                       const std::optional<Counters>& receiver = std::nullopt);

}  // namespace rateline::ledger
