#include "spawn.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>

#include "util/stop_signal.hpp"

namespace rateline::blocktest {

std::string find_program(const std::string& name) {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/sbin:/sbin:/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t colon = path.find(':', pos);
    if (colon == std::string::npos) colon = path.size();
    const std::string dir = path.substr(pos, colon - pos);
    if (!dir.empty()) {
      const std::string full = dir + "/" + name;
      if (::access(full.c_str(), X_OK) == 0) return full;
    }
    pos = colon + 1;
  }
  return {};
}

SpawnResult spawn_and_wait(const std::vector<std::string>& argv, int cpu) {
  SpawnResult r;
  const std::string exe = find_program(argv.at(0));
  if (exe.empty()) {
    r.output = argv[0] + ": not found";
    return r;
  }
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    r.output = "pipe failed";
    return r;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    if (cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      ::sched_setaffinity(0, sizeof set, &set);
    }
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(pipefd[1], 1);
    ::dup2(pipefd[1], 2);
    ::setenv("LC_ALL", "C", 1);
    ::execv(exe.c_str(), args.data());
    ::_exit(127);
  }
  ::close(pipefd[1]);
  if (pid < 0) {
    ::close(pipefd[0]);
    r.output = "fork failed";
    return r;
  }
  r.started = true;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(pipefd[0], buf, sizeof buf);
    if (n > 0) {
      if (r.output.size() < (1u << 20)) r.output.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) {
      // SIGTERM reached only us (Ctrl-C reaches the child too): stop it.
      if (stop_flag().load()) ::kill(pid, SIGKILL);
      continue;
    }
    break;
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

}  // namespace rateline::blocktest
