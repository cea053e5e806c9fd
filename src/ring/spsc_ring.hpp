// Single-producer single-consumer lockless ring (bounded, power-of-two).
//
// Memory-ordering contract (same shape as DPDK's rte_ring c11 model):
// - The producer writes the slot, then publishes with a release store of
//   head_; the consumer's acquire load of head_ pairs with it, so the slot's
//   contents are visible before the index that covers them.
// - The consumer reads the slot, then frees it with a release store of tail_;
//   the producer's acquire load of tail_ pairs with it, so a slot is never
//   overwritten while it is still being read.
// head_ and tail_ live on their own cache lines, and each side keeps a
// private copy of the other's index to avoid touching the shared line on
// every operation.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <type_traits>

namespace rateline::ring {

inline constexpr size_t kCacheLine = 64;

template <typename T>
class SpscRing {
  static_assert(std::is_trivially_copyable_v<T>, "slots are copied without constructors");

 public:
  explicit SpscRing(size_t capacity_pow2) : mask_(capacity_pow2 - 1), slots_(new T[capacity_pow2]) {
    if (capacity_pow2 == 0 || (capacity_pow2 & mask_) != 0) throw std::invalid_argument("ring capacity must be a power of two");
  }

  // Producer side. Returns false when full (the caller decides: drop or retry).
  bool try_push(const T& v) {
    const uint64_t head = head_.value.load(std::memory_order_relaxed);
    if (head - tail_cache_ > mask_) {
      tail_cache_ = tail_.value.load(std::memory_order_acquire);  // pairs with try_pop's release of tail_
      if (head - tail_cache_ > mask_) return false;
    }
    slots_[head & mask_] = v;
    head_.value.store(head + 1, std::memory_order_release);  // pairs with try_pop's acquire of head_
    return true;
  }

  // Consumer side.
  std::optional<T> try_pop() {
    const uint64_t tail = tail_.value.load(std::memory_order_relaxed);
    if (tail == head_cache_) {
      head_cache_ = head_.value.load(std::memory_order_acquire);  // pairs with try_push's release of head_
      if (tail == head_cache_) return std::nullopt;
    }
    T v = slots_[tail & mask_];
    tail_.value.store(tail + 1, std::memory_order_release);  // pairs with try_push's acquire of tail_
    return v;
  }

  size_t capacity() const { return mask_ + 1; }

 private:
  struct alignas(kCacheLine) Index {
    std::atomic<uint64_t> value{0};
  };
  const uint64_t mask_;
  std::unique_ptr<T[]> slots_;
  Index head_;
  alignas(kCacheLine) uint64_t tail_cache_ = 0;  // producer-private
  Index tail_;
  alignas(kCacheLine) uint64_t head_cache_ = 0;  // consumer-private
};

}  // namespace rateline::ring
