// Was a phase served by io-wq workers? Two independent measurements:
//
// 1. Punts, exactly: a perf counter on the tracepoint
//    io_uring:io_uring_queue_async_work, opened for the submitting thread.
//    It fires once for every request io_uring hands to io-wq instead of
//    completing it inline (the file's nonblocking attempt returned EAGAIN,
//    or the op always blocks, like fsync). Needs tracefs (for the event id)
//    and perf permission (root, or perf_event_paranoid <= -1); else "n/a".
// 2. Worker CPU time: the iou-wrk-<pid> threads of this process, found in
//    /proc/self/task/*/comm, and the nanoseconds each ran (schedstat field
//    1) and waited runnable (field 2) during the phase. The submitting
//    thread's own schedstat is taken too, so a report can say where the
//    wall time went (submitter on CPU, workers on CPU, both waiting).
// Samples are taken at phase start and end, outside the timed loop, and by
// the progress thread once a second (a worker that exits mid-phase still counts).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace rateline::blocktest {

struct WorkerUsage {
  bool have_punts = false;
  uint64_t punts = 0;            // requests queued to io-wq (tracepoint)
  unsigned workers = 0;          // iou-wrk threads that ran during the phase
  uint64_t worker_cpu_ns = 0;    // their CPU time in the phase
  uint64_t worker_wait_ns = 0;   // their time runnable but not running
  uint64_t self_cpu_ns = 0;      // the submitting thread's CPU time
  uint64_t self_wait_ns = 0;
  uint64_t self_switches = 0;    // its voluntary context switches (sleeps in io_uring_enter)
};

class WorkerWatch {
 public:
  // Call from the submitting thread (the punt counter follows it).
  explicit WorkerWatch(bool use_tracepoint);
  ~WorkerWatch();
  WorkerWatch(const WorkerWatch&) = delete;
  WorkerWatch& operator=(const WorkerWatch&) = delete;

  // How punts are counted, or why they are not.
  const std::string& punt_method() const { return punt_method_; }
  bool counts_punts() const { return perf_fd_ >= 0; }

  void begin();                  // submitting thread, before the timed span
  void tick();                   // any thread, any time
  WorkerUsage end();             // submitting thread, after the span

 private:
  struct ThreadTimes {
    uint64_t cpu_ns = 0, wait_ns = 0;
  };
  void scan_locked();
  uint64_t read_punts() const;

  int perf_fd_ = -1;
  std::string punt_method_;
  std::mutex mu_;
  std::map<int, ThreadTimes> last_, base_;
  uint64_t punts_base_ = 0;
  ThreadTimes self_base_{};
  uint64_t self_switches_base_ = 0;
};

// The id of a tracepoint ("io_uring/io_uring_queue_async_work"), from a
// mounted tracefs or, as root, one mounted for a moment; 0 + why on failure.
uint64_t tracepoint_id(const std::string& event, std::string& why);

}  // namespace rateline::blocktest
