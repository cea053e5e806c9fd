#include <CLI/CLI.hpp>

#include <algorithm>

#include "config.hpp"
#include "fs_lab.hpp"
#include "planner.hpp"
#include "topo/topology.hpp"
#include "util/cli.hpp"
#include "util/units.hpp"

namespace rateline::blocktest {

int parse_options(int argc, char** argv, Config& cfg) {
  CLI::App app{
      "blocktest: write then read a file per block size (dd bs=8..1M, one I/O per block) through io_uring, "
      "buffered or O_DIRECT, on a directory, on filesystems it makes itself (--fs), or on a device",
      "blocktest"};
  std::string sizes = "8..1M", total, qd = "32", batch, drop = "file", placement = "same-cpu", cpu, fs, image_size;
  std::string inject;
  app.add_option("--dir", cfg.dir, "run in this directory: one new file per size, removed afterwards (with --fs: where the lab directory goes)");
  app.add_option("--sizes", sizes, "block sizes: 8..1M (powers of two), a list 512,4k,1M, or both")->capture_default_str();
  app.add_option("--total", total,
                 "bytes per size (e.g. 1G as in the seed). Default: 64M, at most 512Ki blocks "
                 "(8 B: 4M, 16 B: 8M, 32 B: 16M, 64 B: 32M)");
  app.add_flag("--direct", cfg.direct, "O_DIRECT (page-aligned buffers; sizes below the O_DIRECT alignment are n/a)");
  app.add_flag("--fsync", cfg.fsync, "fsync after the last block of each write, inside the timed span (dd conv=fsync)");
  app.add_flag("--prealloc", cfg.prealloc,
               "fallocate each file before its timed write, as fio does (default: allocate while timed, as dd does)");
  app.add_flag("!--no-warm", cfg.warm,
               "do not touch and free the phase's size of memory before each timed phase (this VM returns freed "
               "memory to the host within seconds; a cold write then pays a host page fault per page)");
  app.add_option("--qd", qd, "I/Os in flight (queue depth)")->capture_default_str();
  app.add_option("--batch", batch, "completions to wait for per io_uring_enter (default: the queue depth; with --direct a quarter of it)");
  app.add_flag("--verify", cfg.verify, "pattern + CRC-32C per block, checked on read");
  app.add_flag("!--no-fixed-buffers", cfg.fixed_buffers, "do not register the I/O buffers with io_uring");
  app.add_flag("!--no-fixed-files", cfg.fixed_files, "do not register the file with io_uring");
  app.add_option("--drop-cache", drop,
                 "before each read: file (fdatasync + POSIX_FADV_DONTNEED on the test file), global (sync + "
                 "drop_caches, root), none (reads may come from memory)")
      ->check(CLI::IsMember({"file", "global", "none"}))
      ->capture_default_str();
  app.add_option("--placement", placement,
                 "same-cpu: submitter pinned, io-wq workers bound to that CPU; split: workers on another CPU; none: "
                 "nothing pinned")
      ->check(CLI::IsMember({"same-cpu", "split", "none"}))
      ->capture_default_str();
  app.add_option("--taskrun", cfg.taskrun, "ring completion mode: defer (DEFER_TASKRUN) or coop (COOP_TASKRUN)")
      ->check(CLI::IsMember({"defer", "coop"}))
      ->capture_default_str();
  app.add_option("--cpu", cpu, "the submitter's CPU (default: the one blocktest starts on)");
  app.add_option("--fs", fs, "make each filesystem in an image on a loop device and sweep it: ext2,ext3,ext4,xfs,btrfs,tmpfs,vfat (root)");
  app.add_option("--image-size", image_size, "--fs image size (default: from the sweep, at least 512M)");
  app.add_option("--device", cfg.device, "sweep a whole block device from offset 0 (needs --destroy-data)");
  app.add_flag("--destroy-data", cfg.destroy_data, "confirms that --device's contents may be overwritten");
  app.add_flag("--compare-dd", cfg.compare_dd, "run dd at the same sizes and totals in the same run; adds dd and ratio columns");
  app.add_option("--json", cfg.json_path, "write JSON lines to this file (- for stdout)");
  app.add_option("--csv", cfg.csv_path, "write a CSV (one row per filesystem, size and phase)");
  app.add_option("--svg", cfg.svg_path, "write an SVG plot of MiB/s against block size");
  app.add_flag("-q,--quiet", cfg.quiet, "no live progress");
  app.add_flag("-v,--verbose", cfg.verbose, "one line per phase: I/Os, io_uring_enter calls, punts, worker and submitter CPU time");
  app.add_flag("!--no-punt-trace", cfg.punt_trace, "do not count io-wq punts with the io_uring tracepoint");
  app.add_flag("!--no-space-check", cfg.space_check, "skip the free-space check (lets ENOSPC happen: for tests)");
  app.add_option("--inject-flip", inject, "test hook: flip one byte of this block on disk between write and read (needs --verify)")
      ->group("");
  app.set_version_flag("--version", "blocktest (rateline) 0.1.0");

  if (const int rc = cli::parse(app, argc, argv); rc >= 0) return rc;
  try {
    using cli::convert;
    using cli::in_range;
    cfg.sizes = convert("--sizes", [&] { return parse_size_list(sizes); });
    if (!total.empty())
      cfg.total_bytes = in_range<uint64_t>("--total", convert("--total", [&] { return units::parse_bytes(total); }), 1, 1ull << 50);
    cfg.qd = static_cast<uint32_t>(in_range<uint64_t>("--qd", convert("--qd", [&] { return units::parse_count(qd); }), 1, 4096));
    if (!batch.empty())
      cfg.wait_batch = static_cast<uint32_t>(in_range<uint64_t>("--batch", convert("--batch", [&] { return units::parse_count(batch); }), 1, cfg.qd));
    cfg.drop_cache = drop == "global" ? DropCache::global : drop == "none" ? DropCache::none : DropCache::file;
    cfg.placement = placement == "split" ? Placement::split : placement == "none" ? Placement::none : Placement::same_cpu;
    if (!cpu.empty()) {
      const auto c = static_cast<int>(in_range<uint64_t>("--cpu", convert("--cpu", [&] { return units::parse_count(cpu); }), 0, 4095));
      const std::vector<int> allowed = topo::allowed_cpus();
      if (std::find(allowed.begin(), allowed.end(), c) == allowed.end())
        throw cli::UsageError("--cpu " + cpu + ": not a CPU this process may run on");
      if (cfg.placement == Placement::none) throw cli::UsageError("--cpu pins the submitter: it contradicts --placement none");
      cfg.cpu = c;
    }
    if (!fs.empty()) {
      size_t pos = 0;
      while (pos <= fs.size()) {
        size_t comma = fs.find(',', pos);
        if (comma == std::string::npos) comma = fs.size();
        const std::string name = fs.substr(pos, comma - pos);
        const auto& known = known_filesystems();
        if (std::find(known.begin(), known.end(), name) == known.end())
          throw cli::UsageError("--fs: unknown filesystem '" + name + "' (known: ext2, ext3, ext4, xfs, btrfs, tmpfs, vfat)");
        if (std::find(cfg.filesystems.begin(), cfg.filesystems.end(), name) == cfg.filesystems.end()) cfg.filesystems.push_back(name);
        pos = comma + 1;
      }
    }
    if (!image_size.empty()) {
      if (cfg.filesystems.empty()) throw cli::UsageError("--image-size sizes the --fs images: give --fs too");
      cfg.image_bytes = in_range<uint64_t>("--image-size", convert("--image-size", [&] { return units::parse_bytes(image_size); }), 1ull << 20, 1ull << 44);
    }
    if (!cfg.device.empty() && !cfg.destroy_data)
      throw cli::UsageError("--device " + cfg.device + " overwrites the device from offset 0: add --destroy-data to confirm");
    if (cfg.destroy_data && cfg.device.empty()) throw cli::UsageError("--destroy-data only goes with --device");
    if (!cfg.device.empty() && (!cfg.dir.empty() || !cfg.filesystems.empty()))
      throw cli::UsageError("--device runs on the raw device: it excludes --dir and --fs");
    if (cfg.device.empty() && cfg.dir.empty()) throw cli::UsageError("give --dir PATH (or --device /dev/X --destroy-data)");
    if (!cfg.device.empty() && cfg.compare_dd)
      throw cli::UsageError("--compare-dd writes files: it does not run on --device");
    if (!cfg.device.empty() && cfg.prealloc) throw cli::UsageError("--prealloc is for files, not --device");
    if (!inject.empty()) {
      if (!cfg.verify) throw cli::UsageError("--inject-flip needs --verify");
      cfg.inject_flip_block = convert("--inject-flip", [&] { return units::parse_count(inject); });
    }
  } catch (const cli::UsageError& e) {
    std::fprintf(stderr, "blocktest: %s\n", e.what());
    return cli::kUsageExit;
  }
  return -1;
}

}  // namespace rateline::blocktest
