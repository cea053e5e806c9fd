// One sweep over one target (a directory, a made filesystem, a device):
// per block size create the file, write it (timed), drop its cache, read
// it (timed), optionally run dd the same way, remove the file. Setup and
// reporting for the engine's per-block loop; nothing here runs per block.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "config.hpp"
#include "engine.hpp"
#include "report/json_lines.hpp"
#include "results.hpp"
#include "worker_watch.hpp"

namespace rateline::blocktest {

struct Target {
  std::string name;        // table column: "ext4", or the --dir filesystem's type
  std::string dir;         // files go here ("" with a device)
  std::string device;      // --device
  int backing_fd = -1;     // image under a buffered loop device: evicted with the file
  bool is_tmpfs = false;
  std::string note;
};

// Live progress on stderr for phases longer than a second; samples the
// worker threads once a second too. Reads the engine's relaxed counter.
class Progress {
 public:
  Progress(bool enabled, WorkerWatch& watch);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void start_phase(const std::string& label, uint64_t blocks, uint64_t block_bytes);
  void end_phase();
  std::atomic<uint64_t>& counter() { return done_; }

 private:
  void loop();
  WorkerWatch& watch_;
  const bool enabled_;
  const bool tty_;
  std::atomic<uint64_t> done_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool quit_ = false, active_ = false, printed_ = false;
  std::string label_;
  uint64_t blocks_ = 0, block_bytes_ = 0, start_ns_ = 0;
  std::thread thread_;
};

class Sweeper {
 public:
  Sweeper(const Config& cfg, Engine& engine, WorkerWatch& watch, Progress& progress, report::JsonLines& json);
  // Throws SetupError when the target cannot be used at all (no space, ...).
  FsOutcome run(const Target& t);
  bool interrupted() const { return interrupted_; }
  bool any_failure() const { return failures_ > 0; }

 private:
  SizeOutcome run_size(const Target& t, const SizePlan& sp, bool& stop_target);
  PhaseOutcome run_phase(const std::string& label, bool write, const SizePlan& sp, const std::string& device_stat);
  std::string prepare_read(const Target& t, int fd, uint64_t bytes);
  void compare_dd(const Target& t, const SizePlan& sp, SizeOutcome& so);

  const Config& cfg_;
  Engine& engine_;
  WorkerWatch& watch_;
  Progress& progress_;
  report::JsonLines& json_;
  uint64_t seed_;
  bool interrupted_ = false;
  int failures_ = 0;
};

}  // namespace rateline::blocktest
