// util/owned.hpp: each owner releases what it holds exactly once, also when
// moved from or reset, and takes mmap's MAP_FAILED as nothing held.
#include "util/owned.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <utility>
#include <vector>

namespace {

using rateline::OwnedFd;
using rateline::OwnedMapping;

bool is_open(int fd) { return fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

int new_fd() {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  ::close(p[1]);
  return p[0];
}

TEST(OwnedFd, ClosesOnceWhenItGoes) {
  const int fd = new_fd();
  ASSERT_GE(fd, 0);
  {
    OwnedFd owner(fd);
    EXPECT_TRUE(owner);
    EXPECT_EQ(owner.get(), fd);
    EXPECT_TRUE(is_open(fd));
  }
  EXPECT_FALSE(is_open(fd));
}

TEST(OwnedFd, MovedFromOwnsNothingAndReleaseHandsOver) {
  const int fd = new_fd();
  OwnedFd a(fd);
  OwnedFd b(std::move(a));
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): that is what is tested
  EXPECT_EQ(b.get(), fd);
  OwnedFd c;
  c = std::move(b);
  EXPECT_EQ(c.get(), fd);
  const int taken = c.release();
  EXPECT_EQ(taken, fd);
  EXPECT_FALSE(c);
  EXPECT_TRUE(is_open(fd));  // released, not closed: the caller owns it now
  ::close(taken);
}

TEST(OwnedFd, ResetAndMoveAssignCloseWhatWasHeld) {
  const int first = new_fd(), second = new_fd(), third = new_fd();
  OwnedFd owner(first);
  owner.reset(second);
  EXPECT_FALSE(is_open(first));
  owner = OwnedFd(third);
  EXPECT_FALSE(is_open(second));
  EXPECT_TRUE(is_open(third));
  std::vector<OwnedFd> many;  // movable into containers without closing
  many.push_back(std::move(owner));
  many.emplace_back(new_fd());
  EXPECT_TRUE(is_open(third));
}

TEST(OwnedMapping, UnmapsWhenItGoesAndTakesMapFailedAsNothing) {
  const size_t bytes = 1 << 16;
  uint8_t* where = nullptr;
  {
    OwnedMapping m(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), bytes);
    ASSERT_TRUE(m);
    EXPECT_EQ(m.size(), bytes);
    where = m.data();
    where[bytes - 1] = 7;
    OwnedMapping moved(std::move(m));
    EXPECT_FALSE(m);  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(moved.data(), where);
    unsigned char in_core = 0;
    EXPECT_EQ(mincore(where, 4096, &in_core), 0);  // still mapped
  }
  unsigned char in_core = 0;
  EXPECT_EQ(mincore(where, 4096, &in_core), -1);  // gone: unmapped by its owner
  EXPECT_EQ(errno, ENOMEM);
  const OwnedMapping failed(MAP_FAILED, bytes);
  EXPECT_FALSE(failed);
  EXPECT_EQ(failed.size(), 0u);
}

}  // namespace
