// --fs: each filesystem made fresh in an image file on a loop device, in a
// directory blocktest creates (and owns) inside --dir.
//
// Cleanup does not depend on our destructors alone:
// - the mounts live in a private mount namespace (entered at start, before
//   any thread): if blocktest dies, even by SIGKILL, the kernel unmounts them;
// - the loop device is configured with LO_FLAGS_AUTOCLEAR, so it detaches
//   itself at its last close, which an unmount (or our exit) is;
// - the image file is unlinked as soon as the loop device holds it: its
//   space goes back when the device detaches.
// The normal path still unmounts, detaches (LOOP_CLR_FD) and removes the
// mount points and the lab directory itself.
// The loop device runs with LO_FLAGS_DIRECT_IO: its I/O bypasses the page
// cache of the filesystem the image lives in, so dropping the test file's
// cache really sends the reads to the disk.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rateline::blocktest {

// The --fs names blocktest knows how to make.
const std::vector<std::string>& known_filesystems();

// Private mount namespace whose mounts do not propagate back. Call before
// any thread exists. Throws SetupError.
void enter_private_mount_namespace();

// "" when the kernel and the tools can make and mount `fs`, else why not.
std::string fs_unsupported_reason(const std::string& fs);

class LabDir {
 public:
  explicit LabDir(const std::string& parent);  // mkdtemp <parent>/blocktest-fs-XXXXXX
  ~LabDir();
  LabDir(const LabDir&) = delete;
  LabDir& operator=(const LabDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class FsInstance {
 public:
  // Makes and mounts `fs` (image of image_bytes, sparse) under lab. Throws SetupError.
  FsInstance(const std::string& fs, const std::string& lab, uint64_t image_bytes);
  ~FsInstance();
  FsInstance(const FsInstance&) = delete;
  FsInstance& operator=(const FsInstance&) = delete;

  const std::string& mountpoint() const { return mountpoint_; }
  const std::string& note() const { return note_; }  // how it was made, for the report
  int backing_fd() const { return loop_direct_io_ ? -1 : image_fd_; }

 private:
  void teardown();
  void unlink_image();
  std::string fs_, mountpoint_, loop_path_, note_;
  std::string image_path_;  // until the loop device holds the image
  int image_fd_ = -1, loop_fd_ = -1;
  bool mounted_ = false, loop_direct_io_ = false;
};

// Image size for a sweep that needs `needed` bytes free: room for
// metadata, and at least what mkfs.xfs/mkfs.btrfs accept.
uint64_t image_bytes_for(uint64_t needed);

}  // namespace rateline::blocktest
