// O_DIRECT alignment and the engine on a real file (in $TMPDIR or /tmp).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "tools/blocktest/engine.hpp"
#include "tools/blocktest/target.hpp"
#include "util/errors.hpp"

using namespace rateline;
using namespace rateline::blocktest;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string t = std::string(base && *base ? base : "/tmp") + "/blocktest-unit-XXXXXX";
    if (mkdtemp(t.data())) path = t;
  }
  ~TempDir() {
    if (!path.empty()) rmdir(path.c_str());
  }
};

std::unique_ptr<Engine> make_engine(uint32_t qd, uint64_t slot_bytes) {
  EngineOptions o;
  o.qd = qd;
  o.max_slot_bytes = slot_bytes;
  o.placement = Placement::none;  // tests do not pin or change scheduling
  try {
    return std::make_unique<Engine>(o);
  } catch (const BackendUnavailable&) {
    return nullptr;
  }
}

PhasePlan plan(bool write, uint64_t bs, uint64_t blocks, uint32_t qd) {
  PhasePlan p;
  p.write = write;
  p.verify = true;
  p.block_bytes = bs;
  p.blocks = blocks;
  p.seed = 0xfeedface;
  p.qd = qd;
  p.wait_batch = qd;
  return p;
}

}  // namespace

TEST(DirectAlign, SlotsArePageAligned) {
  SlotBuffers b(8, 8192);
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(reinterpret_cast<uintptr_t>(b.slot(i)) % 4096, 0u) << i;
}

// The slots start on a 2 MiB boundary so that huge pages (pool or THP) can
// back them: a 1 MiB O_DIRECT block is then one DMA segment, not up to 256.
TEST(DirectAlign, SlotsStartOnAHugePageBoundary) {
  SlotBuffers b(4, 1 << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.base()) % (2u << 20), 0u);
  b.slot(3)[(1 << 20) - 1] = 1;  // the last byte of the last slot is mapped
}

TEST(DeviceCounts, ParsesTheBlockStatFileFields) {
  TempDir d;
  ASSERT_FALSE(d.path.empty());
  const std::string p = d.path + "/stat";
  FILE* f = std::fopen(p.c_str(), "w");
  ASSERT_NE(f, nullptr);
  // /sys/block/X/stat: reads, read merges, read sectors, read ticks, writes, write merges, write sectors, ...
  std::fputs("     101        7     2048       30      205       11     8192       40        0       50       70\n", f);
  std::fclose(f);
  const DeviceCounts c = read_device_counts(p);
  EXPECT_TRUE(c.known);
  EXPECT_EQ(c.read_requests, 101u);
  EXPECT_EQ(c.read_merges, 7u);
  EXPECT_EQ(c.read_sectors, 2048u);
  EXPECT_EQ(c.write_requests, 205u);
  EXPECT_EQ(c.write_merges, 11u);
  EXPECT_EQ(c.write_sectors, 8192u);
  EXPECT_EQ(c.busy_ms, 50u);
  EXPECT_FALSE(read_device_counts("").known);
  EXPECT_FALSE(read_device_counts(d.path + "/absent").known);
  std::remove(p.c_str());
}

TEST(DirectAlign, TheKernelEnforcesWhatThePlannerAssumes) {
  TempDir d;
  ASSERT_FALSE(d.path.empty());
  std::unique_ptr<TestFile> f;
  try {
    f = std::make_unique<TestFile>(d.path, "align", true);
  } catch (const SetupError& e) {
    GTEST_SKIP() << e.what();
  }
  const DirectAlign a = direct_align(f->fd());
  ASSERT_GT(a.offset_align, 0u);
  ASSERT_LE(a.memory_align, 4096u);
  void* m = mmap(nullptr, 16384, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  auto* buf = static_cast<uint8_t*>(m);
  // An aligned block goes through...
  EXPECT_EQ(pwrite(f->fd(), buf, a.offset_align, 0), static_cast<ssize_t>(a.offset_align));
  // ...a shorter one is refused, so blocktest reports such sizes n/a instead of faking them.
  if (a.offset_align > 1) {
    errno = 0;
    EXPECT_EQ(pwrite(f->fd(), buf, a.offset_align / 2, 0), -1);
    EXPECT_EQ(errno, EINVAL);
  }
  // Memory: statx's stx_dio_mem_align is sufficient (not always necessary: a
  // kernel may accept less); blocktest's page-aligned slots always meet it.
  SlotBuffers slots(4, 4096);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(reinterpret_cast<uintptr_t>(slots.slot(i)) % a.memory_align, 0u);
  munmap(m, 16384);
}

TEST(DirectAlign, EngineRoundTripWithVerify) {
  TempDir d;
  std::unique_ptr<TestFile> f;
  try {
    f = std::make_unique<TestFile>(d.path, "rt", true);
  } catch (const SetupError& e) {
    GTEST_SKIP() << e.what();
  }
  auto e = make_engine(4, 4096);
  if (!e) GTEST_SKIP() << "io_uring unavailable";
  e->attach(f->fd());
  std::atomic<uint64_t> done{0};
  std::atomic<bool> stop{false};
  const PhaseResult w = e->run(plan(true, 4096, 64, 4), done, stop);
  EXPECT_EQ(w.error, 0);
  EXPECT_EQ(w.blocks_ok, 64u);
  EXPECT_EQ(w.bytes_ok, 64u * 4096);
  EXPECT_EQ(done.load(), 64u);
  const PhaseResult r = e->run(plan(false, 4096, 64, 4), done, stop);
  EXPECT_EQ(r.error, 0);
  EXPECT_EQ(r.blocks_ok, 64u);
  EXPECT_EQ(r.verify_failures, 0u);
  EXPECT_GE(r.enters, 16u) << "one request per block, at most qd per io_uring_enter";
}

TEST(DirectAlign, MisalignedDirectBlockFailsInsteadOfBeingFaked) {
  TempDir d;
  std::unique_ptr<TestFile> f;
  try {
    f = std::make_unique<TestFile>(d.path, "mis", true);
  } catch (const SetupError& e) {
    GTEST_SKIP() << e.what();
  }
  if (direct_align(f->fd()).offset_align <= 1) GTEST_SKIP() << "no alignment constraint here";
  auto e = make_engine(2, 4096);
  if (!e) GTEST_SKIP() << "io_uring unavailable";
  e->attach(f->fd());
  std::atomic<uint64_t> done{0};
  std::atomic<bool> stop{false};
  const PhaseResult w = e->run(plan(true, 100, 8, 2), done, stop);
  EXPECT_EQ(w.error, EINVAL);
  EXPECT_EQ(w.blocks_ok, 0u);
}

TEST(Verify, EngineCatchesAByteFlippedOnDisk) {
  TempDir d;
  TestFile f(d.path, "flip", false);
  auto e = make_engine(8, 4096);
  if (!e) GTEST_SKIP() << "io_uring unavailable";
  e->attach(f.fd());
  std::atomic<uint64_t> done{0};
  std::atomic<bool> stop{false};
  const uint64_t bs = 512;
  ASSERT_EQ(e->run(plan(true, bs, 32, 8), done, stop).error, 0);
  // Inject: one byte of block 3, through another descriptor.
  const int fd = open(f.path().c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint8_t b = 0;
  ASSERT_EQ(pread(fd, &b, 1, 3 * bs + 100), 1);
  b ^= 0x04;
  ASSERT_EQ(pwrite(fd, &b, 1, 3 * bs + 100), 1);
  close(fd);
  const PhaseResult r = e->run(plan(false, bs, 32, 8), done, stop);
  EXPECT_EQ(r.error, 0);
  EXPECT_EQ(r.verify_failures, 1u);
  EXPECT_EQ(r.first_bad_offset, 3 * bs);
  EXPECT_EQ(r.first_bad.first_bad_byte, 100u);
  EXPECT_EQ(r.first_bad.fault, BlockFault::pattern);
}

TEST(TestFileSafety, NeverOpensWhatExistsAndRemovesOnlyItsOwn) {
  TempDir d;
  std::string path;
  {
    TestFile f(d.path, "own", false);
    path = f.path();
    EXPECT_EQ(access(path.c_str(), F_OK), 0);
    // Someone replaces the file under the same name: remove() must leave theirs alone.
    unlink(path.c_str());
    const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  EXPECT_EQ(access(path.c_str(), F_OK), 0) << "a file blocktest did not create was removed";
  unlink(path.c_str());
  {
    TestFile f(d.path, "gone", false);
    path = f.path();
  }
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "the test file was left behind";
}

namespace {

std::atomic<int> g_alarms{0};
extern "C" void count_alarm(int) { g_alarms.fetch_add(1, std::memory_order_relaxed); }

// SIGALRM every `us` microseconds while it lives, handled as blocktest
// handles SIGINT/SIGTERM: a flag, no SA_RESTART, so io_uring_enter returns early.
class SignalStorm {
 public:
  explicit SignalStorm(long us) {
    struct sigaction sa{};
    sa.sa_handler = count_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &old_);
    const itimerval every{{0, us}, {0, us}};
    setitimer(ITIMER_REAL, &every, nullptr);
  }
  ~SignalStorm() {
    const itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
    sigaction(SIGALRM, &old_, nullptr);
  }

 private:
  struct sigaction old_{};
};

}  // namespace

// A signal that interrupts the wait for the closing fsync: io_uring_enter
// then returns what it submitted, with the fsync still in flight. Its
// completion (user_data ~0) must be reaped by its own phase; left in the
// ring, the next phase took ~0 for a slot index and crashed.
TEST(Signals, AnInterruptedFsyncIsReapedByItsOwnPhase) {
  TempDir d;
  TestFile f(d.path, "sig", false);
  auto e = make_engine(8, 4096);
  if (!e) GTEST_SKIP() << "io_uring unavailable";
  e->attach(f.fd());
  std::atomic<uint64_t> done{0};
  std::atomic<bool> stop{false};
  g_alarms = 0;
  {
    SignalStorm storm(100);
    for (int i = 0; i < 20; ++i) {
      PhasePlan w = plan(true, 4096, 64, 8);
      w.fsync = true;
      const PhaseResult wr = e->run(w, done, stop);
      ASSERT_EQ(wr.error, 0) << "round " << i;
      ASSERT_EQ(wr.blocks_ok, 64u) << "round " << i;
      ASSERT_EQ(wr.submitted, 65u) << "64 blocks and the fsync";
      const PhaseResult rr = e->run(plan(false, 4096, 64, 8), done, stop);
      ASSERT_EQ(rr.error, 0) << "round " << i << ": a completion of the write phase reached the read";
      ASSERT_EQ(rr.blocks_ok, 64u) << "round " << i;
      ASSERT_EQ(rr.verify_failures, 0u) << "round " << i;
    }
  }
  EXPECT_GT(g_alarms.load(), 0);
}

// Stop: what is in flight is drained, so the next phase starts on an empty ring.
TEST(Signals, StopDrainsTheRingForTheNextPhase) {
  TempDir d;
  TestFile f(d.path, "stop", false);
  auto e = make_engine(8, 4096);
  if (!e) GTEST_SKIP() << "io_uring unavailable";
  e->attach(f.fd());
  std::atomic<uint64_t> done{0};
  std::atomic<bool> stop{true};
  const PhaseResult w = e->run(plan(true, 4096, 1024, 8), done, stop);
  EXPECT_TRUE(w.stopped);
  EXPECT_EQ(w.error, 0);
  EXPECT_LT(w.blocks_ok, 1024u);
  EXPECT_EQ(w.left_in_flight, 0u);
  stop = false;
  const PhaseResult again = e->run(plan(true, 4096, 64, 8), done, stop);
  EXPECT_EQ(again.error, 0);
  EXPECT_EQ(again.blocks_ok, 64u);
  EXPECT_EQ(again.submitted, 64u);
}
