#include "ledger/ledger.hpp"

#include <gtest/gtest.h>

using namespace rateline::ledger;

namespace {

DeviceCounters dev(const char* name, const char* driver) {
  DeviceCounters d;
  d.name = name;
  d.driver = driver;
  return d;
}

uint64_t at(const Ledger& l, const char* layer) { return l.attributed_to(layer); }

}  // namespace

TEST(Ledger, QdiscDropsAreAttributedOnce) {
  Path p;
  p.missing = 66;
  p.sent = 3600;
  p.received = 3534;
  Counters s;
  s.have_snmp = true;
  s.udp_sndbuf_errors = 66;  // the same drops, reported back to UDP
  DeviceCounters a = dev("veth0", "veth");
  a.have_qdisc = true;
  a.qdisc_kind = "tbf";
  a.qdisc_drops = 67;  // one end marker too
  s.devices.push_back(a);
  p.sender = s;
  p.receiver = Counters{};
  p.sender_device = "veth0";
  const Ledger l = reconcile(p);
  EXPECT_EQ(at(l, "qdisc"), 66u);
  EXPECT_EQ(at(l, "sender-ip"), 0u);
  EXPECT_EQ(l.unattributed, 0u);
  EXPECT_EQ(brief(l), "qdisc 66");
}

TEST(Ledger, SocketDropsAreNotCountedAgainAsUdpErrors) {
  Path p;
  p.missing = 120;
  p.socket_drops = 120;
  Counters r;
  r.have_snmp = true;
  r.udp_in_errors = 125;  // 120 ours + 5 someone else's
  r.udp_rcvbuf_errors = 125;
  p.receiver = r;
  const Ledger l = reconcile(p);
  EXPECT_EQ(at(l, "socket"), 120u);
  EXPECT_EQ(at(l, "udp"), 0u);  // nothing left to explain
  EXPECT_EQ(l.unattributed, 0u);
}

TEST(Ledger, VethBacklogDropIsOneKernelDrop) {
  // A backlog drop on a veth pair shows as the sender's tx_dropped, the receiver's rx_dropped and softnet dropped.
  Path p;
  p.missing = 30;
  Counters s;
  DeviceCounters a = dev("va", "veth");
  a.tx_dropped = 30;
  s.devices.push_back(a);
  Counters r;
  DeviceCounters b = dev("vb", "veth");
  b.rx_dropped = 30;
  r.devices.push_back(b);
  r.have_softnet = true;
  r.softnet_dropped = 30;
  p.sender = s;
  p.receiver = r;
  const Ledger l = reconcile(p);
  EXPECT_EQ(at(l, "kernel"), 30u);
  EXPECT_EQ(at(l, "sender-if"), 0u);
  EXPECT_EQ(l.unattributed, 0u);
}

TEST(Ledger, WhatNoCounterExplainsIsUnattributed) {
  Path p;
  p.missing = 10;
  p.sender_failed = 3;
  p.corrupt = 2;
  p.receiver = Counters{};
  const Ledger l = reconcile(p);
  EXPECT_EQ(at(l, "sender"), 3u);
  EXPECT_EQ(at(l, "checks"), 2u);
  EXPECT_EQ(l.unattributed, 5u);
  EXPECT_NE(format(l).find("unattributed"), std::string::npos);
}

TEST(Ledger, NicDropsTakeTheLargerOfSysfsAndEthtool) {
  Path p;
  p.missing = 50;
  Counters r;
  DeviceCounters d = dev("eth0", "ixgbe");
  d.rx_missed_errors = 40;
  d.ethtool["rx_missed_errors"] = 40;  // the same drops, twice reported
  d.ethtool["rx_no_dma_resources"] = 0;
  r.devices.push_back(d);
  p.receiver = r;
  const Ledger l = reconcile(p);
  EXPECT_EQ(at(l, "nic"), 40u);
  EXPECT_EQ(l.unattributed, 10u);
}

TEST(Ledger, RawReceiverLeavesTheGuardSocketsErrorsOut) {
  Path p;
  p.missing = 5;
  p.socket_drops = 5;
  p.raw_receiver = true;
  p.receiver_backend = "afpacket";
  Counters r;
  r.have_snmp = true;
  r.udp_in_errors = 100000;  // the guard socket's filter drops every copy
  p.receiver = r;
  const Ledger l = reconcile(p);
  EXPECT_EQ(at(l, "socket"), 5u);
  EXPECT_EQ(at(l, "udp"), 0u);
  EXPECT_EQ(l.unattributed, 0u);
}

TEST(Counters, DeltaAndJsonRoundTrip) {
  Counters a, b;
  DeviceCounters d = dev("x", "veth");
  d.rx_dropped = 5;
  d.have_qdisc = true;
  d.qdisc_kind = "tbf";
  d.qdisc_drops = 7;
  d.ethtool["rx_queue_0_drops"] = 1;
  a.devices.push_back(d);
  d.rx_dropped = 9;
  d.qdisc_drops = 10;
  d.ethtool["rx_queue_0_drops"] = 4;
  b.devices.push_back(d);
  a.have_softnet = b.have_softnet = true;
  a.softnet_dropped = 100;
  b.softnet_dropped = 90;  // went backwards (counter reset): 0, never a wrap-around
  const Counters x = delta(a, b);
  ASSERT_EQ(x.devices.size(), 1u);
  EXPECT_EQ(x.devices[0].rx_dropped, 4u);
  EXPECT_EQ(x.devices[0].qdisc_drops, 3u);
  EXPECT_EQ(x.devices[0].ethtool.at("rx_queue_0_drops"), 3u);
  EXPECT_EQ(x.softnet_dropped, 0u);
  const Counters y = counters_from_json(to_json(x));
  EXPECT_EQ(to_json(y), to_json(x));
}

TEST(Counters, ReadsThisNamespace) {
  const Counters c = read_counters(Scope{{"lo"}, false});
  ASSERT_EQ(c.devices.size(), 1u);  // every Linux namespace has lo
  EXPECT_EQ(c.devices[0].name, "lo");
  EXPECT_TRUE(c.have_snmp);
}

TEST(Ledger, XdpReceiverOwnDropsAreNotLosses) {
  // rx --backend xdp counts our frames in its XDP program and drops them: the veth's xdp_drops
  // is the receiving itself. A real NIC drop next to it still counts.
  Path p;
  p.missing = 3;
  p.raw_receiver = true;
  p.receiver_backend = "xdp";
  p.receiver_drops_in_xdp = true;
  Counters r;
  DeviceCounters d = dev("veth1", "veth");
  d.ethtool["rx_queue_0_xdp_drops"] = 100000;
  d.ethtool["rx_queue_0_drops"] = 3;
  r.devices.push_back(d);
  p.receiver = r;
  const Ledger l = reconcile(p);
  EXPECT_EQ(at(l, "nic"), 3u);
  EXPECT_EQ(l.unattributed, 0u);
  bool noted = false;
  for (const auto& n : l.notes) noted |= n.find("rx_queue_0_xdp_drops +100000 left out") != std::string::npos;
  EXPECT_TRUE(noted);

  p.receiver_backend = "socket";  // any other receiver: an XDP drop is a drop
  p.receiver_drops_in_xdp = false;
  p.missing = 100003;
  EXPECT_EQ(at(reconcile(p), "nic"), 100003u);
}

TEST(Ledger, RawReceiversFragmentsAndBadChecksumsAreAttributed) {
  // afpacket saw 300 fragments (100 datagrams of 3 each) and 4 frames with a
  // wrong UDP checksum; 104 packets are missing.
  Path p;
  p.missing = 104;
  p.raw_receiver = true;
  p.receiver_backend = "afpacket";
  p.bad_udp_checksum = 4;
  p.fragments = 300;
  p.receiver = Counters{};
  const Ledger l = reconcile(p);
  EXPECT_EQ(at(l, "checks"), 4u);
  EXPECT_EQ(at(l, "fragments"), 100u);  // claimed last, at most half the fragments: here what was left
  EXPECT_EQ(l.unattributed, 0u);

  p.missing = 10;  // fragments of someone else's datagrams: the line claims no more than is missing
  const Ledger few = reconcile(p);
  EXPECT_EQ(at(few, "checks"), 4u);
  EXPECT_EQ(at(few, "fragments"), 6u);
  EXPECT_EQ(few.unattributed, 0u);
}
