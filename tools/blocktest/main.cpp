// blocktest: the seed's dd block-size sweep (bs = 8 B .. 1 MiB, write then
// read, per filesystem) through io_uring. main() does CLI, targets and
// output; sweep.cpp runs a target; the per-block loop is engine.cpp's
// run_blocks and nothing here runs per block.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "config.hpp"
#include "engine.hpp"
#include "fs_lab.hpp"
#include "report.hpp"
#include "report/json_lines.hpp"
#include "report/output_file.hpp"
#include "sweep.hpp"
#include "target.hpp"
#include "util/errors.hpp"
#include "util/stop_signal.hpp"
#include "worker_watch.hpp"

using namespace rateline;
using namespace rateline::blocktest;

namespace {

std::string totals_text(const Config& cfg) {
  if (cfg.total_bytes) return size_label(cfg.total_bytes) + " per size";
  return "64M per size, at most 512Ki blocks";
}

std::string placement_text(const Engine& e, Placement p) {
  if (p == Placement::none) return "not pinned; io-wq workers may run on any CPU";
  std::string s = "submitter pinned to cpu " + std::to_string(e.submitter_cpu());
  if (e.worker_cpus().empty()) return s + ", io-wq workers unbound";
  return s + ", io-wq workers bound to cpu " + std::to_string(e.worker_cpus().front()) +
         (p == Placement::same_cpu ? " (same CPU)" : " (another CPU: --placement split)") +
         (e.batch_policy() ? ", SCHED_BATCH (no wakeup preemption between them)" : "");
}

// The stop flag's handlers, first thing: from here on SIGINT/SIGTERM only
// set the flag, and every step below either checks it or finishes quickly,
// so what blocktest made is removed by its owner on the way out. A parent
// that started us with the two blocked (to hold them until the handlers
// exist) gets them delivered now.
void take_stop_signals() {
  install_stop_signals();
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  take_stop_signals();
  Config cfg;
  if (const int rc = parse_options(argc, argv, cfg); rc >= 0) return rc;
  try {
    if (!cfg.filesystems.empty()) {
      if (::geteuid() != 0) throw SetupError("--fs makes filesystems on loop devices and mounts them: it needs root (run with sudo)");
      enter_private_mount_namespace();  // before any thread exists
    }
    if (cfg.drop_cache == DropCache::global && ::geteuid() != 0)
      throw SetupError("--drop-cache global writes /proc/sys/vm/drop_caches: it needs root (or use --drop-cache file)");
    // Refuse a bad target before anything else happens.
    if (!cfg.dir.empty()) inspect_dir(cfg.dir);
    if (!cfg.device.empty()) TestFile::block_device(cfg.device, false);
    // Created now (an unwritable place fails before anything is measured),
    // whole under their names only at the end (report/output_file.hpp).
    report::JsonLines json(cfg.json_path);
    report::OutputFile csv_out(cfg.csv_path, "CSV file"), svg_out(cfg.svg_path, "SVG file");

    // The engine (ring, buffers, placement) lives for the whole run, in this thread.
    EngineOptions eo;
    eo.qd = cfg.qd;
    eo.max_slot_bytes = round_up(cfg.sizes.back(), kBufferAlign);
    eo.fixed_files = cfg.fixed_files;
    eo.fixed_buffers = cfg.fixed_buffers;
    eo.placement = cfg.placement;
    eo.cpu = cfg.cpu;
    eo.taskrun = cfg.taskrun == "coop" ? uring::Uring::TaskRun::coop : uring::Uring::TaskRun::defer;
    Engine engine(eo);
    WorkerWatch watch(cfg.punt_trace);  // after pinning: the counter follows this thread

    RunDescription run;
    run.mode = cfg.direct ? "direct (O_DIRECT)" : "buffered";
    run.qd = cfg.qd;
    run.wait_batch = wait_batch_for(cfg);
    run.totals = totals_text(cfg);
    run.fsync = cfg.fsync;
    run.prealloc = cfg.prealloc;
    run.verify = cfg.verify;
    run.cache_policy = cfg.direct ? "O_DIRECT, no page cache"
                       : cfg.drop_cache == DropCache::file ? "page cache of the file dropped before each read"
                       : cfg.drop_cache == DropCache::global ? "whole page cache dropped before each read"
                                                             : "page cache not dropped";
    run.placement = placement_text(engine, cfg.placement);
    run.ring = "io_uring " + engine.ring_mode() + ", " + (engine.fixed_files() ? "registered file" : "plain fd") + ", " +
               (engine.fixed_buffers() ? "registered buffers" : "plain buffers") + " (" + std::to_string(cfg.qd) + " x " +
               size_label(engine.buffers().slot_bytes()) + ", " + engine.buffers().describe() + ")";
    run.punt_method = watch.punt_method();
    run.notes = engine.notes();

    std::printf("blocktest: %s, qd %u (wait for %u per io_uring_enter), %zu sizes %s..%s, %s%s\n", run.mode.c_str(), cfg.qd,
                run.wait_batch, cfg.sizes.size(), size_label(cfg.sizes.front()).c_str(), size_label(cfg.sizes.back()).c_str(),
                run.totals.c_str(), cfg.verify ? ", verify on" : "");
    std::printf("blocktest: %s; %s\n", run.ring.c_str(), run.placement.c_str());
    std::printf("blocktest: writes: %s; %s\n",
                cfg.prealloc ? "file fallocate()d before the timed write (as fio lays out its file)"
                             : "blocks allocated inside the timed write (as dd does; --prealloc to fallocate first, as fio does)",
                cfg.fsync ? "fsync at the end counted in the time (dd conv=fsync)"
                          : "no fsync: a buffered write ends in the page cache (--fsync to count the flush)");
    std::printf("blocktest: reads: %s\n",
                cfg.direct ? "O_DIRECT, the page cache is not involved"
                : cfg.drop_cache == DropCache::file
                    ? "before each read the file is flushed and evicted (fdatasync + POSIX_FADV_DONTNEED), residency checked with cachestat"
                : cfg.drop_cache == DropCache::global ? "before each read: sync + echo 1 > /proc/sys/vm/drop_caches"
                                                      : "page cache NOT dropped: reads may be memory copies");
    std::printf("blocktest: io-wq punts: %s; worker CPU: iou-wrk threads in /proc/self/task (schedstat)\n", run.punt_method.c_str());
    for (const std::string& n : run.notes) std::printf("blocktest: note: %s\n", n.c_str());
    std::fflush(stdout);
    json.write(run_record(run));

    Progress progress(!cfg.quiet, watch);
    Sweeper sweeper(cfg, engine, watch, progress, json);
    std::vector<FsOutcome> results;

    if (!cfg.device.empty()) {
      Target t;
      t.name = cfg.device.substr(cfg.device.rfind('/') + 1);
      t.device = cfg.device;
      std::printf("blocktest: %s: raw block device, contents destroyed from offset 0\n", cfg.device.c_str());
      results.push_back(sweeper.run(t));
    } else if (cfg.filesystems.empty()) {
      const DirInfo d = inspect_dir(cfg.dir);
      Target t;
      t.name = d.fs_name;
      t.dir = cfg.dir;
      t.is_tmpfs = d.is_tmpfs;
      t.note = cfg.dir;
      std::printf("blocktest: %s: %s, %.1f MiB free\n", cfg.dir.c_str(), d.fs_name.c_str(),
                  static_cast<double>(d.free_bytes) / (1ull << 20));
      std::fflush(stdout);
      results.push_back(sweeper.run(t));
    } else {
      const DirInfo host = inspect_dir(cfg.dir);
      LabDir lab(cfg.dir);
      SweepInput in;
      in.sizes = cfg.sizes;
      in.total_bytes = cfg.total_bytes;
      const uint64_t image = cfg.image_bytes ? cfg.image_bytes : image_bytes_for(space_needed(plan_sweep(in)));
      std::printf("blocktest: lab directory %s (on %s), images of %.0f MiB, sparse; mounts in a private namespace\n",
                  lab.path().c_str(), host.fs_name.c_str(), static_cast<double>(image) / (1 << 20));
      std::fflush(stdout);
      for (const std::string& fs : cfg.filesystems) {
        FsOutcome out;
        out.name = fs;
        if (stop_flag().load()) {
          out.supported = true;
          out.note = "not run: interrupted";
          results.push_back(out);
          continue;
        }
        if (const std::string why = fs_unsupported_reason(fs); !why.empty()) {
          out.supported = false;
          out.reason = why;
          std::printf("blocktest: %s: unsupported here: %s\n", fs.c_str(), why.c_str());
          json.write({{"type", "fs"}, {"tool", "blocktest"}, {"fs", fs}, {"supported", false}, {"reason", why}});
          results.push_back(out);
          continue;
        }
        if (cfg.space_check && fs != "tmpfs" && inspect_dir(cfg.dir).free_bytes < image)
          throw SetupError("Not enough space in " + cfg.dir + " for a " + std::to_string(image >> 20) + " MiB image; use a smaller --total or --image-size");
        try {
          FsInstance inst(fs, lab.path(), image);
          Target t;
          t.name = fs;
          t.dir = inst.mountpoint();
          t.backing_fd = inst.backing_fd();
          t.is_tmpfs = fs == "tmpfs";
          t.note = inst.note();
          std::printf("blocktest: %s: %s\n", fs.c_str(), inst.note().c_str());
          std::fflush(stdout);
          json.write({{"type", "fs"}, {"tool", "blocktest"}, {"fs", fs}, {"supported", true}, {"setup", inst.note()}});
          results.push_back(sweeper.run(t));
        } catch (const SetupError& e) {
          if (stop_flag().load()) {  // e.g. mkfs killed by the stop signal
            out.supported = true;
            out.note = "not run: interrupted";
            results.push_back(out);
            continue;
          }
          out.supported = false;
          out.reason = e.what();
          std::printf("blocktest: %s: %s\n", fs.c_str(), e.what());
          json.write({{"type", "fs"}, {"tool", "blocktest"}, {"fs", fs}, {"supported", false}, {"reason", e.what()}});
          results.push_back(out);
        }
      }
    }

    // Reports.
    const bool interrupted = sweeper.interrupted() || stop_signal_number() != 0;
    std::printf("\n%s\n%s\n", result_table(results, true, run, cfg.compare_dd).c_str(),
                result_table(results, false, run, cfg.compare_dd).c_str());
    std::printf("%s\n%s\n", latency_table(results, true).c_str(), latency_table(results, false).c_str());
    std::printf("%s\n", worker_table(results, watch.counts_punts()).c_str());
    if (const std::string d = device_table(results); !d.empty()) std::printf("%s\n", d.c_str());
    const std::string problems = problem_lines(results);
    if (!problems.empty()) std::printf("%s", problems.c_str());
    if (interrupted) std::printf("interrupted by signal: the tables are partial\n");
    std::fflush(stdout);
    if (csv_out.is_open()) csv_out.write(csv(results, run), false);
    if (svg_out.is_open()) {
      const std::string title = std::string("blocktest: ") + run.mode + ", qd " + std::to_string(cfg.qd) + ", " + run.totals;
      svg_out.write(svg_plot(results, title), false);
    }
    json.write({{"type", "end"}, {"tool", "blocktest"}, {"interrupted", interrupted}, {"failures", sweeper.any_failure()}});
    // An output that could not be written is lost data: exit 1, also after an interruption.
    bool lost_output = false;
    for (const std::string& e : {csv_out.commit(), svg_out.commit(), json.finish()}) {
      if (e.empty()) continue;
      std::fprintf(stderr, "blocktest: %s\n", e.c_str());
      lost_output = true;
    }
    if (lost_output) return 1;
    if (interrupted) return 130;
    return sweeper.any_failure() ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "blocktest: %s\n", e.what());
    return 1;
  }
}
