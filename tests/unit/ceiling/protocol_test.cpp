#include "tools/ceiling/protocol.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace rateline::ceiling::proto;

TEST(Protocol, ParsesVerbFieldsAndText) {
  std::string err;
  auto m = parse("ERR code=busy id=3 another session is running", &err);
  ASSERT_TRUE(m) << err;
  EXPECT_EQ(m->verb, "ERR");
  ASSERT_EQ(m->fields.size(), 2u);
  EXPECT_EQ(*m->get("code"), "busy");
  EXPECT_EQ(*m->get("id"), "3");
  EXPECT_EQ(m->text, "another session is running");
  auto r = parse("RESULT id=9 {\"a\":\"x=y\",\"b\":1}", &err);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->text, "{\"a\":\"x=y\",\"b\":1}");
}

TEST(Protocol, RejectsMalformedLines) {
  std::string err;
  EXPECT_FALSE(parse("", &err));
  EXPECT_FALSE(parse("hello", &err));
  EXPECT_FALSE(parse("TRIAL id=1 id=2", &err));               // duplicate key
  EXPECT_FALSE(parse("TRIAL backend=/bin/sh", &err));          // value charset
  EXPECT_FALSE(parse(std::string("PING\0x", 6), &err));        // control byte
  EXPECT_FALSE(parse("TRIAL x=" + std::string(65, 'a'), &err));  // value too long
  std::string many = "TRIAL";
  for (int i = 0; i < 17; ++i) many += " k" + std::string(1, static_cast<char>('a' + i)) + "=1";
  EXPECT_FALSE(parse(many, &err));
}

TEST(Protocol, TrialRoundTripAndRanges) {
  TrialRequest t;
  t.id = 42;
  t.size = 466;
  t.port = 9100;
  t.idle_ms = 250;
  t.max_ms = 5000;
  t.backend = "socket";
  t.rcvbuf = 16384;
  t.slow_us = 2000;
  std::string line = to_line(t);
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  std::string err, code;
  auto m = parse(line, &err);
  ASSERT_TRUE(m) << err;
  auto back = trial_from(*m, &code, &err);
  ASSERT_TRUE(back) << err;
  EXPECT_EQ(back->id, 42u);
  EXPECT_EQ(back->size, 466u);
  EXPECT_EQ(back->port, 9100);
  EXPECT_EQ(back->rcvbuf, 16384);
  EXPECT_EQ(back->slow_us, 2000u);
  EXPECT_EQ(back->backend, "socket");

  for (const char* bad : {"TRIAL id=1 size=1400", "TRIAL id=1 size=10 port=9000", "TRIAL id=1 size=17 port=9000",
                          "TRIAL id=1 size=1400 port=80",
                          "TRIAL id=0 size=1400 port=9000", "TRIAL id=1 size=1400 port=9000 backend=dpdkx",
                          "TRIAL id=1 size=1400 port=9000 backend=null",  // receives nothing from the wire
                          "TRIAL id=1 size=1400 port=9000 threads=65", "TRIAL id=1 size=1400 port=9000 evil=1",
                          "TRIAL id=1 size=1400 port=9000 trailing text", "TRIAL id=1 size=-5 port=9000",
                          "TRIAL id=99999999999999999999 size=1400 port=9000"}) {
    auto mm = parse(bad, &err);
    if (!mm) continue;  // rejected already by the syntax
    EXPECT_FALSE(trial_from(*mm, &code, &err)) << bad;
  }
  // The 64 B frame's payload: the agent takes the smallest size pktgen sends.
  auto smallest = parse("TRIAL id=1 size=18 port=9000", &err);
  ASSERT_TRUE(smallest) << err;
  auto trial18 = trial_from(*smallest, &code, &err);
  ASSERT_TRUE(trial18) << err;
  EXPECT_EQ(trial18->size, 18u);
}

TEST(Protocol, LineSplitterBoundsLines) {
  LineSplitter s(16);
  s.feed("PING\nHELLO ver");
  auto a = s.next();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->line, "PING");
  EXPECT_FALSE(s.next());
  s.feed("sion=1\n");
  auto b = s.next();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->line, "HELLO version=1");
  // Over the limit: one too-long marker, the rest of that line skipped, then back in step.
  s.feed(std::string(40, 'x'));
  s.feed(std::string(40, 'y'));
  s.feed("zz\nPING\n");
  auto c = s.next();
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->too_long);
  auto d = s.next();
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->too_long);
  EXPECT_EQ(d->line, "PING");
  EXPECT_FALSE(s.next());
  // Exactly at the limit (newline included) is fine; one more byte is not.
  LineSplitter e(5);
  e.feed("ABCD\nABCDE\n");
  EXPECT_EQ(e.next()->line, "ABCD");
  EXPECT_TRUE(e.next()->too_long);
}

TEST(Protocol, EveryRxBackendCanBeAskedForButNotItsEalArguments) {
  std::string err, code;
  for (const char* b : {"auto", "socket", "uring", "afpacket", "afxdp", "xdp", "dpdk"}) {
    auto m = parse(std::string("TRIAL id=1 size=1400 port=9000 backend=") + b, &err);
    ASSERT_TRUE(m) << b << ": " << err;
    auto t = trial_from(*m, &code, &err);
    ASSERT_TRUE(t) << b << ": " << err;
    EXPECT_EQ(t->backend, b);
  }
  // EAL arguments can load shared objects: the receiver's operator sets them (ceiling --serve --rx-dpdk-args).
  auto m = parse("TRIAL id=1 size=1400 port=9000 backend=dpdk dpdk_args=--no-pci", &err);
  if (m) {
    EXPECT_FALSE(trial_from(*m, &code, &err));
  }
}
