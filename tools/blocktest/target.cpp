#include "target.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "util/clock.hpp"
#include "util/errors.hpp"

namespace rateline::blocktest {
namespace {

std::string mountinfo_fstype(dev_t dev) {
  std::ifstream f("/proc/self/mountinfo");
  std::string line;
  const std::string want = std::to_string(major(dev)) + ":" + std::to_string(minor(dev));
  std::string found;
  while (std::getline(f, line)) {
    std::istringstream ss(line);
    std::string id, parent, majmin;
    ss >> id >> parent >> majmin;
    if (majmin != want) continue;
    const auto sep = line.find(" - ");
    if (sep == std::string::npos) continue;
    std::istringstream rest(line.substr(sep + 3));
    rest >> found;  // the last matching mount is the one on top
  }
  return found;
}

std::string magic_name(long t) {
  switch (static_cast<unsigned long>(t)) {
    case EXT4_SUPER_MAGIC: return "ext2/3/4";
    case TMPFS_MAGIC: return "tmpfs";
    case XFS_SUPER_MAGIC: return "xfs";
    case BTRFS_SUPER_MAGIC: return "btrfs";
    case MSDOS_SUPER_MAGIC: return "vfat";
    case OVERLAYFS_SUPER_MAGIC: return "overlay";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(t));
      return buf;
    }
  }
}

uint32_t sysfs_logical_block(dev_t dev) {
  for (const char* rel : {"/queue/logical_block_size", "/../queue/logical_block_size"}) {
    std::ifstream f("/sys/dev/block/" + std::to_string(major(dev)) + ":" + std::to_string(minor(dev)) + rel);
    uint32_t v = 0;
    if (f >> v && v) return v;
  }
  return 0;
}

}  // namespace

DirInfo inspect_dir(const std::string& dir) {
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) throw SetupError("Couldn't use --dir " + dir + ": " + errno_text(errno));
  if (S_ISBLK(st.st_mode))
    throw SetupError("--dir " + dir + " is a block device: blocktest refuses to write to it. To test a whole device "
                     "(all its data is destroyed) give --device " + dir + " --destroy-data");
  if (!S_ISDIR(st.st_mode)) throw SetupError("--dir " + dir + " is not a directory");
  if (::access(dir.c_str(), W_OK) != 0) throw SetupError("Couldn't write into --dir " + dir + ": " + errno_text(errno));
  struct statfs sf{};
  struct statvfs sv{};
  if (::statfs(dir.c_str(), &sf) != 0 || ::statvfs(dir.c_str(), &sv) != 0)
    throw SetupError("Couldn't statfs " + dir + ": " + errno_text(errno));
  DirInfo d;
  d.fs_name = mountinfo_fstype(st.st_dev);
  if (d.fs_name.empty()) d.fs_name = magic_name(sf.f_type);
  d.is_tmpfs = static_cast<unsigned long>(sf.f_type) == TMPFS_MAGIC;
  d.free_bytes = static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize;
  return d;
}

DirectAlign direct_align(int fd) {
  DirectAlign a;
#ifdef STATX_DIOALIGN
  struct statx sx{};
  // A zero offset alignment with the mask set is what qemu-user's statx
  // translation returns (it drops the DIOALIGN fields), and what a kernel says
  // for a file without O_DIRECT support: either way, ask the fallbacks below.
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) &&
      sx.stx_dio_offset_align != 0) {
    a.offset_align = sx.stx_dio_offset_align;
    a.memory_align = sx.stx_dio_mem_align;
    a.source = "statx DIOALIGN";
    return a;
  }
#endif
  struct stat st{};
  if (::fstat(fd, &st) != 0) return a;
  if (S_ISBLK(st.st_mode)) {
    int lbs = 0;
    if (::ioctl(fd, BLKSSZGET, &lbs) == 0 && lbs > 0) a.offset_align = a.memory_align = static_cast<uint32_t>(lbs);
    a.source = "BLKSSZGET";
    return a;
  }
  if (!(::fcntl(fd, F_GETFL) & O_DIRECT)) return a;
  // No DIOALIGN: the device under the filesystem decides the alignment...
  a.offset_align = a.memory_align = sysfs_logical_block(st.st_dev);
  a.source = "logical block size of the device";
  if (a.offset_align) return a;
  // ...and without a device (btrfs, tmpfs: anonymous dev_t) its block size:
  // smaller O_DIRECT requests may be accepted but served buffered (btrfs
  // falls back to buffered I/O for unaligned direct I/O), which would be a fake.
  struct statfs sf{};
  if (::fstatfs(fd, &sf) == 0 && sf.f_bsize > 0) {
    a.offset_align = a.memory_align = static_cast<uint32_t>(sf.f_bsize);
    a.source = "filesystem block size (no DIOALIGN from statx, no block device)";
  }
  return a;
}

TestFile::TestFile(const std::string& dir, const std::string& label, bool direct) {
  std::random_device rd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    char name[96];
    std::snprintf(name, sizeof name, "/.blocktest-%d-%08x-%s", static_cast<int>(::getpid()), rd(), label.c_str());
    const std::string path = dir + name;
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 && errno == EEXIST) continue;  // never touch what exists: pick another name
    if (fd < 0) throw SetupError("Couldn't create a test file in " + dir + ": " + errno_text(errno));
    struct stat st{};
    ::fstat(fd, &st);
    fd_ = fd;
    path_ = path;
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    // O_DIRECT after the create, so a filesystem that refuses it leaves us
    // holding our own file, which remove() can delete with certainty.
    if (direct && ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_DIRECT) != 0) {
      const int err = errno;
      remove();
      throw SetupError("Couldn't use O_DIRECT in " + dir + ": " + errno_text(err) +
                       (err == EINVAL ? " (this filesystem does not support direct I/O)" : ""));
    }
    return;
  }
  throw SetupError("Couldn't find an unused test file name in " + dir);
}

TestFile TestFile::block_device(const std::string& path, bool direct) {
  TestFile t;
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw SetupError("Couldn't use --device " + path + ": " + errno_text(errno));
  if (!S_ISBLK(st.st_mode)) throw SetupError("--device " + path + " is not a block device");
  const int fd = ::open(path.c_str(), O_RDWR | O_EXCL | O_CLOEXEC | (direct ? O_DIRECT : 0));
  if (fd < 0)
    throw SetupError("Couldn't open " + path + " exclusively: " + errno_text(errno) +
                     (errno == EBUSY ? " (mounted, or in use by another program: unmount it first)" : ""));
  uint64_t bytes = 0;
  if (::ioctl(fd, BLKGETSIZE64, &bytes) != 0) {
    ::close(fd);
    throw SetupError("Couldn't read the size of " + path + ": " + errno_text(errno));
  }
  t.fd_ = fd;
  t.path_ = path;
  t.device_ = true;
  t.device_bytes_ = bytes;
  return t;
}

TestFile::TestFile(TestFile&& o) noexcept
    : fd_(o.fd_), path_(std::move(o.path_)), dev_(o.dev_), ino_(o.ino_), device_(o.device_), device_bytes_(o.device_bytes_) {
  o.fd_ = -1;
  o.path_.clear();
}

void TestFile::remove() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!device_ && !path_.empty()) {
    // Unlink only if the name still refers to the file we created.
    struct stat st{};
    if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) ::unlink(path_.c_str());
  }
  path_.clear();
}

TestFile::~TestFile() { remove(); }

void preallocate(int fd, uint64_t bytes, const std::string& path) {
  if (::fallocate(fd, 0, 0, static_cast<off_t>(bytes)) == 0) return;
  const int err = errno;
  if (err == ENOSPC) throw SetupError("Couldn't preallocate " + std::to_string(bytes) + " bytes for " + path + ": no space left (ENOSPC)");
  throw SetupError("Couldn't preallocate " + path + " (fallocate): " + errno_text(err) +
                   (err == EOPNOTSUPP ? "; this filesystem cannot preallocate, run without --prealloc" : ""));
}

double warm_page_allocator(uint64_t bytes) {
  const uint64_t t0 = now_ns();
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  bytes = (bytes + page - 1) / page * page;
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return 0;
  // Huge pages: freed, they leave whole 2 MiB blocks, which the large folios
  // of the page cache (ext4, xfs, btrfs, tmpfs) are allocated from; 4 KiB
  // pages freed here did not make later page-cache writes any faster.
  ::madvise(m, bytes, MADV_HUGEPAGE);
  volatile uint8_t* p = static_cast<uint8_t*>(m);
  for (uint64_t off = 0; off < bytes; off += page) p[off] = 1;
  ::munmap(m, bytes);
  return static_cast<double>(now_ns() - t0) / 1e9;
}

std::string device_stat_path(int fd) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) return "";
  const dev_t dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
  const std::string p = "/sys/dev/block/" + std::to_string(major(dev)) + ":" + std::to_string(minor(dev)) + "/stat";
  return ::access(p.c_str(), R_OK) == 0 ? p : "";
}

DeviceCounts read_device_counts(const std::string& stat_path) {
  DeviceCounts c;
  if (stat_path.empty()) return c;
  std::ifstream f(stat_path);
  uint64_t read_ticks = 0, write_ticks = 0, in_flight = 0;
  f >> c.read_requests >> c.read_merges >> c.read_sectors >> read_ticks >> c.write_requests >> c.write_merges >> c.write_sectors >>
      write_ticks >> in_flight >> c.busy_ms;
  c.known = static_cast<bool>(f);
  return c;
}

CacheState cache_state(int fd, uint64_t bytes) {
  CacheState c;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  c.total_pages = (bytes + page - 1) / page;
#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif
  struct {
    uint64_t off, len;
  } range{0, bytes};
  struct {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
  } cs{};
  if (::syscall(SYS_cachestat, fd, &range, &cs, 0) == 0) {
    c.known = true;
    c.cached_pages = cs.nr_cache;
    return c;
  }
  if (bytes == 0) return c;
  void* m = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return c;
  std::string vec(c.total_pages, '\0');
  if (::mincore(m, bytes, reinterpret_cast<unsigned char*>(vec.data())) == 0) {
    c.known = true;
    for (char v : vec) c.cached_pages += v & 1;
  }
  ::munmap(m, bytes);
  return c;
}

std::string drop_file_cache(int fd, uint64_t bytes, int backing_fd) {
  // Dirty pages cannot be evicted: write them back first (not timed).
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  if (backing_fd >= 0) {
    ::fdatasync(backing_fd);
    ::posix_fadvise(backing_fd, 0, 0, POSIX_FADV_DONTNEED);
  }
  const CacheState c = cache_state(fd, bytes);
  std::string s = "fdatasync + POSIX_FADV_DONTNEED";
  if (c.known) s += ", " + std::to_string(c.cached_pages) + " of " + std::to_string(c.total_pages) + " pages still cached";
  return s;
}

std::string drop_global_cache() {
  ::sync();
  const int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return std::string("Couldn't open /proc/sys/vm/drop_caches: ") + errno_text(errno);
  const bool ok = ::write(fd, "1", 1) == 1;
  const int err = errno;
  ::close(fd);
  return ok ? "sync + drop_caches=1 (whole page cache)" : std::string("Couldn't drop caches: ") + errno_text(err);
}

}  // namespace rateline::blocktest
