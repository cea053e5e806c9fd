// drivers/backend_table.cpp: the one list the programs ask, and auto's choice.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "backend.hpp"
#include "util/errors.hpp"

namespace {

using namespace rateline::drivers;

TEST(BackendTable, EveryBackendIsFoundByItsNameAndListedOnce) {
  std::set<std::string> names;
  for (const BackendDescriptor* b : backends()) {
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(names.insert(b->name).second) << b->name;
    EXPECT_EQ(find_backend(b->name), b);
    EXPECT_NE(b->why_not, nullptr) << b->name;
    EXPECT_NE(b->capabilities, nullptr) << b->name;
    // A backend that says it works here can be opened both ways.
    if (b->why_not().empty()) {
      EXPECT_NE(b->open_tx, nullptr) << b->name;
      EXPECT_NE(b->open_rx, nullptr) << b->name;
    }
  }
  for (const char* n : {"socket", "uring", "afpacket", "afxdp", "dpdk", "xdp", "null"}) EXPECT_TRUE(names.count(n)) << n;
  EXPECT_EQ(find_backend("auto"), nullptr);
  EXPECT_EQ(find_backend("bogus"), nullptr);
  const auto choices = backend_choices();
  ASSERT_EQ(choices.size(), names.size() + 1);
  EXPECT_EQ(choices.front(), "auto");
}

TEST(BackendTable, PathChoicesLeaveOutWhatMovesNoPackets) {
  const std::vector<std::string> all = backend_choices(), path = path_backend_choices();
  const std::set<std::string> in_path(path.begin(), path.end());
  EXPECT_EQ(path.front(), "auto");
  for (const BackendDescriptor* b : backends()) EXPECT_EQ(in_path.count(b->name), b->moves_packets ? 1u : 0u) << b->name;
  EXPECT_FALSE(in_path.count("null"));  // ceiling measures a path: a null sender would give an NDR of nothing
  EXPECT_FALSE(in_path.count("pcap"));  // nor would a file
  EXPECT_TRUE(in_path.count("socket"));
  EXPECT_EQ(all.size(), path.size() + 2);  // all backends but null and pcap
}

TEST(BackendTable, ProgramsAskFlagsNotNames) {
  // What pktgen, rx, ceiling and the ledger decide by (EAL arguments, NAPI on the peer, one reader, --layers,
  // XDP drops that are the receiving).
  EXPECT_TRUE(describe_backend("dpdk").eal_args);
  EXPECT_TRUE(describe_backend("xdp").tx_needs_peer_napi);
  EXPECT_TRUE(describe_backend("xdp").rx_one_reader);
  EXPECT_TRUE(describe_backend("xdp").rx_layers);
  EXPECT_TRUE(describe_backend("xdp").rx_drops_in_xdp);
  for (const char* n : {"socket", "uring", "afpacket", "afxdp", "null"}) {
    const BackendDescriptor& b = describe_backend(n);
    EXPECT_FALSE(b.eal_args || b.tx_needs_peer_napi || b.rx_one_reader || b.rx_layers || b.rx_drops_in_xdp) << n;
  }
  // pktgen --replay: only queues that take whole frames.
  for (const char* n : {"afpacket", "afxdp", "dpdk", "null", "pcap"}) EXPECT_TRUE(describe_backend(n).replays) << n;
  for (const char* n : {"socket", "uring", "xdp"}) EXPECT_FALSE(describe_backend(n).replays) << n;
  // rx --reflect: queues that can send back what they received.
  for (const char* n : {"socket", "uring", "afpacket", "afxdp", "dpdk", "xdp"}) EXPECT_TRUE(describe_backend(n).rx_reflects) << n;
  for (const char* n : {"null", "pcap"}) EXPECT_FALSE(describe_backend(n).rx_reflects) << n;
  const BackendDescriptor& none = describe_backend("nosuch");
  EXPECT_STREQ(none.name, "");
  EXPECT_FALSE(none.moves_packets || none.eal_args || none.rx_layers);
}

TEST(BackendTable, AutoPicksOnlyWhatItMayAndSaysWhy) {
  for (Direction dir : {Direction::tx, Direction::rx}) {
    const BackendChoice c = choose_backend("auto", dir, false, "no interface");
    ASSERT_NE(c.backend, nullptr);
    // Without an interface for frames, auto lands on a socket-layer backend.
    EXPECT_FALSE(c.backend->frames) << c.note;
    EXPECT_NE(dir == Direction::tx ? c.backend->auto_tx : c.backend->auto_rx, 0) << c.note;
    EXPECT_NE(c.note.find(c.backend->name), std::string::npos) << c.note;
  }
  // null and dpdk are never auto's choice, even where frames could be built.
  for (Direction dir : {Direction::tx, Direction::rx}) {
    const BackendChoice c = choose_backend("auto", dir, true, "");
    EXPECT_STRNE(c.backend->name, "null");
    EXPECT_STRNE(c.backend->name, "dpdk");
  }
}

TEST(BackendTable, ANamedBackendIsThatOneOrAnErrorOrItsFallback) {
  const BackendChoice null = choose_backend("null", Direction::tx, false, "no interface");
  EXPECT_STREQ(null.backend->name, "null");  // needs no kernel interface
  EXPECT_EQ(null.note, "null (no I/O: the engine's own cost), as asked");
  EXPECT_EQ(choose_backend("socket", Direction::rx, false, "").note, "socket (sendmmsg/recvmmsg), as asked");
  // A frames backend on a kernel interface cannot work without one: the reason, and what works instead.
  try {
    choose_backend("afpacket", Direction::tx, false, "no interface found towards 10.0.0.1 (give --device)");
    FAIL() << "afpacket without an interface was accepted";
  } catch (const rateline::BackendUnavailable& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("give --device"), std::string::npos) << what;
    EXPECT_NE(what.find("--backend socket works without it"), std::string::npos) << what;
  }
  EXPECT_THROW(choose_backend("bogus", Direction::rx, true, ""), rateline::BackendUnavailable);
  // io_uring names a fallback: it is itself where it works, else socket with the reason.
  const BackendChoice uring = choose_backend("uring", Direction::rx, false, "");
  if (find_backend("uring")->why_not().empty()) {
    EXPECT_STREQ(uring.backend->name, "uring");
  } else {
    EXPECT_STREQ(uring.backend->name, "socket");
    EXPECT_NE(uring.note.find("fallback: " + find_backend("uring")->why_not()), std::string::npos) << uring.note;
  }
}

}  // namespace
