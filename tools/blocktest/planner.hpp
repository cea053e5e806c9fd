// The sweep planner: which block sizes run, how many blocks each, which
// sizes cannot run with O_DIRECT, how buffers are laid out, and how much
// space a run needs. Pure functions of the config and the target's
// properties, so they are unit-tested without touching a disk.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rateline::blocktest {

// Default sweep: the seed's dd block sizes, 8 B .. 1 MiB in powers of two.
inline constexpr uint64_t kDefaultMinSize = 8;
inline constexpr uint64_t kDefaultMaxSize = 1ull << 20;
// Default bytes per size: 64 MiB, but at most 512 Ki blocks, so the small
// sizes (one I/O per block: 8 B is 8 Mi I/Os per 64 MiB) stay quick:
// 8 B -> 4 MiB, 16 B -> 8 MiB, 32 B -> 16 MiB, 64 B -> 32 MiB, >= 128 B -> 64 MiB.
// About 1.1 GiB written per sweep. --total 1G reproduces the seed (1 GiB per size).
inline constexpr uint64_t kDefaultTotalBytes = 64ull << 20;
inline constexpr uint64_t kDefaultMaxBlocks = 512ull << 10;
// Buffers start on a page boundary: enough for O_DIRECT on every Linux
// filesystem and block device (the DMA alignment is at most a page).
inline constexpr uint64_t kBufferAlign = 4096;

// "8..1M" (powers of two, both ends included), "512,4k,1M", or a mix
// "8,4k..64k". Returns ascending unique sizes. Throws std::invalid_argument.
std::vector<uint64_t> parse_size_list(std::string_view text);
std::vector<uint64_t> default_sizes();

// What the target says about O_DIRECT (statx STATX_DIOALIGN, or the block
// device's logical block size). 0 = O_DIRECT not supported on it.
struct DirectAlign {
  uint32_t offset_align = 0;  // file offsets and lengths must be multiples of this
  uint32_t memory_align = 0;  // buffer addresses must be multiples of this
  const char* source = "";    // how it was found: "statx DIOALIGN", "BLKSSZGET", ...
};

struct SizePlan {
  uint64_t block_bytes = 0;
  uint64_t blocks = 0;      // one I/O each, never merged
  uint64_t bytes = 0;       // blocks * block_bytes
  uint64_t slot_bytes = 0;  // buffer stride: block_bytes rounded up to kBufferAlign
  bool applicable = true;
  std::string not_applicable;  // why not, e.g. "below the 4096 B O_DIRECT alignment"
};

struct SweepInput {
  std::vector<uint64_t> sizes;
  uint64_t total_bytes = 0;  // 0 = default rule above
  bool direct = false;
  DirectAlign align;
};

std::vector<SizePlan> plan_sweep(const SweepInput& in);

// Bytes the largest size writes; the file of a size is removed before the next.
uint64_t largest_file_bytes(const std::vector<SizePlan>& plan);
// Free space a run asks for before it starts: the largest file plus a
// margin for metadata and journal (1/16 and at least 16 MiB).
uint64_t space_needed(const std::vector<SizePlan>& plan);

// "8", "4k", "1M": the seed's row labels.
std::string size_label(uint64_t bytes);

inline uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace rateline::blocktest
