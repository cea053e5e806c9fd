// What every sending worker does around its packets, written once: bursts
// until the quota, the duration, a stall or stop; per burst one clock read,
// the in-burst rate, progress snapshots and the pacer's wait; then end
// markers, a few spaced copies per flow.
//
// The packets themselves are a backend's step, passed in as a callable:
// engine::run_tx (tx_loop.hpp) fills and commits batches of a TxQueue's
// slots; the xdp backend (drivers/xdp/xdp_tx.cpp) asks the kernel to build,
// stamp and send n frames of one flow per BPF_PROG_RUN call. The callables
// inline: there is no per-packet (or per-batch) indirect call.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "engine/tx_plan.hpp"
#include "pace/pacer.hpp"
#include "stats/counters.hpp"
#include "util/clock.hpp"

namespace rateline::engine {

inline void publish(stats::TxSnapshotRing& snapshots, stats::TxCounters& c, const pace::Pacer& pacer, uint64_t now,
                    bool final) {
  c.pace_slips = pacer.slips();
  snapshots.try_push({c, now, final});  // a full ring means the reporter is behind: skip, never wait
}

// Bursts of `burst_size` packets (fewer at the quota). `send(left)` sends up
// to `left` packets, adds them to c.packets and returns how many went; fewer
// than asked means stop, a stall (it sets result.stalled) or a signal cut it
// short. `clock()` is the burst's time (a TSC read where stamps use the TSC).
// `refresh(c)` runs before each progress snapshot: counts a backend keeps
// elsewhere (the xdp backend's driver drops) are copied in there.
template <class Clock, class Send, class Refresh>
void send_bursts(const TxPlan& plan, uint64_t burst_size, pace::Pacer& pacer, stats::TxCounters& c,
                 TxResult& result, stats::TxSnapshotRing& snapshots, const std::atomic<bool>& stop, Clock&& clock,
                 Send&& send, Refresh&& refresh) {
  const uint64_t start_ns = clock();
  const uint64_t end_ns = plan.duration_ns ? start_ns + plan.duration_ns : ~0ull;
  uint64_t next_publish_ns = start_ns + plan.publish_every_ns;
  pacer.start(start_ns);
  c.first_ns = start_ns;

  uint64_t now = start_ns;
  while ((plan.quota == 0 || c.packets < plan.quota) && now < end_ns && !result.stalled &&
         !stop.load(std::memory_order_relaxed)) {
    const uint64_t burst_start_ns = now;
    uint64_t burst = burst_size;
    if (plan.quota) burst = std::min<uint64_t>(burst, plan.quota - c.packets);
    const uint64_t sent = send(burst);
    now = clock();
    c.last_ns = now;
    if (burst == burst_size && sent == burst) c.note_burst(burst_size, now - burst_start_ns);
    if (now >= next_publish_ns) {
      refresh(c);
      publish(snapshots, c, pacer, now, false);
      next_publish_ns = now + plan.publish_every_ns;
    }
    if (result.stalled || (plan.quota && c.packets >= plan.quota)) break;
    if (!pacer.wait_for_next_burst(now, stop)) break;
    if (plan.pace.paced()) now = clock();  // unpaced, no time passed since the read above
  }
}

// End markers: plan.end_markers copies per flow, spaced by the plan's gap,
// so the receiver learns the exact total even when its queue was full at
// the end of the data. `send_one(flow)` sends one flow's marker and returns
// 1 when it went, else 0; the count is returned.
template <class SendOne>
uint64_t send_end_markers(TxPlan& plan, const TxResult& result, SendOne&& send_one) {
  std::atomic<bool> no_stop{false};
  uint64_t sent = 0;
  for (uint32_t copy = 0; copy < plan.end_markers && !result.stalled; ++copy) {
    if (copy) pace::wait_until(now_ns() + plan.end_marker_gap_ns, no_stop);
    for (TxFlow& f : plan.flows) sent += send_one(f);
  }
  return sent;
}

}  // namespace rateline::engine
