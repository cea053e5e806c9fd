// Owners for what the kernel hands out: a file descriptor and a memory
// mapping, released exactly once by their destructor. Setup that throws
// half-way then leaks nothing and needs no close/munmap before each throw.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace rateline {

class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd) : fd_(fd) {}
  ~OwnedFd() { reset(); }
  OwnedFd(OwnedFd&& o) noexcept : fd_(o.release()) {}
  OwnedFd& operator=(OwnedFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

class OwnedMapping {
 public:
  OwnedMapping() = default;
  // Takes mmap's result: MAP_FAILED leaves it empty (errno as mmap set it).
  OwnedMapping(void* addr, size_t bytes)
      : addr_(addr == MAP_FAILED ? nullptr : static_cast<uint8_t*>(addr)), bytes_(addr_ ? bytes : 0) {}
  ~OwnedMapping() { reset(); }
  OwnedMapping(OwnedMapping&& o) noexcept
      : addr_(std::exchange(o.addr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  OwnedMapping& operator=(OwnedMapping&& o) noexcept {
    if (this != &o) {
      reset();
      addr_ = std::exchange(o.addr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  OwnedMapping(const OwnedMapping&) = delete;
  OwnedMapping& operator=(const OwnedMapping&) = delete;

  uint8_t* data() const { return addr_; }
  size_t size() const { return bytes_; }
  explicit operator bool() const { return addr_ != nullptr; }
  void reset() {
    if (addr_) ::munmap(addr_, bytes_);
    addr_ = nullptr;
    bytes_ = 0;
  }

 private:
  uint8_t* addr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace rateline
