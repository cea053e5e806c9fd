// Which of a worker's flows the next packets go to, so that every flow gets
// an even share whatever the burst and batch.
//
// The worker's packets are one sequence, dealt in rounds: a round gives each
// flow in turn `turn` consecutive packets (the batch, so one batch carries
// one flow). Bursts only say when to pause: a turn a burst cuts short goes on
// in the next burst, so no flow is always the one left with a burst's
// remainder. With a quota, the last round, too short for full turns, is dealt
// evenly: each flow gets left / flows, the round's first left % flows one more.
// With a shuffle seed (pktgen --flows-random), every round visits the flows
// in a new random order drawn from it; the shares stay the same.
//
// Guarantee, per worker: after a run with a quota, flows' counts differ by
// at most 1 packet; at any moment before (a run cut by --duration or a
// stop), by at most `turn` packets.
//
// Called per batch, never per packet: the loop asks flow() and run_left(),
// fills at most run_left() slots for that flow, then advance()s by what the
// backend took (what it did not take is asked for again). The order is
// allocated here, before the loop; a shuffle costs O(flows) per round of
// flows * turn packets.
#pragma once

#include <cstdint>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

namespace rateline::engine {

class FlowSchedule {
 public:
  // flows >= 1, turn >= 1; quota 0 = no quota (rounds never shorten). One
  // flow has one endless turn: its batches stay as bursts cut them.
  FlowSchedule(uint32_t flows, uint64_t turn, uint64_t quota, std::optional<uint64_t> shuffle_seed = std::nullopt)
      : order_(flows),
        turn_(flows == 1 ? ~0ull : turn),
        left_(quota ? quota : ~0ull),
        shuffle_(shuffle_seed.has_value()),
        rng_(shuffle_seed.value_or(0)) {
    std::iota(order_.begin(), order_.end(), 0u);
    start_round();
  }

  uint32_t flow() const { return order_[pos_]; }
  // Packets the current flow gets before the next one's turn (0: quota done).
  uint64_t run_left() const { return run_left_; }

  // n <= run_left() packets of the current flow were sent.
  void advance(uint64_t n) {
    run_left_ -= n;
    left_ -= n;
    if (run_left_) return;
    if (++pos_ == order_.size()) {
      start_round();
    } else {
      run_left_ = turn_at(pos_);
      if (!run_left_) pos_ = 0;  // a short last round ends early: left_ is 0
    }
  }

 private:
  void start_round() {
    pos_ = 0;
    const auto flows = static_cast<uint32_t>(order_.size());
    if (left_ / flows >= turn_) {
      short_ = false;
    } else {  // the last round: left_ < flows * turn
      short_ = true;
      share_ = left_ / flows;
      extra_ = static_cast<uint32_t>(left_ % flows);
    }
    if (shuffle_) {
      for (uint32_t i = flows - 1; i > 0; --i) std::swap(order_[i], order_[next_random() % (i + 1)]);
    }
    run_left_ = turn_at(0);
  }

  uint64_t turn_at(uint32_t pos) const { return short_ ? share_ + (pos < extra_ ? 1 : 0) : turn_; }

  // splitmix64: one seed gives one sequence of orders, on every host.
  uint64_t next_random() {
    uint64_t z = (rng_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  std::vector<uint32_t> order_;  // the flows in this round's order
  uint64_t turn_;
  uint64_t left_;  // packets still to send (~0: no quota)
  bool shuffle_;
  uint64_t rng_;
  uint32_t pos_ = 0;  // position in order_
  uint64_t run_left_ = 0;
  bool short_ = false;  // the last round of a quota, dealt evenly
  uint64_t share_ = 0;
  uint32_t extra_ = 0;
};

}  // namespace rateline::engine
