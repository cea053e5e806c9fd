// Loss / reorder / duplicate accounting (src/stats/sequence_tracker.hpp).
#include "stats/sequence_tracker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <unordered_set>
#include <vector>

namespace {

using rateline::stats::SequenceTracker;
constexpr uint64_t W = SequenceTracker::kWindow;

// The tracker is 2 KiB of bits: keep it on the heap in loops.
std::unique_ptr<SequenceTracker> fresh() { return std::make_unique<SequenceTracker>(); }

TEST(SequenceTracker, StartsEmpty) {
  SequenceTracker t;
  EXPECT_EQ(t.counts().received, 0u);
  EXPECT_EQ(t.counts().unique, 0u);
  EXPECT_EQ(t.counts().highest_next, 0u);
  EXPECT_EQ(t.lost_so_far(), 0u);
  EXPECT_EQ(t.lost_given_total(10), 10u);
}

TEST(SequenceTracker, InOrderHasNoLoss) {
  auto t = fresh();
  const uint64_t n = 100'000;
  for (uint64_t s = 0; s < n; ++s) t->record(s);
  const auto& c = t->counts();
  EXPECT_EQ(c.received, n);
  EXPECT_EQ(c.unique, n);
  EXPECT_EQ(c.duplicates, 0u);
  EXPECT_EQ(c.reordered, 0u);
  EXPECT_EQ(c.stale, 0u);
  EXPECT_EQ(c.highest_next, n);
  EXPECT_EQ(t->lost_so_far(), 0u);
  EXPECT_EQ(t->lost_given_total(n), 0u);
}

TEST(SequenceTracker, DropEveryKthCountsLossExactly) {
  for (uint64_t k : {2u, 3u, 7u, 64u, 1000u}) {
    auto t = fresh();
    const uint64_t n = 50'000;
    uint64_t dropped = 0;
    for (uint64_t s = 0; s < n; ++s) {
      if (s % k == k - 1) {
        ++dropped;
        continue;
      }
      t->record(s);
    }
    // The last sequence n-1 may itself be dropped: that part is trailing loss.
    const bool tail_dropped = (n - 1) % k == k - 1;
    EXPECT_EQ(t->lost_so_far(), dropped - (tail_dropped ? 1 : 0)) << "k " << k;
    EXPECT_EQ(t->lost_given_total(n), dropped) << "k " << k;
    EXPECT_EQ(t->counts().unique, n - dropped);
    EXPECT_EQ(t->counts().reordered, 0u);
  }
}

TEST(SequenceTracker, TrailingLossOnlyVisibleWithTotal) {
  auto t = fresh();
  for (uint64_t s = 0; s < 900; ++s) t->record(s);  // 100 lost at the end
  EXPECT_EQ(t->lost_so_far(), 0u);
  EXPECT_EQ(t->lost_given_total(1000), 100u);
  EXPECT_EQ(t->lost_given_total(900), 0u);
  EXPECT_EQ(t->lost_given_total(500), 0u) << "never negative";
}

TEST(SequenceTracker, SwappedAdjacentPairsAreReorderedNotLost) {
  auto t = fresh();
  const uint64_t n = 10'000;
  for (uint64_t s = 0; s < n; s += 2) {
    t->record(s + 1);
    t->record(s);
  }
  const auto& c = t->counts();
  EXPECT_EQ(c.reordered, n / 2);
  EXPECT_EQ(c.unique, n);
  EXPECT_EQ(c.duplicates, 0u);
  EXPECT_EQ(t->lost_so_far(), 0u);
  EXPECT_EQ(t->lost_given_total(n), 0u);
}

TEST(SequenceTracker, LossSoFarCountsGapUntilFilled) {
  auto t = fresh();
  t->record(0);
  t->record(5);
  EXPECT_EQ(t->lost_so_far(), 4u);
  t->record(3);
  EXPECT_EQ(t->lost_so_far(), 3u);
  EXPECT_EQ(t->counts().reordered, 1u);
}

TEST(SequenceTracker, DuplicatesAreCountedNotUnique) {
  auto t = fresh();
  for (uint64_t s = 0; s < 1000; ++s) {
    t->record(s);
    if (s % 10 == 0) t->record(s);  // immediate duplicate
  }
  t->record(500);  // old duplicate, inside the window
  t->record(0);
  const auto& c = t->counts();
  EXPECT_EQ(c.unique, 1000u);
  EXPECT_EQ(c.duplicates, 102u);
  EXPECT_EQ(c.received, 1102u);
  EXPECT_EQ(c.reordered, 0u);
  EXPECT_EQ(t->lost_given_total(1000), 0u);
}

TEST(SequenceTracker, DuplicateOfLateArrivalIsDuplicate) {
  auto t = fresh();
  t->record(0);
  t->record(2);
  t->record(1);
  t->record(1);
  EXPECT_EQ(t->counts().reordered, 1u);
  EXPECT_EQ(t->counts().duplicates, 1u);
  EXPECT_EQ(t->counts().unique, 3u);
}

TEST(SequenceTracker, ArrivalOlderThanWindowIsStale) {
  auto t = fresh();
  for (uint64_t s = 0; s < W + 100; ++s) t->record(s);
  // Window is [highest_next - W, highest_next) = [100, W + 100).
  t->record(99);  // just outside
  t->record(0);
  EXPECT_EQ(t->counts().stale, 2u);
  EXPECT_EQ(t->counts().received, W + 100) << "stale arrivals are not received";
  EXPECT_EQ(t->counts().unique, W + 100);
  EXPECT_EQ(t->counts().duplicates, 0u);
  t->record(100);  // oldest sequence inside the window: a duplicate
  EXPECT_EQ(t->counts().duplicates, 1u);
  EXPECT_EQ(t->counts().stale, 2u);
}

TEST(SequenceTracker, StaleNeverHidesLoss) {
  auto t = fresh();
  t->record(0);
  t->record(2 * W);
  t->record(2 * W + 1);  // a second arrival confirms the jump: 2W - 1 lost so far
  for (uint64_t s = 1; s < W; ++s) t->record(s);  // all older than the window
  EXPECT_EQ(t->counts().stale, W - 1);
  EXPECT_EQ(t->counts().unique, 3u);
  EXPECT_EQ(t->lost_so_far(), 2 * W - 1);
}

TEST(SequenceTracker, JumpBeyondWindowThenLateArrivalsInsideIt) {
  auto t = fresh();
  for (uint64_t s = 0; s < 1000; ++s) t->record(s);
  const uint64_t jump = 1000 + W + 500;  // advance > kWindow: the whole window is reset
  t->record(jump);
  // Held until a second arrival near it confirms it (the first of the loop below does).
  EXPECT_EQ(t->counts().highest_next, 1000u);
  EXPECT_EQ(t->counts().implausible, 1u);
  const uint64_t lo = jump + 1 - W;  // oldest sequence still inside the window
  // W..W+999 share their slots with 0..999, whose bits were set before the
  // jump: inside the new window they were never seen, so they are reordered.
  ASSERT_GE(W, lo);
  t->record(W);
  EXPECT_EQ(t->counts().highest_next, jump + 1);
  EXPECT_EQ(t->counts().implausible, 0u);
  EXPECT_EQ(t->lost_so_far(), jump - 1000 - 1);
  for (uint64_t s = W + 1; s < W + 1000; ++s) t->record(s);
  EXPECT_EQ(t->counts().reordered, 1000u);
  EXPECT_EQ(t->counts().duplicates, 0u);
  t->record(W + 5);
  EXPECT_EQ(t->counts().duplicates, 1u);
  t->record(lo);
  EXPECT_EQ(t->counts().reordered, 1001u);
  t->record(lo - 1);  // just outside the window
  t->record(999);
  EXPECT_EQ(t->counts().stale, 2u);
  EXPECT_EQ(t->counts().unique, 1000u + 1 + 1001);
  EXPECT_EQ(t->lost_so_far(), jump + 1 - (1000 + 1 + 1001));
}

TEST(SequenceTracker, JumpOfExactlyWindowMinusOneAndWindow) {
  for (uint64_t advance : {W - 1, W, W + 1}) {
    auto t = fresh();
    for (uint64_t s = 0; s < W; ++s) t->record(s);  // every bit set
    const uint64_t seq = W - 1 + advance;
    t->record(seq);
    // Every sequence inside the new window that was not received must be new.
    const uint64_t lo = seq + 1 - W;
    uint64_t expect_reordered = 0, expect_dup = 0;
    for (uint64_t s = lo; s < seq; ++s) {
      t->record(s);
      if (s < W) ++expect_dup;
      else ++expect_reordered;
    }
    EXPECT_EQ(t->counts().reordered, expect_reordered) << "advance " << advance;
    EXPECT_EQ(t->counts().duplicates, expect_dup) << "advance " << advance;
    // Only sequences that fell out of the window unseen stay lost (W, for advance W + 1).
    EXPECT_EQ(t->lost_so_far(), seq + 1 - (W + 1 + expect_reordered)) << "advance " << advance;
    EXPECT_EQ(t->lost_so_far(), advance > W ? advance - W : 0u) << "advance " << advance;
  }
}

TEST(SequenceTracker, GapWrappingRoundTheRingIsCleared) {
  auto t = fresh();
  for (uint64_t s = 0; s <= 16000; ++s) t->record(s);
  t->record(26000);  // gap [16001, 26000) crosses slot W-1 -> 0
  uint64_t dup = 0, reo = 0, stale = 0;
  for (uint64_t s = 0; s < 26000; ++s) {
    t->record(s);
    if (26001 - s > W) ++stale;
    else if (s <= 16000) ++dup;
    else ++reo;
  }
  EXPECT_EQ(t->counts().reordered, reo);
  EXPECT_EQ(t->counts().duplicates, dup);
  EXPECT_EQ(t->counts().stale, stale);
  EXPECT_EQ(reo, 26000u - 16001u);
  EXPECT_EQ(t->lost_so_far(), 0u);
}

// A gap of `gap` sequences starting at `start`, after the window has been
// filled once so that every slot holds a stale 1 bit: clear_range must
// clear exactly the gap, across 64-bit word boundaries.
TEST(SequenceTracker, ClearRangeAcrossWordBoundaries) {
  for (uint64_t offset : {0u, 1u, 2u, 31u, 62u, 63u, 64u, 65u, 127u, 128u, 129u, 200u, 4095u}) {
    for (uint64_t gap = 1; gap <= 200; ++gap) {
      auto t = fresh();
      const uint64_t start = W + offset;
      for (uint64_t s = 0; s < start; ++s) t->record(s);
      t->record(start + gap);  // sequences [start, start + gap) missing
      ASSERT_EQ(t->lost_so_far(), gap);
      for (uint64_t s = start; s < start + gap; ++s) t->record(s);
      const auto& c = t->counts();
      ASSERT_EQ(c.reordered, gap) << "offset " << offset << " gap " << gap;
      ASSERT_EQ(c.duplicates, 0u) << "offset " << offset << " gap " << gap;
      ASSERT_EQ(t->lost_so_far(), 0u);
      // The neighbours of the gap keep their bits: re-sending them is a duplicate.
      t->record(start - 1);
      t->record(start + gap);
      ASSERT_EQ(t->counts().duplicates, 2u) << "offset " << offset << " gap " << gap;
      // And the gap is now seen.
      t->record(start);
      t->record(start + gap - 1);
      ASSERT_EQ(t->counts().duplicates, 4u) << "offset " << offset << " gap " << gap;
      // Every sequence in the window is seen: clearing must not have touched
      // the bits of older sequences sharing the gap's 64-bit words.
      const uint64_t hn = t->counts().highest_next;
      for (uint64_t s = hn - W; s < hn; ++s) t->record(s);
      ASSERT_EQ(t->counts().duplicates, 4u + W) << "offset " << offset << " gap " << gap;
      ASSERT_EQ(t->counts().reordered, gap) << "offset " << offset << " gap " << gap;
    }
  }
}

TEST(SequenceTracker, ManyGapsInOneRunAreClearedIndependently) {
  auto t = fresh();
  std::mt19937_64 rng(8);
  uint64_t next = 0;
  std::vector<uint64_t> missing;
  for (uint64_t s = 0; s < W; ++s) t->record(next++);
  for (int g = 0; g < 500; ++g) {
    const uint64_t gap = 1 + rng() % 150;
    for (uint64_t k = 0; k < gap; ++k) missing.push_back(next++);
    const uint64_t run = 1 + rng() % 100;
    for (uint64_t k = 0; k < run; ++k) t->record(next++);
    // Fill the gaps late but well inside the window.
    if (missing.size() > 3000) {
      for (uint64_t s : missing) t->record(s);
      missing.clear();
    }
  }
  for (uint64_t s : missing) t->record(s);
  EXPECT_EQ(t->counts().duplicates, 0u);
  EXPECT_EQ(t->counts().stale, 0u);
  EXPECT_EQ(t->lost_so_far(), 0u);
  EXPECT_EQ(t->counts().unique, next);
}

TEST(SequenceTracker, MaximumSequenceIsImplausibleNotWrapped) {
  // seq 2^64 - 1 would wrap highest_next to 0: only a forged header carries it.
  auto t = fresh();
  for (uint64_t s = 0; s < 10; ++s) t->record(s);
  t->record(~uint64_t{0});
  EXPECT_EQ(t->counts().implausible, 1u);
  EXPECT_EQ(t->counts().received, 10u);
  EXPECT_EQ(t->counts().unique, 10u);
  EXPECT_EQ(t->counts().highest_next, 10u);
  EXPECT_EQ(t->lost_so_far(), 0u);
  t->record(10);
  EXPECT_EQ(t->counts().unique, 11u);
}

// Reference model with unlimited memory and the documented rules: the
// window, and a jump of more than a window held until an arrival within a
// window of it confirms it.
struct Model {
  std::unordered_set<uint64_t> seen;
  uint64_t next = 0, unique = 0, dup = 0, reo = 0, stale = 0, received = 0, implausible = 0;
  uint64_t pending = 0;
  bool has_pending = false;
  void record(uint64_t s) {
    if (s >= next && has_pending) {
      const uint64_t d = s > pending ? s - pending : pending - s;
      if (d != 0 && d <= W) {
        has_pending = false;
        next = pending + 1;
        seen.insert(pending);
        ++unique;
        ++received;
      }
    }
    if (s >= next) {
      if (s - next + 1 > W) {
        implausible += has_pending ? 1 : 0;
        pending = s;
        has_pending = true;
        return;
      }
      next = s + 1;
      seen.insert(s);
      ++unique;
      ++received;
      return;
    }
    if (next - s > W) {
      ++stale;
      return;
    }
    ++received;
    if (!seen.insert(s).second) {
      ++dup;
      return;
    }
    ++unique;
    ++reo;
  }
};

TEST(SequenceTracker, MatchesReferenceModelOnRandomTraffic) {
  std::mt19937_64 rng(11);
  for (int run = 0; run < 10; ++run) {
    auto t = fresh();
    Model m;
    uint64_t next = 0;
    for (int i = 0; i < 200'000; ++i) {
      uint64_t s;
      const uint64_t r = rng() % 1000;
      auto back = [&](uint64_t span) { return next > 0 ? next - 1 - rng() % std::min<uint64_t>(next, span) : 0; };
      if (r < 850) {
        s = next;  // in order
      } else if (r < 900) {
        s = next + 1 + rng() % 50;  // small gap
      } else if (r < 960) {
        s = back(300);  // late or duplicate
      } else if (r < 990) {
        s = back(3 * W);  // maybe older than the window
      } else if (r < 998) {
        s = next + rng() % (2 * W);  // jump, maybe beyond the window
      } else {
        s = next + W - 2 + rng() % 3;  // advance of W - 1, W or W + 1
      }
      if (s >= next) next = s + 1;
      t->record(s);
      m.record(s);
    }
    const auto& c = t->counts();
    ASSERT_EQ(c.highest_next, m.next) << "run " << run;
    ASSERT_EQ(c.unique, m.unique) << "run " << run;
    ASSERT_EQ(c.duplicates, m.dup) << "run " << run;
    ASSERT_EQ(c.reordered, m.reo) << "run " << run;
    ASSERT_EQ(c.stale, m.stale) << "run " << run;
    ASSERT_EQ(c.received, m.received) << "run " << run;
    ASSERT_EQ(c.implausible, m.implausible + (m.has_pending ? 1 : 0)) << "run " << run;
  }
}

}  // namespace

// Nothing one datagram says moves the window: a lone far sequence (forged,
// or the last packet after an outage) is implausible, not a reason to call
// later real packets stale or thousands lost.
TEST(SequenceTracker, LoneFarJumpIsImplausibleAndChangesNothing) {
  auto t = fresh();
  for (uint64_t s = 0; s < 100; ++s) t->record(s);
  t->record(~0ull - 1);
  t->record(1'000'000'000'000ull);  // another lone one: the first was never confirmed
  for (uint64_t s = 100; s < 200; ++s) t->record(s);
  EXPECT_EQ(t->counts().unique, 200u);
  EXPECT_EQ(t->counts().received, 200u);
  EXPECT_EQ(t->counts().stale, 0u);
  EXPECT_EQ(t->counts().implausible, 2u);
  EXPECT_EQ(t->lost_so_far(), 0u);
  t->record(~0ull);
  EXPECT_EQ(t->counts().implausible, 3u);
  EXPECT_EQ(t->counts().highest_next, 200u);
}

TEST(SequenceTracker, OutageLongerThanTheWindowIsConfirmedByTheNextPacket) {
  auto t = fresh();
  for (uint64_t s = 0; s < 10; ++s) t->record(s);
  const uint64_t back = 10 + 5 * W;
  t->record(back + 1);  // arrives first: reordered across the outage
  t->record(back);
  for (uint64_t s = back + 2; s < back + 100; ++s) t->record(s);
  EXPECT_EQ(t->counts().implausible, 0u);
  EXPECT_EQ(t->counts().unique, 10u + 100);
  EXPECT_EQ(t->lost_so_far(), 5 * W);
}
