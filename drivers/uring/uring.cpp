#include "uring/uring.hpp"

#include <cerrno>
#include <cstring>

#include "util/errors.hpp"

namespace rateline::drivers {

Uring::Uring(unsigned entries) {
  struct Attempt {
    unsigned flags;
    const char* name;
  };
  const Attempt attempts[] = {
      {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "single-issuer+defer-taskrun"},
      {IORING_SETUP_COOP_TASKRUN, "coop-taskrun"},
      {0, "plain"},
  };
  int err = 0;
  for (const Attempt& a : attempts) {
    io_uring_params p{};
    p.flags = a.flags;
    err = io_uring_queue_init_params(entries, &ring_, &p);
    if (err == 0) {
      mode_ = a.name;
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

std::string uring_unavailable_reason() {
  try {
    Uring probe(4);
    return {};
  } catch (const BackendUnavailable& e) {
    return e.what();
  }
}

}  // namespace rateline::drivers
