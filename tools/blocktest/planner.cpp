#include "planner.hpp"

#include <algorithm>
#include <stdexcept>

#include "util/units.hpp"

namespace rateline::blocktest {
namespace {

constexpr uint64_t kMaxBlockBytes = 1ull << 30;  // one registered buffer is at most 1 GiB

bool is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

uint64_t parse_one(std::string_view text) {
  const uint64_t v = units::parse_bytes(text);
  if (v == 0) throw std::invalid_argument("block size 0 in '" + std::string(text) + "'");
  if (v > kMaxBlockBytes) throw std::invalid_argument("block size '" + std::string(text) + "' is above 1 GiB");
  return v;
}

}  // namespace

std::vector<uint64_t> parse_size_list(std::string_view text) {
  std::vector<uint64_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(pos, comma - pos);
    if (item.empty()) throw std::invalid_argument("empty entry in size list '" + std::string(text) + "'");
    if (const size_t dots = item.find(".."); dots != std::string_view::npos) {
      const uint64_t lo = parse_one(item.substr(0, dots)), hi = parse_one(item.substr(dots + 2));
      if (!is_pow2(lo) || !is_pow2(hi))
        throw std::invalid_argument("range '" + std::string(item) + "' must run between powers of two (e.g. 8..1M)");
      if (hi < lo) throw std::invalid_argument("range '" + std::string(item) + "' ends before it starts");
      for (uint64_t s = lo; s <= hi; s *= 2) out.push_back(s);
    } else {
      out.push_back(parse_one(item));
    }
    pos = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<uint64_t> default_sizes() {
  std::vector<uint64_t> v;
  for (uint64_t s = kDefaultMinSize; s <= kDefaultMaxSize; s *= 2) v.push_back(s);
  return v;
}

std::vector<SizePlan> plan_sweep(const SweepInput& in) {
  std::vector<SizePlan> plan;
  for (uint64_t bs : in.sizes) {
    SizePlan p;
    p.block_bytes = bs;
    p.slot_bytes = round_up(bs, kBufferAlign);
    if (in.total_bytes) {
      p.blocks = in.total_bytes / bs;
    } else {
      p.blocks = std::min(kDefaultTotalBytes / bs, kDefaultMaxBlocks);
      if (p.blocks == 0) p.blocks = 1;  // a size above the default total still runs once
    }
    p.bytes = p.blocks * bs;
    if (p.blocks == 0) {
      p.applicable = false;
      p.not_applicable = "--total " + size_label(in.total_bytes) + " is less than one block";
    } else if (in.direct) {
      const uint64_t a = in.align.offset_align;
      if (a == 0) {
        p.applicable = false;
        p.not_applicable = "O_DIRECT not supported here";
      } else if (bs < a) {
        p.applicable = false;
        p.not_applicable = "below the " + std::to_string(a) + " B O_DIRECT alignment";
      } else if (bs % a) {
        p.applicable = false;
        p.not_applicable = "not a multiple of the " + std::to_string(a) + " B O_DIRECT alignment";
      } else if (in.align.memory_align > kBufferAlign) {
        p.applicable = false;
        p.not_applicable = "O_DIRECT memory alignment " + std::to_string(in.align.memory_align) + " B above a page";
      }
    }
    if (!p.applicable) p.bytes = p.blocks = 0;
    plan.push_back(p);
  }
  return plan;
}

uint64_t largest_file_bytes(const std::vector<SizePlan>& plan) {
  uint64_t m = 0;
  for (const SizePlan& p : plan) m = std::max(m, p.bytes);
  return m;
}

uint64_t space_needed(const std::vector<SizePlan>& plan) {
  const uint64_t largest = largest_file_bytes(plan);
  return largest + std::max<uint64_t>(largest / 16, 16ull << 20);
}

std::string size_label(uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return std::to_string(b >> 30) + "G";
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + "k";
  return std::to_string(b);
}

}  // namespace rateline::blocktest
