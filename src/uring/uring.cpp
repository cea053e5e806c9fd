#include "uring/uring.hpp"

#include <sched.h>

#include <cerrno>
#include <cstring>

#include "util/errors.hpp"

namespace rateline::uring {

Uring::Uring(unsigned entries, TaskRun taskrun) {
  struct Attempt {
    unsigned flags;
    const char* name;
  };
  const Attempt defer_attempts[] = {
      {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "single-issuer+defer-taskrun"},
      {IORING_SETUP_COOP_TASKRUN, "coop-taskrun"},
      {0, "plain"},
  };
  const Attempt coop_attempts[] = {
      {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN, "single-issuer+coop-taskrun"},
      {IORING_SETUP_COOP_TASKRUN, "coop-taskrun"},
      {0, "plain"},
  };
  const Attempt* attempts = taskrun == TaskRun::defer ? defer_attempts : coop_attempts;
  int err = 0;
  for (int i = 0; i < 3; ++i) {
    const Attempt& a = attempts[i];
    io_uring_params p{};
    p.flags = a.flags;
    err = io_uring_queue_init_params(entries, &ring_, &p);
    if (err == 0) {
      mode_ = a.name;
      features_ = p.features;
      return;
    }
    if (err != -EINVAL) break;  // EINVAL: this kernel lacks the flag, try the next; anything else is final
  }
  if (err == -ENOSYS)
    throw BackendUnavailable("io_uring is not available (ENOSYS: kernel older than 5.1, or qemu-user)");
  if (err == -EPERM)
    throw BackendUnavailable("io_uring is disabled here (EPERM: kernel.io_uring_disabled sysctl or seccomp)");
  throw BackendUnavailable(std::string("Couldn't set up io_uring: ") + std::strerror(-err));
}

Uring::~Uring() { io_uring_queue_exit(&ring_); }

io_uring_sqe* Uring::sqe() {
  io_uring_sqe* s = io_uring_get_sqe(&ring_);
  if (!s) {
    io_uring_submit(&ring_);
    s = io_uring_get_sqe(&ring_);
  }
  return s;
}

namespace {
std::string result_text(const char* what, int rc) {
  if (rc >= 0) return {};
  return std::string("Couldn't ") + what + ": " + std::strerror(-rc);
}
}  // namespace

std::string Uring::register_files(std::span<const int> fds) {
  return result_text("register files", io_uring_register_files(&ring_, fds.data(), static_cast<unsigned>(fds.size())));
}

std::string Uring::register_buffers(std::span<const iovec> buffers) {
  const int rc = io_uring_register_buffers(&ring_, buffers.data(), static_cast<unsigned>(buffers.size()));
  if (rc == -ENOMEM) return "Couldn't register buffers: ENOMEM (RLIMIT_MEMLOCK too small: raise ulimit -l)";
  return result_text("register buffers", rc);
}

std::string Uring::register_ring_fd() {
  const int rc = io_uring_register_ring_fd(&ring_);
  return rc == 1 ? std::string() : result_text("register the ring fd", rc < 0 ? rc : -EINVAL);
}

std::string Uring::set_worker_cpus(std::span<const int> cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  return result_text("set io-wq worker affinity", io_uring_register_iowq_aff(&ring_, sizeof set, &set));
}

std::string Uring::set_max_workers(unsigned bounded, unsigned unbounded) {
  unsigned values[2] = {bounded, unbounded};
  return result_text("cap io-wq workers", io_uring_register_iowq_max_workers(&ring_, values));
}

std::string uring_unavailable_reason() {
  try {
    Uring probe(4);
    return {};
  } catch (const BackendUnavailable& e) {
    return e.what();
  }
}

}  // namespace rateline::uring
