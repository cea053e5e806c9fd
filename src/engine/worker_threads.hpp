// Starting the per-core workers, once for pktgen and rx: each thread pins
// itself, sets up its backend's part (queues are opened in the thread that
// uses them: io_uring rings are single-issuer), drops the capabilities the
// backend no longer needs, says it is ready, and runs. Nothing here runs
// per packet.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "topo/topology.hpp"
#include "util/privileges.hpp"

namespace rateline::engine {

// What every worker has, whatever it runs. The reporter reads `done`
// (released by the worker as it exits) and, after join, `error`.
struct WorkerThread {
  int cpu = -1;
  std::thread thread;
  std::string error;
  std::atomic<bool> done{false};
  CapabilityDrop caps;  // this thread's, after its setup
};

// Starts one thread per worker and returns once each is ready or failed.
// `body(worker, ready)` sets up, calls ready() once, then runs; an exception
// from it becomes the worker's error. `keep` = capabilities kept after setup.
template <class W, class Body>
void start_workers(std::vector<std::unique_ptr<W>>& workers, std::vector<int> keep, Body body) {
  // Shared: a thread may still be leaving count_down() when the last wait() returns.
  auto ready = std::make_shared<std::latch>(static_cast<std::ptrdiff_t>(workers.size()));
  auto kept = std::make_shared<const std::vector<int>>(std::move(keep));
  for (auto& wp : workers) {
    W& w = *wp;
    w.thread = std::thread([&w, ready, kept, body] {
      w.error = topo::pin_current_thread(w.cpu);
      bool counted = false;
      const std::function<void()> on_ready = [&] {
        w.caps = keep_only_capabilities(*kept);
        counted = true;
        ready->count_down();
      };
      try {
        body(w, on_ready);
      } catch (const std::exception& e) {
        w.error = e.what();
      }
      if (!counted) ready->count_down();
      w.done.store(true, std::memory_order_release);
    });
  }
  ready->wait();
}

template <class W>
bool all_done(const std::vector<std::unique_ptr<W>>& workers) {
  for (const auto& w : workers)
    if (!w->done.load(std::memory_order_acquire)) return false;
  return true;
}

}  // namespace rateline::engine
