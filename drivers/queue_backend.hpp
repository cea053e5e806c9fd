// A backend whose workers each open one queue of a concrete class and run
// the engine's loop on it: the common case (every backend but xdp, whose
// loop runs in the kernel). The loop is instantiated here for that class, so every call
// in it inlines; the only indirect call is run(), once per worker.
#pragma once

#include <functional>
#include <utility>

#include "backend.hpp"
#include "engine/queue.hpp"
#include "engine/rx_loop.hpp"
#include "engine/tx_loop.hpp"

namespace rateline::drivers {

template <engine::TxQueue Queue, class Config>
class QueueTxBackend : public TxBackend {
 public:
  using MakeConfig = std::function<Config(const TxWorker&)>;
  explicit QueueTxBackend(MakeConfig config) : config_(std::move(config)) {}

  engine::TxResult run(const TxWorker& w, const engine::TxPlan& plan, stats::TxSnapshotRing& snapshots,
                       const std::atomic<bool>& stop, const std::function<void()>& ready) override {
    Queue q(config_(w));
    ready();
    return engine::run_tx(q, plan, snapshots, stop);
  }

 private:
  MakeConfig config_;
};

template <engine::RxQueue Queue, class Config>
class QueueRxBackend : public RxBackend {
 public:
  using MakeConfig = std::function<Config(unsigned index)>;
  explicit QueueRxBackend(MakeConfig config) : config_(std::move(config)) {}

  bool workers_see_frames() const override { return Queue::kLayer == engine::Layer::ethernet; }
  bool has_buffer_ring() const override {
    return requires(const Queue& q) { q.buffer_ring_empty(); };
  }

  engine::RxResult run(unsigned index, const engine::RxPlan& plan, stats::RxSnapshotRing& snapshots,
                       const std::atomic<bool>& stop, RxWorkerInfo& info,
                       const std::function<void()>& ready) override {
    Queue q(config_(index));
    if constexpr (requires { q.info(); }) info.socket = q.info();
    if constexpr (requires { q.mode(); }) info.mode = q.mode();
    ready();
    engine::RxResult r = engine::run_rx(q, plan, snapshots, stop, [&q] { return q.drops(); });
    if constexpr (requires { q.buffer_ring_empty(); }) info.buffer_ring_empty = q.buffer_ring_empty();
    return r;
  }

 private:
  MakeConfig config_;
};

}  // namespace rateline::drivers
