// --cores auto and the NIC's NUMA node (src/topo/topology.hpp), on a host
// this VM is not: two_socket.xml is hwloc's XML of a 2-socket machine (hwloc
// synthetic "pack:2 [numa] core:4 pu:2": cpus 0-7 on node 0, 8-15 on node 1,
// the two hardware threads of a core adjacent), with three NICs as hwloc
// lists PCI devices: ens9f0 (0000:41:00.0) under package 1, eno1
// (0000:01:00.0) under package 0, enp128s0 (0000:80:00.0) under the machine.
#include "topo/topology.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

namespace {

using rateline::topo::Placement;
using rateline::topo::device_numa_node_on;
using rateline::topo::place_workers_on;

std::string two_socket_xml() {
  const char* dir = std::getenv("RATELINE_TEST_DATA");
  std::ifstream f(std::string(dir ? dir : "tests/unit") + "/topo/two_socket.xml");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<int> cpus(int first, int last) {
  std::vector<int> v(static_cast<size_t>(last - first + 1));
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(Placement, TheXmlHostHasTwoNodes) {
  const std::string xml = two_socket_xml();
  ASSERT_NE(xml.find("NUMANode"), std::string::npos) << "RATELINE_TEST_DATA points at the test sources";
}

TEST(Placement, WorkersGoToTheNicsNodeAndMainOffIt) {
  const Placement p = place_workers_on(two_socket_xml(), cpus(0, 15), 4, 1);
  // Node 1's cores one at a time (first hardware threads 8, 10, 12, 14), the reporter on node 0.
  EXPECT_EQ(p.worker_cpus, (std::vector<int>{8, 10, 12, 14})) << p.text;
  EXPECT_EQ(p.main_cpu, 0);
  EXPECT_NE(p.text.find("NUMA node 1 (cpus 8-15): workers on its cores"), std::string::npos) << p.text;
}

TEST(Placement, SecondHardwareThreadsOfTheNodeBeforeTheOtherNode) {
  const Placement p = place_workers_on(two_socket_xml(), cpus(0, 15), 8, 1);
  EXPECT_EQ(p.worker_cpus, (std::vector<int>{8, 10, 12, 14, 9, 11, 13, 15})) << p.text;
}

TEST(Placement, MoreWorkersThanTheNodeHasSpillAndSaySo) {
  const Placement p = place_workers_on(two_socket_xml(), cpus(0, 15), 10, 1);
  EXPECT_EQ(p.worker_cpus[8], 2) << "node 0's cores after node 1's, cpu 0 kept for the reporter";
  EXPECT_EQ(p.worker_cpus[9], 4);
  EXPECT_NE(p.text.find("2 worker(s) off it"), std::string::npos) << p.text;
}

TEST(Placement, NodeZeroIsNotAlwaysTheAnswer) {
  const Placement p = place_workers_on(two_socket_xml(), cpus(0, 15), 2, 0);
  EXPECT_EQ(p.worker_cpus, (std::vector<int>{0, 2})) << p.text;
  EXPECT_EQ(p.main_cpu, 8);
}

TEST(Placement, UnknownNodeKeepsThePlainOrder) {
  const Placement plain = place_workers_on(two_socket_xml(), cpus(0, 15), 3, -1);
  EXPECT_EQ(plain.worker_cpus, (std::vector<int>{2, 4, 6})) << plain.text;
  EXPECT_EQ(plain.main_cpu, 0);
  const Placement missing = place_workers_on(two_socket_xml(), cpus(0, 15), 3, 5);
  EXPECT_EQ(missing.worker_cpus, plain.worker_cpus);
  EXPECT_NE(missing.text.find("NUMA node 5 is not in this topology"), std::string::npos) << missing.text;
}

TEST(Placement, OnlyAllowedCpusAreUsed) {
  // A cgroup or taskset leaving node 1 only its first two cores.
  const Placement p = place_workers_on(two_socket_xml(), {0, 1, 8, 9, 10, 11}, 3, 1);
  EXPECT_EQ(p.worker_cpus, (std::vector<int>{8, 10, 9})) << p.text;
  EXPECT_EQ(p.main_cpu, 0);
}

TEST(Placement, AllowedOnlyOnTheNodeKeepsMainThere) {
  const Placement p = place_workers_on(two_socket_xml(), cpus(8, 15), 2, 1);
  EXPECT_EQ(p.main_cpu, 8);
  EXPECT_EQ(p.worker_cpus, (std::vector<int>{10, 12})) << p.text;
}

// hwloc's PCI objects: the node of the package (or group) a NIC hangs under.
TEST(DeviceNode, HwlocPlacesTheNicUnderItsPackagesNode) {
  const std::string xml = two_socket_xml();
  EXPECT_EQ(device_numa_node_on(xml, "ens9f0"), 1);
  EXPECT_EQ(device_numa_node_on(xml, "0000:41:00.0"), 1);
  EXPECT_EQ(device_numa_node_on(xml, "eno1"), 0);
  EXPECT_EQ(device_numa_node_on(xml, "0000:01:00.0"), 0);
}

TEST(DeviceNode, UnknownLocalityOrDeviceIsMinusOne) {
  const std::string xml = two_socket_xml();
  EXPECT_EQ(device_numa_node_on(xml, "enp128s0"), -1) << "under the machine: both nodes, no answer";
  EXPECT_EQ(device_numa_node_on(xml, "0000:80:00.0"), -1);
  EXPECT_EQ(device_numa_node_on(xml, "eth7"), -1);
  EXPECT_EQ(device_numa_node_on(xml, "0000:99:00.0"), -1);
}

TEST(DeviceNode, AutoPlacementFollowsTheNicHwlocFound) {
  const std::string xml = two_socket_xml();
  const Placement p = place_workers_on(xml, cpus(0, 15), 2, device_numa_node_on(xml, "ens9f0"));
  EXPECT_EQ(p.worker_cpus, (std::vector<int>{8, 10})) << p.text;
  EXPECT_EQ(p.main_cpu, 0);
  const Placement q = place_workers_on(xml, cpus(0, 15), 2, device_numa_node_on(xml, "eno1"));
  EXPECT_EQ(q.worker_cpus, (std::vector<int>{0, 2})) << q.text;
  EXPECT_EQ(q.main_cpu, 8);
}

}  // namespace
