#include "ledger/ledger.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace rateline::ledger {

namespace {

std::string plus(uint64_t v) { return "+" + std::to_string(v); }

// Where a layer sits on the path (print order) and when it claims (most exact first).
struct LayerDef {
  const char* name;
  int claim_rank;
};
constexpr LayerDef kLayers[] = {
    {"sender", 0}, {"sender-ip", 8}, {"qdisc", 3}, {"sender-if", 6}, {"nic", 4},
    {"kernel", 5}, {"udp", 7},       {"socket", 2}, {"checks", 1}, {"fragments", 9},
};

struct Pending {
  Line line;
  int path_index = 0;
  int claim_rank = 0;
};

bool is_veth(const DeviceCounters& d) { return d.driver == "veth"; }

}  // namespace

uint64_t Ledger::attributed_to(const std::string& layer) const {
  uint64_t n = 0;
  for (const auto& l : lines)
    if (l.layer == layer) n += l.attributed;
  return n;
}

Scope receiver_scope(const std::string& device) {
  Scope s;
  if (!device.empty()) s.devices.push_back(device);
  return s;
}

Ledger reconcile(const Path& p) {
  Ledger out;
  out.missing = p.missing;
  out.sent = p.sent;
  out.received = p.received;
  std::vector<Pending> pending;
  auto add = [&](int index, uint64_t counted, std::string evidence) {
    if (!counted) return;
    Pending x;
    x.line.layer = kLayers[index].name;
    x.line.counted = counted;
    x.line.evidence = std::move(evidence);
    x.path_index = index;
    x.claim_rank = kLayers[index].claim_rank;
    pending.push_back(std::move(x));
  };

  // sender: pktgen's exact count.
  add(0, p.sender_failed, "pktgen failed " + plus(p.sender_failed) + " (sendmsg refused; the sequence numbers were used)");

  uint64_t qdisc_total = 0, sender_if_total = 0, veth_tx_dropped = 0;
  if (p.sender) {
    std::string qe, ie;
    for (const auto& d : p.sender->devices) {
      if (!p.sender_device.empty() && d.name != p.sender_device) continue;
      if (d.have_qdisc && d.qdisc_drops) {
        qdisc_total += d.qdisc_drops;
        qe += (qe.empty() ? "" : "; ") + d.qdisc_kind + " root on " + d.name + ": dropped " + plus(d.qdisc_drops);
      }
      if (d.tx_dropped) {
        // A veth "transmits" by queueing to its peer's backlog: its tx_dropped is the
        // receiving side's backlog drop, so it belongs to the kernel layer.
        if (is_veth(d)) veth_tx_dropped += d.tx_dropped;
        else {
          sender_if_total += d.tx_dropped;
          ie += (ie.empty() ? "" : "; ") + d.name + " tx_dropped " + plus(d.tx_dropped);
        }
      }
    }
    if (qdisc_total && p.sender->udp_sndbuf_errors)
      qe += " (the sender's Udp SndbufErrors " + plus(p.sender->udp_sndbuf_errors) + " counts these too)";
    add(2, qdisc_total, qe);
    add(3, sender_if_total, ie);
    const uint64_t explained = qdisc_total + sender_if_total + veth_tx_dropped;
    if (p.sender->udp_sndbuf_errors > explained)
      add(1, p.sender->udp_sndbuf_errors - explained,
          "sender Udp SndbufErrors " + plus(p.sender->udp_sndbuf_errors) + ", " + std::to_string(explained) +
              " of them explained by qdisc/interface drops");
  }

  if (p.receiver) {
    const Counters& r = *p.receiver;
    uint64_t nic = 0, rx_dropped = 0;
    std::string ne, ke;
    for (const auto& d : r.devices) {
      const uint64_t sysfs = d.rx_missed_errors + d.rx_fifo_errors + d.rx_over_errors;
      uint64_t eth = 0;
      std::string eth_names;
      for (const auto& [k, v] : d.ethtool) {
        if (v && p.receiver_drops_in_xdp && k.find("xdp_drop") != std::string::npos) {
          // rx's own XDP program counts our frames and then drops them: that is the receiving, not a loss.
          out.notes.push_back(d.name + " " + k + " " + plus(v) + " left out: rx's XDP program drops what it has counted");
          continue;
        }
        if (v && k.find("tx") == std::string::npos) {
          eth += v;
          eth_names += (eth_names.empty() ? "" : ", ") + k + " " + plus(v);
        }
      }
      if (sysfs || eth) {
        // Drivers report the same drop in sysfs and in ethtool -S: take the larger, not the sum.
        nic += std::max(sysfs, eth);
        ne += (ne.empty() ? "" : "; ") + d.name + ":";
        if (d.rx_missed_errors) ne += " rx_missed_errors " + plus(d.rx_missed_errors);
        if (d.rx_fifo_errors) ne += " rx_fifo_errors " + plus(d.rx_fifo_errors);
        if (d.rx_over_errors) ne += " rx_over_errors " + plus(d.rx_over_errors);
        if (eth) ne += " ethtool -S " + eth_names;
      }
      if (d.rx_dropped) {
        rx_dropped += d.rx_dropped;
        ke += (ke.empty() ? "" : "; ") + d.name + " rx_dropped " + plus(d.rx_dropped);
      }
    }
    add(4, nic, ne);
    // One backlog drop shows in several of these: the largest is the count.
    const uint64_t softnet = r.have_softnet ? r.softnet_dropped : 0;
    if (softnet) ke += (ke.empty() ? "" : "; ") + std::string("softnet_stat dropped ") + plus(softnet) + " (host-wide)";
    if (veth_tx_dropped)
      ke += (ke.empty() ? "" : "; ") + std::string("sender veth tx_dropped ") + plus(veth_tx_dropped) + " (its peer's backlog)";
    add(5, std::max({rx_dropped, softnet, veth_tx_dropped}), ke);
    if (r.have_softnet && r.softnet_squeezed)
      out.notes.push_back("softnet time_squeeze " + plus(r.softnet_squeezed) +
                          " (host-wide): softirq ran out of budget; a sign of receive CPU pressure, not a drop");
    if (!p.raw_receiver && r.have_snmp) {
      // InErrors includes our sockets' drops (RcvbufErrors and checksum errors bump sk_drops too).
      const uint64_t udp = r.udp_in_errors + r.udp_no_ports;
      if (udp > p.socket_drops) {
        std::string ue = "Udp InErrors " + plus(r.udp_in_errors);
        if (r.udp_rcvbuf_errors) ue += " (RcvbufErrors " + plus(r.udp_rcvbuf_errors) + ")";
        if (r.udp_in_csum_errors) ue += " (InCsumErrors " + plus(r.udp_in_csum_errors) + ")";
        if (r.udp_no_ports) ue += ", NoPorts " + plus(r.udp_no_ports) + " (no socket on the port)";
        ue += " beyond our sockets' " + std::to_string(p.socket_drops);
        add(6, udp - p.socket_drops, ue);
      }
    } else if (p.raw_receiver && r.have_snmp && r.udp_in_errors) {
      out.notes.push_back("Udp InErrors " + plus(r.udp_in_errors) + " left out: rx tapped frames (" + p.receiver_backend +
                          "); its guard socket on the port drops the stack's copies by design");
    }
    for (const auto& n : r.notes) out.notes.push_back("receiver: " + n);
  } else {
    out.notes.push_back("receiver-side counters not read");
  }
  if (p.sender)
    for (const auto& n : p.sender->notes) out.notes.push_back("sender: " + n);
  else
    out.notes.push_back("sender-side counters not read (plain rx sees only its own host: run tools/ceiling for both ends)");

  const bool ring = p.raw_receiver;
  add(7, p.socket_drops,
      ring ? "rx socket_drops " + plus(p.socket_drops) + " (" + p.receiver_backend + ": frames its ring had no room for)"
           : "rx socket_drops " + plus(p.socket_drops) + " (sk_drops of our sockets: receive buffer full)" +
                 (p.receiver && p.receiver->udp_rcvbuf_errors
                      ? "; Udp RcvbufErrors " + plus(p.receiver->udp_rcvbuf_errors)
                      : std::string()));
  std::string checks = "rx corrupt " + plus(p.corrupt) + " (payload checksum mismatch: arrived, not counted as received)";
  if (p.bad_udp_checksum)
    checks += "; rx bad UDP checksum " + plus(p.bad_udp_checksum) + " (" + p.receiver_backend +
              ": dropped before decoding, as the kernel drops them before a socket)";
  add(8, p.corrupt + p.bad_udp_checksum, checks);
  // A datagram cut into fragments on the way is at least two of them, and a
  // raw receiver does not put them together: at most half are our packets.
  add(9, p.fragments / 2,
      "rx fragments " + plus(p.fragments) + " (" + p.receiver_backend +
          " does not reassemble IP fragments; each fragmented datagram is at least 2, so at most " +
          std::to_string(p.fragments / 2) + " of them)");

  // Claim in rank order, each at most what is still unexplained.
  std::vector<Pending*> by_rank;
  for (auto& x : pending) by_rank.push_back(&x);
  std::stable_sort(by_rank.begin(), by_rank.end(), [](const Pending* a, const Pending* b) { return a->claim_rank < b->claim_rank; });
  uint64_t left = p.missing;
  for (Pending* x : by_rank) {
    x->line.attributed = std::min(left, x->line.counted);
    left -= x->line.attributed;
  }
  std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) { return a.path_index < b.path_index; });
  for (auto& x : pending) out.lines.push_back(std::move(x.line));
  out.unattributed = left;
  return out;
}

std::string format(const Ledger& l) {
  std::string s;
  char buf[512];
  if (l.missing == 0) {
    s = "drop ledger: nothing missing";
    bool any = false;
    for (const auto& x : l.lines) any |= x.counted > 0;
    s += any ? " (counters moved anyway: other traffic)\n" : "\n";
  } else {
    std::snprintf(buf, sizeof buf, "drop ledger: %" PRIu64 " missing (sent %" PRIu64 ", received %" PRIu64 ")\n", l.missing,
                  l.sent, l.received);
    s = buf;
  }
  for (const auto& x : l.lines) {
    std::snprintf(buf, sizeof buf, "  %-13s %10" PRIu64 "  %s\n", x.layer.c_str(), x.attributed, x.evidence.c_str());
    s += buf;
  }
  if (l.missing) {
    std::snprintf(buf, sizeof buf, "  %-13s %10" PRIu64 "%s\n", "unattributed", l.unattributed,
                  l.unattributed ? "  no counter on the path explains these" : "");
    s += buf;
  }
  if (l.missing)
    for (const auto& n : l.notes) s += "  note: " + n + "\n";
  return s;
}

std::string brief(const Ledger& l) {
  if (l.missing == 0) return "none";
  std::vector<std::pair<uint64_t, std::string>> parts;
  for (const auto& x : l.lines)
    if (x.attributed) parts.emplace_back(x.attributed, x.layer);
  if (l.unattributed) parts.emplace_back(l.unattributed, "unattributed");
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string s;
  for (const auto& [n, name] : parts) s += (s.empty() ? "" : ", ") + name + " " + std::to_string(n);
  return s;
}

nlohmann::json to_json(const Ledger& l, const std::optional<Counters>& sender, const std::optional<Counters>& receiver) {
  nlohmann::json lines = nlohmann::json::array();
  for (const auto& x : l.lines)
    lines.push_back({{"layer", x.layer}, {"attributed", x.attributed}, {"counted", x.counted}, {"evidence", x.evidence}});
  return {{"missing", l.missing},
          {"sent", l.sent},
          {"received", l.received},
          {"lines", lines},
          {"unattributed", l.unattributed},
          {"notes", l.notes},
          {"counters",
           {{"sender", sender ? to_json(*sender) : nlohmann::json(nullptr)},
            {"receiver", receiver ? to_json(*receiver) : nlohmann::json(nullptr)}}}};
}

}  // namespace rateline::ledger
