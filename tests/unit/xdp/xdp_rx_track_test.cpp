// drivers/xdp/xdp_rx_track.h is the XDP counter's per-stream tracking, the
// kernel's copy of stats::SequenceTracker and engine::EndEvidence. Fed the
// same arrivals (in order, lost, duplicated, reordered, stale, far jumps
// forged or real, end markers true, false and disputed), both must agree on
// every count after every arrival.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "engine/rx_loop.hpp"
#include "stats/sequence_tracker.hpp"
#include "xdp/xdp_rx_track.h"

namespace rateline {
namespace {

struct Pair {
  engine::RxStreamState engine;
  stats::RxCounters counters;
  std::unique_ptr<rl_rx_stream> kernel = std::make_unique<rl_rx_stream>();  // zeroed, as a new map entry

  void data(uint64_t seq) {
    engine.seq.record(seq);
    if (engine.ended && seq >= engine.end.total_sent) engine::detail::withdraw_end(engine, counters, nullptr);
    sequence_record(kernel.get(), seq);
    withdraw_end_stories(kernel.get(), seq);
  }
  void marker(uint64_t total, uint16_t streams, uint64_t clock_id = 7) {
    const wire::EndMarkerBody body{.total_sent = total, .delay_ns = 0, .count = total, .burst = 100,
                                   .stream_count = streams, .data_size = 300, .clock_id = clock_id};
    engine::detail::weigh_end_marker(engine, body, counters, nullptr);
    const rl_end_body k{.total_sent = total, .delay_ns = 0, .count = total, .burst = 100, .stream_count = streams,
                        .data_size = 300, .clock_id = clock_id};
    weigh_end_marker(kernel.get(), &k);
  }
  void expect_same(const std::string& where) const {
    const stats::SequenceCounts e = engine.seq.counts();
    const rl_rx_stream& k = *kernel;
    ASSERT_EQ(k.received, e.received) << where;
    ASSERT_EQ(k.unique, e.unique) << where;
    ASSERT_EQ(k.duplicates, e.duplicates) << where;
    ASSERT_EQ(k.reordered, e.reordered) << where;
    ASSERT_EQ(k.stale, e.stale) << where;
    ASSERT_EQ(k.highest_next, e.highest_next) << where;
    ASSERT_EQ(k.implausible + ((k.flags & RL_STREAM_PENDING) ? 1 : 0), e.implausible) << where;
    ASSERT_EQ(bool(k.flags & RL_STREAM_ENDED), engine.ended) << where;
    if (engine.ended) {
      ASSERT_EQ(k.end_candidate[(k.flags & RL_STREAM_END_SECOND) ? 1 : 0].total_sent, engine.end.total_sent) << where;
    }
    ASSERT_EQ(k.end_copies, engine.markers.copies) << where;
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(k.end_votes[i], engine.markers.votes[i]) << where << ", story " << i;
      if (k.end_votes[i]) {
        ASSERT_EQ(k.end_candidate[i].total_sent, engine.markers.candidate[i].total_sent) << where;
      }
    }
  }
};

TEST(XdpRxTrack, AgreesWithTheEngineOnRandomArrivals) {
  std::mt19937_64 rng(2026);
  uint64_t believed = 0, withdrawn = 0, confirmed_jumps = 0;  // the comparison covered these states
  for (int run = 0; run < 200; ++run) {
    Pair p;
    uint64_t next = run % 3 == 0 ? (1ull << 40) : 0;  // some streams start far from zero
    const uint64_t total = next + 20000;
    for (int i = 0; i < 30000; ++i) {
      const std::string where = "run " + std::to_string(run) + ", arrival " + std::to_string(i);
      const bool was_ended = p.engine.ended;
      const uint64_t highest_before = p.engine.seq.counts().highest_next;
      const unsigned r = static_cast<unsigned>(rng() % 1000);
      if (r < 850) {
        if (next < total) p.data(next++);                        // in order
      } else if (r < 900) {
        next += 1 + rng() % 40;                                  // a gap (loss)
      } else if (r < 930) {
        p.data(next - 1 - rng() % 64 % (next ? next : 1));       // a duplicate or a late one
      } else if (r < 940) {
        p.data(next + RL_WINDOW_BITS + rng() % (1ull << 40));    // a lone far jump
      } else if (r < 945) {
        const uint64_t far = next + RL_WINDOW_BITS + 1 + rng() % 100000;  // a real outage: two arrivals past it
        p.data(far);
        p.data(far + 1 + rng() % 10);
        next = far + 12;
      } else if (r < 950) {
        p.data(rng() % 2 ? ~0ull : ~0ull - 1);                   // the largest sequences
      } else if (r < 960) {
        p.data(next > 2 * RL_WINDOW_BITS ? next - 2 * RL_WINDOW_BITS : 0);  // stale
      } else if (r < 975) {
        p.marker(total, 1, rng() % 8 ? 7 : 8);                   // the true story (now and then told from another clock)
      } else if (r < 985) {
        p.marker(rng() % (next + 10), 1);                        // a story below what arrived
      } else if (r < 995) {
        p.marker(next + rng() % 1000000, static_cast<uint16_t>(1 + rng() % 3));  // a story ahead
      } else {
        p.marker(next, 1);                                       // a story exactly at what arrived
      }
      p.expect_same(where);
      if (HasFatalFailure()) return;
      believed += p.engine.ended;
      withdrawn += was_ended && !p.engine.ended;
      confirmed_jumps += p.engine.seq.counts().highest_next > highest_before + RL_WINDOW_BITS;
    }
  }
  EXPECT_GT(believed, 1000u);
  EXPECT_GT(withdrawn, 10u);
  EXPECT_GT(confirmed_jumps, 100u);
}

TEST(XdpRxTrack, ALoneForgedJumpChangesNothingButItsCount) {
  Pair p;
  for (uint64_t s = 0; s < 1000; ++s) p.data(s);
  p.data(1'000'000'000'000ull);
  for (uint64_t s = 1000; s < 2000; ++s) p.data(s);
  p.expect_same("after the jump");
  EXPECT_EQ(p.kernel->unique, 2000u);
  EXPECT_EQ(p.kernel->stale, 0u);
  EXPECT_EQ(p.kernel->implausible + ((p.kernel->flags & RL_STREAM_PENDING) ? 1 : 0), 1u);
}

}  // namespace
}  // namespace rateline
