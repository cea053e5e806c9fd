// Where the blocks go: files blocktest creates itself (and removes), or a
// whole block device the user named twice (--device X --destroy-data).
//
// Safety rules, all enforced here:
// - a test file is created with O_CREAT | O_EXCL under a unique name, so
//   nothing that exists is ever opened for writing, let alone overwritten;
// - it is removed by its destructor (normal end, error, Ctrl-C), and only if
//   the name still refers to the inode we created;
// - a block device is opened O_EXCL (the kernel refuses it while mounted or
//   held by anyone else) and only with --destroy-data.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "planner.hpp"

namespace rateline::blocktest {

// What a directory is: filesystem name and free space (statfs).
struct DirInfo {
  std::string fs_name;       // "ext4", "tmpfs", ... from statfs f_type
  uint64_t free_bytes = 0;   // f_bavail * f_frsize (what an unprivileged writer may use)
  bool is_tmpfs = false;
};
DirInfo inspect_dir(const std::string& dir);  // throws SetupError (missing, not a directory, a block device...)

// O_DIRECT alignment of an open file or block device: statx STATX_DIOALIGN,
// else the logical block size of the device under it, else (btrfs, tmpfs:
// no DIOALIGN, anonymous device) the filesystem block size. 0 = not supported.
DirectAlign direct_align(int fd);

class TestFile {
 public:
  // Creates <dir>/.blocktest-<pid>-<random>-<label> exclusively. Throws SetupError.
  TestFile(const std::string& dir, const std::string& label, bool direct);
  // Opens the block device exclusively (O_EXCL); never unlinks it.
  static TestFile block_device(const std::string& path, bool direct);
  ~TestFile();
  TestFile(TestFile&& o) noexcept;
  TestFile& operator=(TestFile&&) = delete;
  TestFile(const TestFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  bool is_device() const { return device_; }
  uint64_t device_bytes() const { return device_bytes_; }

  void remove();  // close + unlink now (idempotent)

 private:
  TestFile() = default;
  int fd_ = -1;
  std::string path_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  bool device_ = false;
  uint64_t device_bytes_ = 0;
};

// fallocate(mode 0) the first `bytes`: blocks allocated (unwritten) and the
// file size set before anything is timed, as fio lays out its files.
void preallocate(int fd, uint64_t bytes, const std::string& path);

// --warm: this VM hands freed guest memory back to the host within seconds
// (free page reporting); the first touch of such a page afterwards is a host
// fault, and a cold buffered write of 1 GiB runs 3-6x slower than a warm
// one. Touching `bytes` of anonymous memory and freeing it right before a
// timed phase leaves that many resident pages on the free lists, where the
// page cache allocations of the phase find them. Returns the seconds it took.
double warm_page_allocator(uint64_t bytes);

// Residency of a file's pages in the page cache (cachestat(2), else mincore).
struct CacheState {
  bool known = false;
  uint64_t cached_pages = 0, total_pages = 0;
};
CacheState cache_state(int fd, uint64_t bytes);

// What the block device under a file completed, from its own counters
// (/sys/dev/block/M:m/stat): an observer independent of blocktest's counts.
// It shows whether a block reached the device as one request, was split
// (more requests than blocks) or merged with its neighbours (fewer), and it
// also counts anything else on that device meanwhile (the journal, other
// programs). None under tmpfs or btrfs (an anonymous device number).
struct DeviceCounts {
  bool known = false;
  uint64_t read_requests = 0, read_merges = 0, read_sectors = 0;
  uint64_t write_requests = 0, write_merges = 0, write_sectors = 0;
  uint64_t busy_ms = 0;  // io_ticks: milliseconds with at least one request in flight
};
std::string device_stat_path(int fd);  // "" when the file has no block device under it
DeviceCounts read_device_counts(const std::string& stat_path);

// Flushes the file (fdatasync) and evicts it from the page cache before a
// read. Returns what was done, for the report.
std::string drop_file_cache(int fd, uint64_t bytes, int backing_fd);
std::string drop_global_cache();

}  // namespace rateline::blocktest
