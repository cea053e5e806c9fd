// rx's setup: from the parsed options to a backend, its workers' plans and
// the drop ledger's starting counters. Once per run; nothing here runs per packet.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend.hpp"
#include "engine/rx_loop.hpp"
#include "engine/worker_threads.hpp"
#include "ledger/ledger.hpp"
#include "rx_config.hpp"
#include "stats/counters.hpp"
#include "topo/topology.hpp"

namespace rateline::rx {

struct Worker : engine::WorkerThread {
  unsigned index = 0;
  engine::RxPlan plan;
  std::unique_ptr<stats::RxSnapshotRing> snapshots = std::make_unique<stats::RxSnapshotRing>(16);
  std::unique_ptr<engine::StreamEventRing> events = std::make_unique<engine::StreamEventRing>(4096);
  stats::Snapshot<stats::RxCounters> latest{};
  engine::RxResult result;
  drivers::RxWorkerInfo info;
  std::unique_ptr<engine::FrameKeeper> keeper;  // rx --pcap-out
};

struct Run {
  drivers::SocketAddress bind;
  std::string device;  // the interface raw backends tap ("" when none)
  std::string iface_name;
  drivers::BackendChoice choice;
  topo::Placement placement;
  std::unique_ptr<drivers::RxBackend> backend;
  std::vector<std::unique_ptr<Worker>> workers;
  ledger::Scope ledger_scope;
  ledger::Counters ledger_start;
  nlohmann::json result;  // the result record, once reported
};

// Throws SetupError / BackendUnavailable with a message a user can act on.
Run set_up(const Config& cfg);

// Starts the workers; throws the first worker's setup error (after joining them all).
void start(Run& run, std::atomic<bool>& workers_stop);

}  // namespace rateline::rx
