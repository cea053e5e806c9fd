#include "util/stop_signal.hpp"

#include <signal.h>

#include <csignal>

namespace rateline {
namespace {
std::atomic<bool> g_stop{false};
volatile std::sig_atomic_t g_signal = 0;
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");

extern "C" void on_stop_signal(int sig) {
  g_signal = sig;
  g_stop.store(true, std::memory_order_relaxed);
}
}  // namespace

std::atomic<bool>& stop_flag() { return g_stop; }
int stop_signal_number() { return g_signal; }

void install_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking call returns EINTR and the loop sees the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a closed stdout pipe must not kill the final JSON write
  // A parent may have started us with these held (ceiling's lab does): one that came before the handlers
  // were in is delivered now, to them.
  sigset_t held;
  sigemptyset(&held);
  sigaddset(&held, SIGINT);
  sigaddset(&held, SIGTERM);
  pthread_sigmask(SIG_UNBLOCK, &held, nullptr);
}

}  // namespace rateline
