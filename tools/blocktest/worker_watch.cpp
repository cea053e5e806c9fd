#include "worker_watch.hpp"

#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/errors.hpp"

namespace rateline::blocktest {
namespace {

bool read_text(const std::string& path, std::string& out) {
  std::ifstream f(path);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

// schedstat: "<ns on cpu> <ns waiting on a runqueue> <timeslices>"
bool read_schedstat(const std::string& path, uint64_t& cpu, uint64_t& wait) {
  std::string s;
  if (!read_text(path, s)) return false;
  unsigned long long a = 0, b = 0;
  if (std::sscanf(s.c_str(), "%llu %llu", &a, &b) != 2) return false;
  cpu = a;
  wait = b;
  return true;
}

uint64_t voluntary_switches() {
  std::string s;
  if (!read_text("/proc/thread-self/status", s)) return 0;
  const auto p = s.find("voluntary_ctxt_switches:");
  if (p == std::string::npos) return 0;
  return std::strtoull(s.c_str() + p + 24, nullptr, 10);
}

}  // namespace

uint64_t tracepoint_id(const std::string& event, std::string& why) {
  std::string text;
  for (const char* root : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"})
    if (read_text(std::string(root) + "/events/" + event + "/id", text)) return std::strtoull(text.c_str(), nullptr, 10);
  if (geteuid() != 0) {
    why = "tracefs not mounted and not root";
    return 0;
  }
  // Mount tracefs privately for a moment to read the id, then take it away again.
  char dir[] = "/tmp/blocktest-tracefs-XXXXXX";
  if (!mkdtemp(dir)) {
    why = std::string("Couldn't make a tracefs mount point: ") + errno_text(errno);
    return 0;
  }
  uint64_t id = 0;
  if (::mount("nodev", dir, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0) {
    if (read_text(std::string(dir) + "/events/" + event + "/id", text))
      id = std::strtoull(text.c_str(), nullptr, 10);
    else
      why = "this kernel has no " + event + " tracepoint";
    ::umount2(dir, MNT_DETACH);
  } else {
    why = std::string("Couldn't mount tracefs: ") + errno_text(errno);
  }
  ::rmdir(dir);
  return id;
}

WorkerWatch::WorkerWatch(bool use_tracepoint) {
  if (!use_tracepoint) {
    punt_method_ = "off (--no-punt-trace)";
    return;
  }
  std::string why;
  const uint64_t id = tracepoint_id("io_uring/io_uring_queue_async_work", why);
  if (!id) {
    punt_method_ = "n/a (" + why + ")";
    return;
  }
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.config = id;
  // Counting mode (no samples): the kernel only increments a number.
  const long fd = ::syscall(SYS_perf_event_open, &attr, 0 /* this thread */, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    punt_method_ = std::string("n/a (perf_event_open: ") + errno_text(errno) + ")";
    return;
  }
  perf_fd_ = static_cast<int>(fd);
  punt_method_ = "tracepoint io_uring:io_uring_queue_async_work, exact count per phase";
}

WorkerWatch::~WorkerWatch() {
  if (perf_fd_ >= 0) ::close(perf_fd_);
}

uint64_t WorkerWatch::read_punts() const {
  uint64_t v = 0;
  if (perf_fd_ < 0 || ::read(perf_fd_, &v, sizeof v) != sizeof v) return 0;
  return v;
}

void WorkerWatch::scan_locked() {
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string base = std::string("/proc/self/task/") + e->d_name;
    std::string comm;
    if (!read_text(base + "/comm", comm) || comm.rfind("iou-wrk", 0) != 0) continue;
    ThreadTimes t;
    if (read_schedstat(base + "/schedstat", t.cpu_ns, t.wait_ns)) last_[std::atoi(e->d_name)] = t;
  }
  ::closedir(d);
}

void WorkerWatch::begin() {
  std::lock_guard lock(mu_);
  scan_locked();
  base_ = last_;
  punts_base_ = read_punts();
  read_schedstat("/proc/thread-self/schedstat", self_base_.cpu_ns, self_base_.wait_ns);
  self_switches_base_ = voluntary_switches();
}

void WorkerWatch::tick() {
  std::lock_guard lock(mu_);
  scan_locked();
}

WorkerUsage WorkerWatch::end() {
  WorkerUsage u;
  const uint64_t punts = read_punts();
  ThreadTimes self;
  read_schedstat("/proc/thread-self/schedstat", self.cpu_ns, self.wait_ns);
  const uint64_t sw = voluntary_switches();
  std::lock_guard lock(mu_);
  scan_locked();
  u.have_punts = perf_fd_ >= 0;
  u.punts = punts - punts_base_;
  for (const auto& [tid, t] : last_) {
    const auto b = base_.find(tid);
    const ThreadTimes from = b == base_.end() ? ThreadTimes{} : b->second;
    const uint64_t cpu = t.cpu_ns - from.cpu_ns;
    if (cpu == 0) continue;
    ++u.workers;
    u.worker_cpu_ns += cpu;
    u.worker_wait_ns += t.wait_ns - from.wait_ns;
  }
  u.self_cpu_ns = self.cpu_ns - self_base_.cpu_ns;
  u.self_wait_ns = self.wait_ns - self_base_.wait_ns;
  u.self_switches = sw - self_switches_base_;
  return u;
}

}  // namespace rateline::blocktest
