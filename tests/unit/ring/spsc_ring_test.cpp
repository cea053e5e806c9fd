// Single-producer single-consumer ring (src/ring/spsc_ring.hpp).
#include "ring/spsc_ring.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <thread>

namespace {

using rateline::ring::SpscRing;

TEST(SpscRing, CapacityMustBePowerOfTwo) {
  for (size_t bad : {size_t{0}, size_t{3}, size_t{5}, size_t{6}, size_t{7}, size_t{12}, size_t{100}, size_t{1000}}) {
    EXPECT_THROW(SpscRing<int>{bad}, std::invalid_argument) << bad;
  }
  for (size_t good : {size_t{1}, size_t{2}, size_t{4}, size_t{64}, size_t{1024}}) {
    SpscRing<int> r(good);
    EXPECT_EQ(r.capacity(), good);
  }
}

TEST(SpscRing, EmptyPopsNothing) {
  SpscRing<int> r(8);
  EXPECT_FALSE(r.try_pop().has_value());
}

TEST(SpscRing, PushUntilFullThenRefuses) {
  SpscRing<uint64_t> r(8);
  for (uint64_t i = 0; i < 8; ++i) EXPECT_TRUE(r.try_push(i)) << i;
  EXPECT_FALSE(r.try_push(100));
  EXPECT_FALSE(r.try_push(101));
  auto v = r.try_pop();
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(*v, 0u);
  EXPECT_TRUE(r.try_push(8));
  EXPECT_FALSE(r.try_push(9));
  for (uint64_t i = 1; i <= 8; ++i) {
    auto w = r.try_pop();
    ASSERT_TRUE(w.has_value());
    EXPECT_EQ(*w, i);
  }
  EXPECT_FALSE(r.try_pop().has_value());
}

TEST(SpscRing, CapacityOneHoldsOne) {
  SpscRing<int> r(1);
  EXPECT_TRUE(r.try_push(7));
  EXPECT_FALSE(r.try_push(8));
  EXPECT_EQ(r.try_pop(), 7);
  EXPECT_FALSE(r.try_pop().has_value());
  EXPECT_TRUE(r.try_push(9));
  EXPECT_EQ(r.try_pop(), 9);
}

TEST(SpscRing, FifoOrderAcrossManyWraps) {
  SpscRing<uint32_t> r(16);
  uint32_t pushed = 0, popped = 0;
  for (uint32_t round = 0; round < 20000; ++round) {
    const uint32_t level = pushed - popped;
    const uint32_t n = std::min<uint32_t>(1 + round % 16, 16 - level);  // varying fill levels
    for (uint32_t i = 0; i < n; ++i) ASSERT_TRUE(r.try_push(pushed++));
    if (pushed - popped == 16) {
      ASSERT_FALSE(r.try_push(0xdead));
    }
    const uint32_t m = (round * 7) % (pushed - popped + 1);
    for (uint32_t i = 0; i < m; ++i) {
      auto v = r.try_pop();
      ASSERT_TRUE(v.has_value());
      ASSERT_EQ(*v, popped++);
    }
  }
  while (auto v = r.try_pop()) ASSERT_EQ(*v, popped++);
  EXPECT_EQ(popped, pushed);
}

struct Wide {
  uint64_t a, b, c;
};

TEST(SpscRing, CopiesWholeStructs) {
  SpscRing<Wide> r(4);
  ASSERT_TRUE(r.try_push({1, 2, 3}));
  ASSERT_TRUE(r.try_push({4, 5, 6}));
  const auto x = r.try_pop();
  ASSERT_TRUE(x.has_value());
  EXPECT_EQ(x->a, 1u);
  EXPECT_EQ(x->c, 3u);
  const auto y = r.try_pop();
  ASSERT_TRUE(y.has_value());
  EXPECT_EQ(y->b, 5u);
}

TEST(SpscRing, TwoThreadsMillionSequentialIntegersInOrder) {
  constexpr uint64_t kCount = 1'000'000;
  SpscRing<uint64_t> r(64);
  uint64_t out_of_order = 0, received = 0, sum = 0;
  std::thread consumer([&] {
    uint64_t expect = 0;
    while (expect < kCount) {
      auto v = r.try_pop();
      if (!v) {
        std::this_thread::yield();
        continue;
      }
      if (*v != expect) ++out_of_order;
      expect = *v + 1;
      ++received;
      sum += *v;
    }
  });
  for (uint64_t i = 0; i < kCount; ++i)
    while (!r.try_push(i)) std::this_thread::yield();
  consumer.join();
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(received, kCount);
  EXPECT_EQ(sum, kCount * (kCount - 1) / 2);
  EXPECT_FALSE(r.try_pop().has_value());
}

}  // namespace
