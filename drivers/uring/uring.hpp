// The one io_uring wrapper of rateline, shared by the network queues and the
// disk block test. RAII; setup picks the cheapest completion mode the kernel
// offers (SINGLE_ISSUER + DEFER_TASKRUN: completions run in our own thread
// when we wait, never as an interrupting task-work), falling back step by
// step on kernels that reject a flag.
#pragma once

#include <liburing.h>

#include <cstdint>
#include <string>

namespace rateline::drivers {

class Uring {
 public:
  // Throws BackendUnavailable when io_uring cannot be used at all (ENOSYS on
  // old kernels and qemu-user, EPERM when disabled by sysctl or seccomp).
  explicit Uring(unsigned entries);
  ~Uring();
  Uring(const Uring&) = delete;
  Uring& operator=(const Uring&) = delete;

  io_uring* get() { return &ring_; }
  const std::string& mode() const { return mode_; }  // setup flags actually in use, for the report

  // Fetches one SQE, flushing the SQ first when it is full.
  io_uring_sqe* sqe();

 private:
  io_uring ring_{};
  std::string mode_;
};

// Probes once whether io_uring works here; empty string = yes, else why not.
std::string uring_unavailable_reason();

}  // namespace rateline::drivers
