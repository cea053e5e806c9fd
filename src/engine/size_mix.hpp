// Packet sizes in a mix (pktgen --size 64,594,1518 --weights 7,4,1, --imix):
// which size each packet of a worker's sequence gets.
//
// The sizes follow one fixed cycle of sum(weights) packets, laid out by
// smooth weighted round robin (each step every size gains its weight, the
// one with the most goes next and pays the total): 7:4:1 gives
// a b a a b a c a b a b a, never seven 64s in a row. So any window of the
// sequence holds each size within two packets of its share (unit-tested),
// every batch is a mix, and a run whose count is a multiple of the cycle
// holds the weights exactly. The cycle is built once per run; the loop reads one
// entry per packet.
#pragma once

#include <cstdint>
#include <vector>

namespace rateline::engine {

inline constexpr uint32_t kMaxMixSizes = 16;   // size classes: an index fits a byte, the report one line each
inline constexpr uint32_t kMaxMixCycle = 4096;  // sum of the weights: the cycle's length

// The cycle for these weights (each >= 1, at most kMaxMixSizes of them,
// sum <= kMaxMixCycle): entry k is the size class of the k-th packet.
inline std::vector<uint8_t> size_mix_cycle(const std::vector<uint32_t>& weights) {
  uint64_t total = 0;
  for (uint32_t w : weights) total += w;
  std::vector<uint8_t> cycle;
  cycle.reserve(total);
  std::vector<int64_t> credit(weights.size(), 0);
  for (uint64_t k = 0; k < total; ++k) {
    size_t best = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
      credit[i] += weights[i];
      if (credit[i] > credit[best]) best = i;  // ties: the size listed first
    }
    credit[best] -= static_cast<int64_t>(total);
    cycle.push_back(static_cast<uint8_t>(best));
  }
  return cycle;
}

}  // namespace rateline::engine
