#include "fs_lab.hpp"

#include <fcntl.h>
#include <linux/loop.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "planner.hpp"
#include "spawn.hpp"
#include "util/errors.hpp"

namespace rateline::blocktest {
namespace {

struct FsRecipe {
  const char* mkfs;
  std::vector<std::string> args;  // before the device
  const char* package;
};

const std::map<std::string, FsRecipe>& recipes() {
  // ext*: inode tables and journal initialised by mkfs, not lazily by the
  // ext4lazyinit kernel thread in the background of our measurements.
  static const std::map<std::string, FsRecipe> r = {
      {"ext2", {"mkfs.ext2", {"-q", "-F", "-E", "lazy_itable_init=0"}, "e2fsprogs"}},
      {"ext3", {"mkfs.ext3", {"-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"}, "e2fsprogs"}},
      {"ext4", {"mkfs.ext4", {"-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"}, "e2fsprogs"}},
      {"xfs", {"mkfs.xfs", {"-q", "-f"}, "xfsprogs"}},
      {"btrfs", {"mkfs.btrfs", {"-q", "-f"}, "btrfs-progs"}},
      {"vfat", {"mkfs.vfat", {"-F", "32"}, "dosfstools"}},
      {"tmpfs", {nullptr, {}, nullptr}},
  };
  return r;
}

bool kernel_has(const std::string& fs) {
  std::ifstream f("/proc/filesystems");
  std::string line;
  while (std::getline(f, line)) {
    const auto tab = line.rfind('\t');
    if ((tab == std::string::npos ? line : line.substr(tab + 1)) == fs) return true;
  }
  return false;
}

// The last n non-empty lines of a program's output, on one line. mkfs killed
// by our stop signal printed nothing: that must still make a message.
std::string last_lines(const std::string& s, size_t n = 3) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) lines.push_back(l);
  std::string t;
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) t += (t.empty() ? "" : " ") + lines[i];
  return t.empty() ? "no output" : t;
}

}  // namespace

const std::vector<std::string>& known_filesystems() {
  static const std::vector<std::string> v = {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "vfat"};
  return v;
}

void enter_private_mount_namespace() {
  if (::unshare(CLONE_NEWNS) != 0) throw SetupError(std::string("Couldn't make a private mount namespace: ") + errno_text(errno));
  // Slave: the host's mounts still reach us, ours never reach the host.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0)
    throw SetupError(std::string("Couldn't make mounts private: ") + errno_text(errno));
}

std::string fs_unsupported_reason(const std::string& fs) {
  const auto it = recipes().find(fs);
  if (it == recipes().end()) return "unknown filesystem";
  if (!kernel_has(fs)) {
    // A module may exist: one modprobe, then look again.
    if (!find_program("modprobe").empty()) spawn_and_wait({"modprobe", "-q", fs});
    if (!kernel_has(fs)) return "the kernel has no " + fs + " driver (not in /proc/filesystems, no module loaded)";
  }
  if (it->second.mkfs && find_program(it->second.mkfs).empty())
    return std::string(it->second.mkfs) + " not found (install " + it->second.package + ")";
  return {};
}

LabDir::LabDir(const std::string& parent) {
  std::string t = parent + "/blocktest-fs-XXXXXX";
  if (!::mkdtemp(t.data())) throw SetupError("Couldn't create a lab directory in " + parent + ": " + errno_text(errno));
  path_ = t;
}

LabDir::~LabDir() {
  if (::rmdir(path_.c_str()) != 0)
    std::fprintf(stderr, "blocktest: Couldn't remove %s: %s\n", path_.c_str(), errno_text(errno).c_str());
}

uint64_t image_bytes_for(uint64_t needed) {
  const uint64_t want = needed + needed / 4 + (64ull << 20);
  return round_up(std::max<uint64_t>(want, 512ull << 20), 1ull << 20);
}

FsInstance::FsInstance(const std::string& fs, const std::string& lab, uint64_t image_bytes) : fs_(fs) {
  const FsRecipe& rec = recipes().at(fs);
  mountpoint_ = lab + "/mnt-" + fs;
  if (::mkdir(mountpoint_.c_str(), 0700) != 0) throw SetupError("Couldn't create " + mountpoint_ + ": " + errno_text(errno));
  try {
    if (!rec.mkfs) {  // tmpfs: memory, no device
      const std::string opts = "size=" + std::to_string(image_bytes) + ",mode=0700";
      if (::mount("tmpfs", mountpoint_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0)
        throw SetupError("Couldn't mount tmpfs on " + mountpoint_ + ": " + errno_text(errno));
      mounted_ = true;
      note_ = "tmpfs " + opts;
      return;
    }
    const std::string image = lab + "/" + fs + ".img";
    image_fd_ = ::open(image.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (image_fd_ < 0) throw SetupError("Couldn't create image " + image + ": " + errno_text(errno));
    image_path_ = image;
    const bool sized = ::ftruncate(image_fd_, static_cast<off_t>(image_bytes)) == 0;
    const int size_err = errno;
    if (!sized) throw SetupError("Couldn't size image " + image + ": " + errno_text(size_err));

    const int ctl = ::open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (ctl < 0)
      throw SetupError(std::string("Couldn't open /dev/loop-control: ") + errno_text(errno) + " (loop devices need root and the loop driver)");
    int err = 0;
    for (int attempt = 0; attempt < 20 && loop_fd_ < 0; ++attempt) {
      const int n = ::ioctl(ctl, LOOP_CTL_GET_FREE);
      if (n < 0) {
        err = errno;
        break;
      }
      loop_path_ = "/dev/loop" + std::to_string(n);
      const int lfd = ::open(loop_path_.c_str(), O_RDWR | O_CLOEXEC);
      if (lfd < 0) {
        err = errno;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // udev may still be making the node
        continue;
      }
      loop_config cfg{};
      cfg.fd = static_cast<uint32_t>(image_fd_);
      cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
      std::strncpy(reinterpret_cast<char*>(cfg.info.lo_file_name), image.c_str(), LO_NAME_SIZE - 1);
      int rc = ::ioctl(lfd, LOOP_CONFIGURE, &cfg);
      if (rc != 0 && errno == EINVAL) {  // backing filesystem without O_DIRECT: buffered loop
        cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
        rc = ::ioctl(lfd, LOOP_CONFIGURE, &cfg);
      }
      if (rc == 0) {
        loop_fd_ = lfd;
        break;
      }
      err = errno;
      ::close(lfd);
      if (err != EBUSY) break;  // EBUSY: another program took this device first; ask again
    }
    ::close(ctl);
    // The loop device holds the image now; its name is no longer needed.
    unlink_image();
    if (loop_fd_ < 0) throw SetupError("Couldn't set up a loop device for " + image + ": " + errno_text(err));
    loop_info64 info{};
    if (::ioctl(loop_fd_, LOOP_GET_STATUS64, &info) == 0) loop_direct_io_ = info.lo_flags & LO_FLAGS_DIRECT_IO;

    std::vector<std::string> argv = {rec.mkfs};
    argv.insert(argv.end(), rec.args.begin(), rec.args.end());
    argv.push_back(loop_path_);
    const SpawnResult mk = spawn_and_wait(argv);
    if (!mk.ok())
      throw SetupError(std::string("Couldn't make ") + fs + " on " + loop_path_ + ": " + rec.mkfs + " " +
                       (mk.signal ? "killed by signal " + std::to_string(mk.signal) : "failed: " + last_lines(mk.output)));
    if (::mount(loop_path_.c_str(), mountpoint_.c_str(), fs.c_str(), MS_NOSUID | MS_NODEV, nullptr) != 0)
      throw SetupError("Couldn't mount " + fs + " from " + loop_path_ + " on " + mountpoint_ + ": " + errno_text(errno));
    mounted_ = true;
    std::string cmd;
    for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    note_ = cmd + "; " + std::to_string(image_bytes >> 20) + " MiB sparse image, loop " +
            (loop_direct_io_ ? "direct-io=on (no page cache under the filesystem)" : "buffered (direct-io refused)");
  } catch (...) {
    teardown();
    throw;
  }
}

void FsInstance::unlink_image() {
  if (!image_path_.empty()) ::unlink(image_path_.c_str());
  image_path_.clear();
}

void FsInstance::teardown() {
  unlink_image();  // still named if setup failed before the loop device took it
  if (mounted_) {
    ::sync();
    bool gone = false;
    for (int i = 0; i < 50 && !gone; ++i) {
      gone = ::umount2(mountpoint_.c_str(), 0) == 0;
      if (!gone && errno != EBUSY) break;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!gone) ::umount2(mountpoint_.c_str(), MNT_DETACH);  // lazy: goes when the last user does
    mounted_ = false;
  }
  if (loop_fd_ >= 0) {
    ::ioctl(loop_fd_, LOOP_CLR_FD, 0);
    ::close(loop_fd_);
    loop_fd_ = -1;
  }
  if (image_fd_ >= 0) ::close(image_fd_);
  image_fd_ = -1;
  if (!mountpoint_.empty()) ::rmdir(mountpoint_.c_str());
}

FsInstance::~FsInstance() { teardown(); }

}  // namespace rateline::blocktest
