// The one io_uring wrapper of rateline, shared by the network queues and the
// disk block test. RAII; setup picks the cheapest completion mode the kernel
// offers (SINGLE_ISSUER + DEFER_TASKRUN: completions run in our own thread
// when we wait, never as an interrupting task-work), falling back step by
// step on kernels that reject a flag.
#pragma once

#include <liburing.h>

#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <string>

namespace rateline::uring {

class Uring {
 public:
  // How completions reach the submitting thread.
  //  defer: SINGLE_ISSUER + DEFER_TASKRUN (then COOP_TASKRUN, then plain).
  //    Best when requests complete inline or from interrupts.
  //  coop: SINGLE_ISSUER + COOP_TASKRUN (then COOP_TASKRUN, then plain).
  //    For requests that io-wq workers run (buffered writes on ext4/tmpfs, fsync):
  //    on a DEFER_TASKRUN ring each worker completion is queued as task_work
  //    that wakes the waiting submitter at once (not lazily, whatever it waits
  //    for), so a batch of N costs up to N wakeups; on a COOP_TASKRUN ring the
  //    worker posts the CQE itself and the waiter wakes once the count it
  //    asked for is there.
  enum class TaskRun { defer, coop };

  // Throws BackendUnavailable when io_uring cannot be used at all (ENOSYS on
  // old kernels and qemu-user, EPERM when disabled by sysctl or seccomp).
  explicit Uring(unsigned entries, TaskRun taskrun = TaskRun::defer);
  ~Uring();
  Uring(const Uring&) = delete;
  Uring& operator=(const Uring&) = delete;

  io_uring* get() { return &ring_; }
  const std::string& mode() const { return mode_; }  // setup flags actually in use, for the report

  // Fetches one SQE, flushing the SQ first when it is full.
  io_uring_sqe* sqe();

  // Resources registered once at setup (the block test uses all of them).
  // Each returns "" on success, else why not (the caller may go on without
  // it and must say so).
  //
  // Fixed files: requests name the file by index with IOSQE_FIXED_FILE, so
  // the kernel skips an fget/fput pair (an atomic refcount round trip) per request.
  std::string register_files(std::span<const int> fds);
  // Fixed buffers: pinned once; *_FIXED requests skip pinning user pages per
  // O_DIRECT request and use a bvec iterator. ENOMEM = RLIMIT_MEMLOCK too small.
  std::string register_buffers(std::span<const iovec> buffers);
  // The ring fd itself: io_uring_enter skips fdget/fdput on every call.
  std::string register_ring_fd();
  // CPUs for this ring's io-wq workers (the iou-wrk-<pid> threads that run
  // requests which cannot complete without blocking, e.g. buffered writes on
  // filesystems without async buffered-write support). A worker on another
  // vCPU than the waiting submitter costs a cross-CPU wakeup (an IPI, on a
  // VM a vCPU kick) per handoff; on the submitter's own CPU it runs as soon
  // as the submitter sleeps.
  std::string set_worker_cpus(std::span<const int> cpus);
  // Caps io-wq workers: bounded (regular files, block devices) and unbounded (sockets, pipes).
  std::string set_max_workers(unsigned bounded, unsigned unbounded);
  unsigned features() const { return features_; }

 private:
  io_uring ring_{};
  std::string mode_;
  unsigned features_ = 0;
};

// Probes once whether io_uring works here; empty string = yes, else why not.
std::string uring_unavailable_reason();

}  // namespace rateline::uring
