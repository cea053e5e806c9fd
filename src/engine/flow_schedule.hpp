// Which of a worker's flows the next packets go to, so that every flow gets
// an even share whatever the burst and batch.
//
// The worker's packets are one sequence, dealt in rounds: a round gives each
// flow in turn `turn` consecutive packets (the batch, so one batch carries
// one flow). Bursts only say when to pause: a turn a burst cuts short goes on
// in the next burst, so no flow is always the one left with a burst's
// remainder. With a quota, the last round, too short for full turns, is dealt
// evenly: each flow gets left / flows and the first left % flows one more.
//
// Guarantee, per worker: after a run with a quota, flows' counts differ by
// at most 1 packet; at any moment before (a run cut by --duration or a
// stop), by at most `turn` packets.
//
// Called per batch, never per packet: the loop asks flow() and run_left(),
// fills at most run_left() slots for that flow, then advance()s by what the
// backend took (what it did not take is asked for again).
#pragma once

#include <cstdint>

namespace rateline::engine {

class FlowSchedule {
 public:
  // flows >= 1, turn >= 1; quota 0 = no quota (rounds never shorten). One
  // flow has one endless turn: its batches stay as bursts cut them.
  FlowSchedule(uint32_t flows, uint64_t turn, uint64_t quota)
      : flows_(flows), turn_(flows == 1 ? ~0ull : turn), left_(quota ? quota : ~0ull) {
    start_round();
  }

  uint32_t flow() const { return flow_; }
  // Packets the current flow gets before the next one's turn (0: quota done).
  uint64_t run_left() const { return run_left_; }

  // n <= run_left() packets of the current flow were sent.
  void advance(uint64_t n) {
    run_left_ -= n;
    left_ -= n;
    if (run_left_) return;
    if (++flow_ == flows_) {
      start_round();
    } else {
      run_left_ = turn_of(flow_);
      if (!run_left_) flow_ = 0;  // a short last round ends early: left_ is 0
    }
  }

 private:
  void start_round() {
    flow_ = 0;
    if (left_ / flows_ >= turn_) {
      short_ = false;
    } else {  // the last round: left_ < flows * turn
      short_ = true;
      share_ = left_ / flows_;
      extra_ = static_cast<uint32_t>(left_ % flows_);
    }
    run_left_ = turn_of(0);
  }

  uint64_t turn_of(uint32_t f) const { return short_ ? share_ + (f < extra_ ? 1 : 0) : turn_; }

  uint32_t flows_;
  uint64_t turn_;
  uint64_t left_;  // packets still to send (~0: no quota)
  uint32_t flow_ = 0;
  uint64_t run_left_ = 0;
  bool short_ = false;  // the last round of a quota, dealt evenly
  uint64_t share_ = 0;
  uint32_t extra_ = 0;
};

}  // namespace rateline::engine
