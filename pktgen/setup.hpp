// pktgen's setup: from the parsed options to a backend and one plan per
// worker. Straight-line, once per run; nothing here runs per packet.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend.hpp"
#include "engine/tx_plan.hpp"
#include "engine/worker_threads.hpp"
#include "net/frame.hpp"
#include "pktgen_config.hpp"
#include "report/link.hpp"
#include "socket/reply_listener.hpp"
#include "stats/counters.hpp"
#include "topo/topology.hpp"

namespace rateline::pktgen {

struct Worker : engine::WorkerThread {
  drivers::TxWorker queue;  // index and source ports
  engine::TxPlan plan;
  std::unique_ptr<stats::TxSnapshotRing> snapshots = std::make_unique<stats::TxSnapshotRing>(16);
  stats::Snapshot<stats::TxCounters> latest{};
  engine::TxResult result;
};

// Bytes per packet at each layer, as a mean over a size mix's cycle.
struct MeanFrame {
  double payload = 0, l2 = 0, l1 = 0;
};

struct Run {
  drivers::SocketAddress dst;
  net::FrameSizes sizes;  // a size mix: its largest
  MeanFrame mean;         // per packet: one size's, or a size mix's mean
  report::LinkInfo link;
  drivers::BackendChoice choice;
  topo::Placement placement;
  std::unique_ptr<drivers::TxBackend> backend;
  uint16_t sender_id = 0;
  uint16_t streams = 0;
  std::optional<double> asked_pps;
  std::string stamps;  // how send stamps are taken, for the report
  std::vector<std::unique_ptr<Worker>> workers;
  std::unique_ptr<drivers::ReplyListener> replies;  // --rtt
};

// --rtt: how long the listener keeps reading after the last packet left.
inline constexpr uint64_t kReplyGraceNs = 250'000'000;

// Throws SetupError / BackendUnavailable with a message a user can act on.
Run set_up(const Config& cfg);

}  // namespace rateline::pktgen
