// engine::FlowSchedule (src/engine/flow_schedule.hpp), driven the way the
// send loops drive it: bursts cut into batches, a batch never longer than
// the flow's run, and backends that take less than they are offered.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/flow_schedule.hpp"

namespace {

using rateline::engine::FlowSchedule;

struct Sent {
  std::vector<uint64_t> per_flow;
  uint64_t worst_spread = 0;  // largest max - min seen after any batch
  uint64_t batches = 0;
  bool overlong_batch = false;
};

uint64_t spread(const std::vector<uint64_t>& v) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *hi - *lo;
}

// The loop of engine::run_tx: bursts of `burst` (the last one shortened to
// the quota), each cut into batches of at most `batch` and of at most the
// flow's run; every `short_every`-th commit takes only part of its batch.
Sent drive(uint32_t flows, uint32_t burst, uint32_t batch, uint64_t quota, uint64_t packets, uint32_t short_every = 0,
           std::optional<uint64_t> seed = std::nullopt) {
  FlowSchedule s(flows, batch, quota, seed);
  Sent r;
  r.per_flow.assign(flows, 0);
  const uint64_t total = quota ? quota : packets;
  uint64_t sent = 0;
  while (sent < total) {
    uint64_t burst_left = std::min<uint64_t>(burst, total - sent);
    while (burst_left) {
      const uint64_t want = std::min<uint64_t>({burst_left, batch, s.run_left()});
      if (want == 0) return r;  // the schedule has nothing left while the loop wants more: caught below
      uint64_t taken = want;
      if (short_every && ++r.batches % short_every == 0 && want > 1) taken = want / 2;
      r.overlong_batch |= taken > batch;
      r.per_flow[s.flow()] += taken;
      s.advance(taken);
      sent += taken;
      burst_left -= taken;
      r.worst_spread = std::max(r.worst_spread, spread(r.per_flow));
    }
  }
  return r;
}

std::string what(uint32_t flows, uint32_t burst, uint32_t batch, uint64_t quota) {
  return "flows " + std::to_string(flows) + ", burst " + std::to_string(burst) + ", batch " + std::to_string(batch) +
         ", quota " + std::to_string(quota);
}

// The guarantee: with a quota, counts end at most 1 apart; at any moment
// before, at most one batch apart; every packet of the quota is sent.
TEST(FlowSchedule, QuotaRunsEndAtMostOnePacketApart) {
  for (const uint32_t burst : {1u, 7u, 100u, 128u})
    for (const uint32_t batch : {1u, 32u, 64u})
      for (uint32_t flows = 1; flows <= 8; ++flows)
        for (const uint64_t quota : {uint64_t{25600}, uint64_t{25601}, uint64_t{10007}, uint64_t{flows} * 1000,
                                     uint64_t{flows} * 1000 + 3, uint64_t{flows}, uint64_t{1}, uint64_t{31}})
          for (const uint32_t short_every : {0u, 3u}) {
            const std::optional<uint64_t> seed = short_every ? std::optional<uint64_t>(quota) : std::nullopt;
            const Sent r = drive(flows, burst, batch, quota, 0, short_every, seed);
            uint64_t sum = 0;
            for (const uint64_t n : r.per_flow) sum += n;
            ASSERT_EQ(sum, quota) << what(flows, burst, batch, quota);
            EXPECT_LE(spread(r.per_flow), 1u) << what(flows, burst, batch, quota)
                                              << (short_every ? ", short commits, random order" : "");
            EXPECT_LE(r.worst_spread, batch) << what(flows, burst, batch, quota);
            EXPECT_FALSE(r.overlong_batch) << what(flows, burst, batch, quota);
          }
}

// Four flows: exact shares whatever the burst (turns taken per batch within
// each burst would leave the last flow with only the bursts' remainders).
TEST(FlowSchedule, FourFlowsShareEveryBurstShapeExactly) {
  for (const uint32_t burst : {1u, 7u, 100u, 128u}) {
    const Sent r = drive(4, burst, 32, 25600, 0);
    EXPECT_EQ(r.per_flow, (std::vector<uint64_t>{6400, 6400, 6400, 6400})) << "burst " << burst;
  }
  const Sent odd = drive(4, 100, 32, 10001, 0);
  EXPECT_EQ(odd.per_flow, (std::vector<uint64_t>{2501, 2500, 2500, 2500}));
}

// No quota (--duration, Ctrl-C): the run may end after any batch, so the
// counts are even to within one batch at every moment.
TEST(FlowSchedule, UnboundedRunsStayWithinOneBatch) {
  for (const uint32_t burst : {1u, 7u, 100u, 128u})
    for (const uint32_t batch : {1u, 32u, 64u})
      for (uint32_t flows = 1; flows <= 8; ++flows) {
        for (const std::optional<uint64_t> seed : {std::optional<uint64_t>(), std::optional<uint64_t>(42)}) {
          const Sent r = drive(flows, burst, batch, 0, 20011, 5, seed);
          EXPECT_LE(r.worst_spread, batch) << what(flows, burst, batch, 0) << (seed ? ", random order" : "");
        }
      }
}

// A turn longer than a burst (the XDP generator's turn is one call) still
// ends even at the quota, in calls no longer than a turn.
TEST(FlowSchedule, LongTurnsEndEvenAtTheQuota) {
  for (uint32_t flows = 1; flows <= 8; ++flows) {
    FlowSchedule s(flows, 16384, 25600);
    std::vector<uint64_t> per_flow(flows, 0);
    uint64_t sent = 0;
    while (sent < 25600) {
      const uint64_t n = std::min<uint64_t>(s.run_left(), 16384);
      ASSERT_GT(n, 0u) << "flows " << flows;
      per_flow[s.flow()] += n;
      s.advance(n);
      sent += n;
    }
    EXPECT_LE(spread(per_flow), 1u) << "flows " << flows;
    EXPECT_EQ(s.run_left(), 0u) << "quota done: nothing more to send";
  }
}

// The flow of each turn, for `turns` turns of a schedule without a quota.
std::vector<uint32_t> turns_of(uint32_t flows, std::optional<uint64_t> seed, int turns) {
  FlowSchedule s(flows, 32, 0, seed);
  std::vector<uint32_t> out;
  for (int i = 0; i < turns; ++i) {
    out.push_back(s.flow());
    s.advance(s.run_left());
  }
  return out;
}

// --flows-random: every round visits each flow once, in an order drawn from
// the seed: the same seed gives the same orders, another seed others.
TEST(FlowSchedule, RandomOrderIsAPermutationPerRoundAndFollowsTheSeed) {
  constexpr uint32_t kFlows = 8;
  constexpr int kRounds = 50;
  const auto a = turns_of(kFlows, 7, kFlows * kRounds);
  EXPECT_EQ(a, turns_of(kFlows, 7, kFlows * kRounds)) << "same seed, same orders";
  EXPECT_NE(a, turns_of(kFlows, 8, kFlows * kRounds)) << "another seed, other orders";
  std::set<std::vector<uint32_t>> orders;
  for (int r = 0; r < kRounds; ++r) {
    std::vector<uint32_t> round(a.begin() + r * kFlows, a.begin() + (r + 1) * kFlows);
    orders.insert(round);
    std::sort(round.begin(), round.end());
    for (uint32_t f = 0; f < kFlows; ++f) ASSERT_EQ(round[f], f) << "round " << r << " is not a permutation";
  }
  EXPECT_GT(orders.size(), kRounds / 2u) << "rounds should rarely repeat an order (8! of them)";
  const auto in_order = turns_of(kFlows, std::nullopt, kFlows * 3);
  for (size_t i = 0; i < in_order.size(); ++i) EXPECT_EQ(in_order[i], i % kFlows) << "no seed: flows in order";
}

// One flow: one endless turn, so batches are cut by bursts only.
TEST(FlowSchedule, OneFlowNeverCutsABatch) {
  FlowSchedule s(1, 32, 0);
  for (int i = 0; i < 100; ++i) {
    EXPECT_GE(s.run_left(), 32u);
    EXPECT_EQ(s.flow(), 0u);
    s.advance(i % 2 ? 32 : 4);
  }
}

}  // namespace
