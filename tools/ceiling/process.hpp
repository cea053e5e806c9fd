// Child processes: pktgen, rx, `ip`, `tc`, and the receiver agent. No shell:
// argv goes to execvp as given. Each child gets PR_SET_PDEATHSIG so it does
// not outlive us, and is only ever signalled by its own pid.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rateline::ceiling {

struct SpawnSpec {
  std::vector<std::string> argv;
  bool pipe_stdin = false;   // child's stdin from Child::in (else /dev/null)
  bool pipe_stdout = false;  // child's stdout to Child::out (else /dev/null, or ours with inherit_stdout)
  bool pipe_stderr = false;  // child's stderr to Child::err (else ours)
  bool pipe_fd3 = false;     // child's fd 3 to Child::fd3 (for `--json /dev/fd/3`)
  bool inherit_stdout = false;
  // SIGINT/SIGTERM held pending in the child until it installs its handlers
  // (install_stop_signals() lets them in): a signal between fork and then is
  // not lost, nor does it kill the child before it can write its report.
  bool hold_stop_signals = false;
};

struct Child {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1, fd3 = -1;  // our ends; -1 when not piped
};

// Throws SetupError naming the program when it cannot be started.
Child spawn(const SpawnSpec& spec);

// Waits up to timeout_ns for the child (0 = forever). Returns the exit
// status as a shell would (128 + signal), or -1 on timeout. Closes our pipe ends on exit.
int wait_child(Child& c, uint64_t timeout_ns);

// Sends `sig` to the child by pid, if it still runs.
void signal_child(const Child& c, int sig);

// SIGINT, then SIGKILL after grace_ns; reaps it.
int stop_child(Child& c, uint64_t grace_ns);

void close_fds(Child& c);

// Runs argv to completion; returns its exit status, stdout in *out, stderr in *err (each bounded).
int run_command(const std::vector<std::string>& argv, std::string* out = nullptr, std::string* err = nullptr,
                uint64_t timeout_ns = 30'000'000'000ull);

// Reads what is available on fd (non-blocking) into buf; false at EOF or error.
bool read_some(int fd, std::string& buf, size_t max_keep);

// Writes all of `data` (retries EINTR / partial writes). False when the peer is gone.
bool write_all(int fd, const std::string& data);

// This program's own path (/proc/self/exe), for re-running itself in a namespace.
std::string self_exe();

// Finds a sibling program: $ENV, then next to us in the build tree
// (tools/ceiling/../../NAME/NAME) or the install dir, then PATH.
std::string find_program(const std::string& name, const char* env_var);

// Whether spawn() could run `program`: a path (with a '/') to an executable
// file, or a name found in PATH, as execvp looks it up.
bool runnable(const std::string& program);

}  // namespace rateline::ceiling
