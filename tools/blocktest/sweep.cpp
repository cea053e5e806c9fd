#include "sweep.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <random>

#include "dd_compare.hpp"
#include "report.hpp"
#include "target.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "util/stop_signal.hpp"

namespace rateline::blocktest {

// --------------------------------------------------------------------------
// Progress

Progress::Progress(bool enabled, WorkerWatch& watch)
    : watch_(watch), enabled_(enabled), tty_(::isatty(STDERR_FILENO) == 1) {
  thread_ = std::thread([this] { loop(); });
}

Progress::~Progress() {
  {
    std::lock_guard lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Progress::start_phase(const std::string& label, uint64_t blocks, uint64_t block_bytes) {
  std::lock_guard lock(mu_);
  label_ = label;
  blocks_ = blocks;
  block_bytes_ = block_bytes;
  start_ns_ = now_ns();
  active_ = true;
  printed_ = false;
}

void Progress::end_phase() {
  std::lock_guard lock(mu_);
  active_ = false;
  if (printed_ && tty_) std::fputs("\r\033[K", stderr);
  printed_ = false;
}

void Progress::loop() {
  std::unique_lock lock(mu_);
  uint64_t last_line_ns = 0;
  while (!quit_) {
    cv_.wait_for(lock, std::chrono::milliseconds(500));
    if (quit_) break;
    if (!active_) continue;
    lock.unlock();
    watch_.tick();  // a worker that exits mid-phase still gets counted
    lock.lock();
    if (!active_ || !enabled_) continue;
    const uint64_t now = now_ns();
    if (now - start_ns_ < kNsPerSec) continue;
    if (!tty_ && now - last_line_ns < 5 * kNsPerSec) continue;
    last_line_ns = now;
    const uint64_t done = done_.load(std::memory_order_relaxed);
    const double mib = static_cast<double>(done * block_bytes_) / (1024.0 * 1024.0);
    const double secs = static_cast<double>(now - start_ns_) / 1e9;
    std::fprintf(stderr, "%s  %s: %3.0f%% (%.1f of %.1f MiB) %.1f MiB/s%s", tty_ ? "\r\033[K" : "", label_.c_str(),
                 blocks_ ? 100.0 * static_cast<double>(done) / static_cast<double>(blocks_) : 0.0, mib,
                 static_cast<double>(blocks_ * block_bytes_) / (1024.0 * 1024.0), mib / secs, tty_ ? "" : "\n");
    std::fflush(stderr);
    printed_ = true;
  }
}

// --------------------------------------------------------------------------
// Sweeper

Sweeper::Sweeper(const Config& cfg, Engine& engine, WorkerWatch& watch, Progress& progress, report::JsonLines& json)
    : cfg_(cfg), engine_(engine), watch_(watch), progress_(progress), json_(json) {
  std::random_device rd;
  seed_ = (uint64_t{rd()} << 32 | rd()) | 1;
}

namespace {

std::string mib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return b;
}

std::string errno_name(int e) {
  switch (e) {
    case ENOSPC: return "ENOSPC";
    case EIO: return "EIO";
    case EDQUOT: return "EDQUOT";
    case EFBIG: return "EFBIG";
    case EROFS: return "EROFS";
    default: return "errno " + std::to_string(e);
  }
}

std::string failure_text(const PhaseResult& r, bool write, const SizePlan& sp) {
  const std::string done = " after " + mib(r.bytes_ok) + " of " + mib(sp.bytes);
  std::string s;
  if (r.error == ENOSPC || r.error == EDQUOT)
    s = std::string("no space left (") + errno_name(r.error) + ")" + done + ": the filesystem is full; the test file was removed. Free space or use a smaller --total";
  else if (r.error == EIO)
    s = "I/O error (EIO) at offset " + std::to_string(r.error_offset) + done + ": the device failed the request (see dmesg)";
  else
    s = errno_text(r.error) + " (" + errno_name(r.error) + ") at offset " + std::to_string(r.error_offset) + done;
  if (r.short_bytes >= 0)
    s += " [short " + std::string(write ? "write" : "read") + ": " + std::to_string(r.short_bytes) + " of " +
         std::to_string(sp.block_bytes) + " bytes]";
  return s;
}

}  // namespace

PhaseOutcome Sweeper::run_phase(const std::string& label, bool write, const SizePlan& sp, const std::string& device_stat) {
  PhasePlan pp;
  pp.write = write;
  pp.verify = cfg_.verify;
  pp.fsync = write && cfg_.fsync;
  pp.buffer_per_request = cfg_.direct;
  pp.block_bytes = sp.block_bytes;
  pp.blocks = sp.blocks;
  pp.seed = seed_;
  pp.qd = cfg_.qd;
  pp.wait_batch = wait_batch_for(cfg_);

  if (cfg_.warm) warm_page_allocator(sp.bytes + (16ull << 20));
  progress_.start_phase(label + (write ? " write" : " read"), sp.blocks, sp.block_bytes);
  watch_.begin();
  const DeviceCounts dev0 = read_device_counts(device_stat);
  const PhaseResult r = engine_.run(pp, progress_.counter(), stop_flag());
  const DeviceCounts dev1 = read_device_counts(device_stat);
  PhaseOutcome o;
  o.workers = watch_.end();
  if (dev0.known && dev1.known) {
    o.device_known = true;
    o.device_requests = write ? dev1.write_requests - dev0.write_requests : dev1.read_requests - dev0.read_requests;
    o.device_merges = write ? dev1.write_merges - dev0.write_merges : dev1.read_merges - dev0.read_merges;
    o.device_bytes = 512 * (write ? dev1.write_sectors - dev0.write_sectors : dev1.read_sectors - dev0.read_sectors);
    o.device_busy_ms = dev1.busy_ms - dev0.busy_ms;
  }
  progress_.end_phase();

  o.bytes = r.bytes_ok;
  o.blocks = r.blocks_ok;
  o.requests = r.submitted;
  o.seconds = r.seconds();
  o.fsync_seconds = static_cast<double>(r.fsync_ns) / 1e9;
  o.enters = r.enters;
  o.clat = summarize_latency(r.completion_ns);
  // A request the kernel cut short for the stop signal (-EINTR in its
  // completion) is the interruption, not a failure of the filesystem.
  const bool interrupted = r.stopped && r.error == EINTR;
  o.error = interrupted ? 0 : r.error;
  if (r.error && !interrupted) {
    o.status = r.blocks_ok ? Status::partial : Status::failed;
    o.note = failure_text(r, write, sp);
  } else if (r.stopped) {
    o.status = Status::partial;
    o.note = "interrupted by signal after " + mib(r.bytes_ok) + " of " + mib(sp.bytes);
  } else {
    o.status = Status::ok;
  }
  if (r.verify_failures) {
    o.verify_failures = r.verify_failures;
    o.verify_note = std::to_string(r.verify_failures) + " of " + std::to_string(r.blocks_ok) + " blocks wrong; first: block " +
                    std::to_string(r.first_bad_offset / sp.block_bytes) + " (offset " + std::to_string(r.first_bad_offset) +
                    "): " + fault_name(r.first_bad.fault) + " at byte " + std::to_string(r.first_bad.first_bad_byte) + " of the block";
  }
  return o;
}

std::string Sweeper::prepare_read(const Target& t, int fd, uint64_t bytes) {
  if (cfg_.direct) return "O_DIRECT: reads bypass the page cache, nothing to drop";
  if (t.is_tmpfs) return "tmpfs: the page cache is the storage, nothing to drop (reads are memory copies)";
  if (cfg_.drop_cache == DropCache::none) {
    const CacheState c = cache_state(fd, bytes);
    return "not dropped (--drop-cache none)" +
           (c.known ? ": " + std::to_string(c.cached_pages) + " of " + std::to_string(c.total_pages) + " pages cached" : std::string());
  }
  if (cfg_.drop_cache == DropCache::global) {
    const std::string g = drop_global_cache();
    const CacheState c = cache_state(fd, bytes);
    return g + (c.known ? ", " + std::to_string(c.cached_pages) + " of " + std::to_string(c.total_pages) + " pages still cached" : "");
  }
  return drop_file_cache(fd, bytes, t.backing_fd);
}

namespace {
// Test hook (--inject-flip): corrupt one byte on disk, through a second,
// buffered descriptor, between the write and the read.
std::string flip_byte(const std::string& path, uint64_t offset) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return "inject: open failed: " + errno_text(errno);
  unsigned char b = 0;
  std::string err;
  if (::pread(fd, &b, 1, static_cast<off_t>(offset)) != 1) err = "inject: pread failed";
  b ^= 0x10;
  if (err.empty() && ::pwrite(fd, &b, 1, static_cast<off_t>(offset)) != 1) err = "inject: pwrite failed";
  ::fdatasync(fd);
  ::close(fd);
  return err;
}
}  // namespace

void Sweeper::compare_dd(const Target& t, const SizePlan& sp, SizeOutcome& so) {
  TestFile f(t.dir, size_label(sp.block_bytes) + "-dd", false);
  if (cfg_.prealloc) preallocate(f.fd(), sp.bytes, f.path());
  const int cpu = engine_.submitter_cpu();
  // dd gets what blocktest got: the same CPU, the same warm memory before each phase.
  if (cfg_.warm) warm_page_allocator(sp.bytes + (16ull << 20));
  const DdRun w = dd_write(f.path(), sp.block_bytes, sp.blocks, cfg_.direct, cfg_.fsync, cpu);
  so.write.dd_ran = w.ok;
  so.write.dd_mib_s = w.mib_s();
  if (!w.ok) {
    so.write.dd_note = w.error;
    return;
  }
  prepare_read(t, f.fd(), sp.bytes);
  if (cfg_.warm) warm_page_allocator(sp.bytes + (16ull << 20));
  const DdRun r = dd_read(f.path(), sp.block_bytes, sp.blocks, cfg_.direct, cpu);
  so.read.dd_ran = r.ok;
  so.read.dd_mib_s = r.mib_s();
  if (!r.ok) so.read.dd_note = r.error;
}

namespace {
// The test file registered with the engine for as long as this lives: on
// every way out of run_size (an exception too) the ring lets go of the file
// before the file is removed, or an --fs teardown would find its filesystem
// busy.
class Attached {
 public:
  Attached(Engine& e, int fd) : e_(e) { e_.attach(fd); }
  ~Attached() { release(); }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;
  void release() const { e_.detach(); }

 private:
  Engine& e_;
};
}  // namespace

SizeOutcome Sweeper::run_size(const Target& t, const SizePlan& sp, bool& stop_target) {
  SizeOutcome so;
  so.plan = sp;
  if (!sp.applicable) {
    so.write.status = so.read.status = Status::not_applicable;
    so.write.note = so.read.note = sp.not_applicable;
    return so;
  }
  const std::string label = t.name + " " + size_label(sp.block_bytes);
  TestFile f = t.device.empty() ? TestFile(t.dir, size_label(sp.block_bytes), cfg_.direct) : TestFile::block_device(t.device, cfg_.direct);
  if (cfg_.prealloc) {
    try {
      preallocate(f.fd(), sp.bytes, f.path());
    } catch (const SetupError& e) {
      stop_target = true;
      // tmpfs's fallocate gives up with EINTR when a signal arrives.
      if (stop_flag().load()) {
        so.write.note = so.read.note = "not run: interrupted";
        return so;
      }
      so.write.status = Status::failed;
      so.write.error = ENOSPC;
      so.write.note = e.what();
      return so;
    }
  }
  const Attached attached(engine_, f.fd());
  const std::string device_stat = device_stat_path(f.fd());
  so.write = run_phase(label, true, sp, device_stat);
  if (so.write.status == Status::ok) {
    if (cfg_.inject_flip_block < sp.blocks && !f.is_device()) {
      const uint64_t off = cfg_.inject_flip_block * sp.block_bytes + sp.block_bytes / 2;
      if (const std::string e = flip_byte(f.path(), off); !e.empty()) so.read.note = e;
    }
    so.read.cache = prepare_read(t, f.fd(), sp.bytes);
    so.read = [&] {
      const std::string cache = so.read.cache;
      PhaseOutcome r = run_phase(label, false, sp, device_stat);
      r.cache = cache;
      return r;
    }();
  } else {
    so.read.note = "not run: the write did not complete";
  }
  attached.release();
  f.remove();
  if (so.write.status != Status::ok || so.read.status != Status::ok) stop_target = true;
  if (so.write.status == Status::partial || so.write.status == Status::failed || so.read.status == Status::partial ||
      so.read.status == Status::failed || so.read.verify_failures)
    if (!stop_flag().load()) ++failures_;
  if (cfg_.compare_dd && !stop_target && !stop_flag().load()) {
    try {
      compare_dd(t, sp, so);
    } catch (const SetupError& e) {
      so.write.dd_note = e.what();
    }
  }
  return so;
}

FsOutcome Sweeper::run(const Target& t) {
  FsOutcome out;
  out.name = t.name;
  out.note = t.note;

  // O_DIRECT alignment from a probe file (or the device itself).
  if (cfg_.direct) {
    try {
      if (!t.device.empty()) {
        TestFile d = TestFile::block_device(t.device, true);
        out.align = direct_align(d.fd());
      } else {
        TestFile probe(t.dir, "probe", true);
        out.align = direct_align(probe.fd());
      }
      std::printf("blocktest: %s: O_DIRECT alignment %u B (memory %u B), from %s%s\n", t.name.c_str(), out.align.offset_align,
                  out.align.memory_align, out.align.source,
                  t.is_tmpfs ? "; tmpfs has no device: its O_DIRECT I/O is a memory copy" : "");
    } catch (const SetupError& e) {
      out.align = {};
      out.note += (out.note.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  SweepInput in;
  in.sizes = cfg_.sizes;
  in.total_bytes = cfg_.total_bytes;
  in.direct = cfg_.direct;
  in.align = out.align;
  const std::vector<SizePlan> plan = plan_sweep(in);

  if (cfg_.space_check) {
    const uint64_t need = t.device.empty() ? space_needed(plan) : largest_file_bytes(plan);
    uint64_t have = 0;
    std::string where;
    if (!t.device.empty()) {
      TestFile d = TestFile::block_device(t.device, false);
      have = d.device_bytes();
      where = t.device + " holds";
    } else {
      have = inspect_dir(t.dir).free_bytes;
      where = t.dir + " has";
    }
    if (need > have)
      throw SetupError("Not enough space: the sweep needs " + mib(need) + " (largest file " + mib(largest_file_bytes(plan)) +
                       " plus margin), " + where + " " + mib(have) + ". Use a smaller --total or fewer --sizes");
  }

  bool stop_target = false;
  for (const SizePlan& sp : plan) {
    if (stop_flag().load()) interrupted_ = true;
    SizeOutcome so;
    so.plan = sp;
    if (stop_target || interrupted_) {
      so.write.note = so.read.note = interrupted_ ? "not run: interrupted" : "not run: the sweep stopped at an earlier size";
      out.sizes.push_back(so);
      json_.write(phase_record(t.name, so, true));
      json_.write(phase_record(t.name, so, false));
      continue;
    }
    so = run_size(t, sp, stop_target);
    if (stop_flag().load()) interrupted_ = true;
    out.sizes.push_back(so);
    json_.write(phase_record(t.name, so, true));
    json_.write(phase_record(t.name, so, false));
    if (cfg_.verbose && so.write.status != Status::not_applicable) {
      std::printf("%s\n", detail_line(t.name, so, true).c_str());
      if (so.read.status != Status::not_run) std::printf("%s\n", detail_line(t.name, so, false).c_str());
      std::fflush(stdout);
    }
  }
  return out;
}

}  // namespace rateline::blocktest
