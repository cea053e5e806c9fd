#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "util/clock.hpp"
#include "util/errors.hpp"

namespace rateline::ceiling {

namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

int status_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

bool is_executable(const std::string& p) {
  struct stat st {};
  return !p.empty() && ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

Child spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) throw SetupError("Couldn't run a program: empty command");
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, f3[2] = {-1, -1}, ex[2] = {-1, -1};
  auto mk = [](int p[2]) {
    if (pipe2(p, O_CLOEXEC) != 0) throw SetupError(std::string("Couldn't create a pipe: ") + errno_text(errno));
  };
  if (spec.pipe_stdin) mk(in);
  if (spec.pipe_stdout) mk(out);
  if (spec.pipe_stderr) mk(err);
  if (spec.pipe_fd3) mk(f3);
  mk(ex);  // exec failure report: closed by a successful exec (O_CLOEXEC)
  std::vector<char*> args;
  for (const auto& a : spec.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw SetupError(std::string("Couldn't fork to run ") + spec.argv[0] + ": " + errno_text(errno));
  if (pid == 0) {
    // Child: only async-signal-safe calls from here to exec.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    if (spec.hold_stop_signals) {
      sigset_t held;
      sigemptyset(&held);
      sigaddset(&held, SIGINT);
      sigaddset(&held, SIGTERM);
      sigprocmask(SIG_BLOCK, &held, nullptr);
    }
    const int devnull = ::open("/dev/null", O_RDWR);
    dup2(spec.pipe_stdin ? in[0] : devnull, STDIN_FILENO);
    if (spec.pipe_stdout) dup2(out[1], STDOUT_FILENO);
    else if (!spec.inherit_stdout) dup2(devnull, STDOUT_FILENO);
    if (spec.pipe_stderr) dup2(err[1], STDERR_FILENO);
    if (spec.pipe_fd3) dup2(f3[1], 3);
    else if (devnull != 3) ::close(3);
    execvp(args[0], args.data());
    const int e = errno;
    (void)!::write(ex[1], &e, sizeof e);
    _exit(127);
  }
  Child c;
  c.pid = pid;
  if (spec.pipe_stdin) { ::close(in[0]); c.in = in[1]; }
  if (spec.pipe_stdout) { ::close(out[1]); c.out = out[0]; }
  if (spec.pipe_stderr) { ::close(err[1]); c.err = err[0]; }
  if (spec.pipe_fd3) { ::close(f3[1]); c.fd3 = f3[0]; }
  ::close(ex[1]);
  int e = 0;
  ssize_t n;
  while ((n = ::read(ex[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  ::close(ex[0]);
  if (n == sizeof e) {
    int status;
    waitpid(pid, &status, 0);
    close_fds(c);
    throw SetupError("Couldn't run " + spec.argv[0] + ": " + errno_text(e) +
                     (e == ENOENT ? " (not installed, or not on PATH)" : ""));
  }
  return c;
}

void close_fds(Child& c) {
  close_fd(c.in);
  close_fd(c.out);
  close_fd(c.err);
  close_fd(c.fd3);
}

int wait_child(Child& c, uint64_t timeout_ns) {
  if (c.pid <= 0) return -1;
  const uint64_t deadline = timeout_ns ? now_ns() + timeout_ns : 0;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(c.pid, &status, deadline ? WNOHANG : 0);
    if (r == c.pid) {
      c.pid = -1;
      close_fds(c);
      return status_code(status);
    }
    if (r < 0 && errno != EINTR) {
      c.pid = -1;
      close_fds(c);
      return -1;
    }
    if (deadline) {
      if (now_ns() >= deadline) return -1;
      timespec ts{0, 5'000'000};
      nanosleep(&ts, nullptr);
    }
  }
}

void signal_child(const Child& c, int sig) {
  if (c.pid > 0) ::kill(c.pid, sig);
}

int stop_child(Child& c, uint64_t grace_ns) {
  if (c.pid <= 0) return -1;
  signal_child(c, SIGINT);
  int rc = wait_child(c, grace_ns);
  if (rc == -1 && c.pid > 0) {
    signal_child(c, SIGKILL);
    rc = wait_child(c, 0);
  }
  return rc;
}

bool read_some(int fd, std::string& buf, size_t max_keep) {
  char tmp[8192];
  for (;;) {
    const ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n > 0) {
      buf.append(tmp, static_cast<size_t>(n));
      if (buf.size() > max_keep) buf.erase(0, buf.size() - max_keep);
      return true;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) {
      const ssize_t w = ::write(fd, data.data() + done, data.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      done += static_cast<size_t>(w);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

int run_command(const std::vector<std::string>& argv, std::string* out, std::string* err, uint64_t timeout_ns) {
  SpawnSpec s;
  s.argv = argv;
  s.pipe_stdout = out != nullptr;
  s.pipe_stderr = true;
  Child c = spawn(s);
  std::string o, e;
  const uint64_t deadline = now_ns() + timeout_ns;
  bool out_open = c.out >= 0, err_open = true;
  while (out_open || err_open) {
    pollfd p[2];
    int n = 0;
    if (out_open) p[n++] = {c.out, POLLIN, 0};
    if (err_open) p[n++] = {c.err, POLLIN, 0};
    const uint64_t now = now_ns();
    if (now >= deadline) break;
    const int r = poll(p, static_cast<nfds_t>(n), static_cast<int>((deadline - now) / 1'000'000 + 1));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    for (int i = 0; i < n; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const bool is_out = out_open && p[i].fd == c.out;
      if (!read_some(p[i].fd, is_out ? o : e, 1 << 20)) (is_out ? out_open : err_open) = false;
    }
  }
  int rc = wait_child(c, deadline > now_ns() ? deadline - now_ns() : 1);
  if (rc == -1) rc = stop_child(c, 1'000'000'000);
  if (out) *out = o;
  if (err) *err = e;
  return rc;
}

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "ceiling";
  return std::string(buf, static_cast<size_t>(n));
}

std::string find_program(const std::string& name, const char* env_var) {
  if (const char* e = std::getenv(env_var); e && *e) return e;
  const std::string self = self_exe();
  const std::string dir = self.substr(0, self.rfind('/'));
  for (const std::string& p : {dir + "/../../" + name + "/" + name, dir + "/" + name})
    if (is_executable(p)) return p;
  return name;  // PATH
}

bool runnable(const std::string& program) {
  if (program.find('/') != std::string::npos) return is_executable(program);
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  for (;;) {
    const size_t colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (is_executable((dir.empty() ? "." : dir) + "/" + program)) return true;
    if (colon == std::string::npos) return false;
    start = colon + 1;
  }
}

}  // namespace rateline::ceiling
