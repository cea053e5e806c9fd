#include "tools/blocktest/planner.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace rateline::blocktest;

TEST(SizeList, DefaultIsTheSeedsSweep) {
  const auto v = default_sizes();
  ASSERT_EQ(v.size(), 18u);  // 8, 16, ... 1M as in the seed's dd script
  EXPECT_EQ(v.front(), 8u);
  EXPECT_EQ(v.back(), 1u << 20);
  EXPECT_EQ(parse_size_list("8..1M"), v);
}

TEST(SizeList, ListsRangesAndMixes) {
  EXPECT_EQ(parse_size_list("4k"), (std::vector<uint64_t>{4096}));
  EXPECT_EQ(parse_size_list("1M,512,4KiB"), (std::vector<uint64_t>{512, 4096, 1 << 20}));
  EXPECT_EQ(parse_size_list("8,4k..16k,4k"), (std::vector<uint64_t>{8, 4096, 8192, 16384}));
  EXPECT_EQ(parse_size_list("1000"), (std::vector<uint64_t>{1000}));  // any size, not only powers of two
}

TEST(SizeList, RejectsNonsense) {
  for (const char* bad : {"", "0", "8,,16", "16..8", "3..64", "8..1000", "lots", "2G", "-8"})
    EXPECT_THROW(parse_size_list(bad), std::invalid_argument) << bad;
}

TEST(Plan, DefaultTotalsAreCappedInBlocks) {
  SweepInput in;
  in.sizes = default_sizes();
  const auto plan = plan_sweep(in);
  ASSERT_EQ(plan.size(), 18u);
  EXPECT_EQ(plan[0].block_bytes, 8u);
  EXPECT_EQ(plan[0].blocks, kDefaultMaxBlocks);      // 8 B: 512Ki blocks = 4 MiB
  EXPECT_EQ(plan[0].bytes, 4u << 20);
  EXPECT_EQ(plan[3].bytes, 32u << 20);                // 64 B
  EXPECT_EQ(plan[4].bytes, kDefaultTotalBytes);       // 128 B: 64 MiB, exactly the cap
  EXPECT_EQ(plan.back().blocks, 64u);                 // 1 MiB: 64 blocks
  for (const auto& p : plan) {
    EXPECT_TRUE(p.applicable);
    EXPECT_EQ(p.bytes, p.blocks * p.block_bytes);     // whole blocks only: one I/O each
    EXPECT_LE(p.blocks, kDefaultMaxBlocks);
  }
}

TEST(Plan, ExplicitTotalIsWholeBlocks) {
  SweepInput in;
  in.sizes = {8, 4096, 1000, 1 << 20};
  in.total_bytes = 1ull << 30;  // the seed: 1 GiB per size
  auto plan = plan_sweep(in);
  EXPECT_EQ(plan[0].blocks, (1ull << 30) / 8);
  EXPECT_EQ(plan[1].blocks, 262144u);
  EXPECT_EQ(plan[2].blocks, 1073741u);                // 1 GiB / 1000, rounded down
  EXPECT_EQ(plan[2].bytes, 1073741000u);
  in.total_bytes = 100000;                            // less than one 1 MiB block
  plan = plan_sweep(in);
  EXPECT_FALSE(plan[3].applicable);
  EXPECT_EQ(plan[3].bytes, 0u);
  EXPECT_NE(plan[3].not_applicable.find("less than one block"), std::string::npos);
}

TEST(Plan, DirectBelowTheLogicalBlockIsNotApplicable) {
  SweepInput in;
  in.sizes = default_sizes();
  in.sizes.push_back(1000);
  in.sizes.push_back(6144);
  std::sort(in.sizes.begin(), in.sizes.end());
  in.direct = true;
  in.align = {4096, 4096, "test"};
  for (const auto& p : plan_sweep(in)) {
    const bool ok = p.block_bytes >= 4096 && p.block_bytes % 4096 == 0;
    EXPECT_EQ(p.applicable, ok) << p.block_bytes;
    if (!ok) {
      EXPECT_EQ(p.blocks, 0u) << "n/a sizes never run";
      EXPECT_FALSE(p.not_applicable.empty());
    }
  }
  in.align = {512, 512, "test"};
  const auto plan = plan_sweep(in);
  EXPECT_FALSE(plan[0].applicable);                   // 8 B
  EXPECT_NE(plan[0].not_applicable.find("below the 512 B"), std::string::npos);
  for (const auto& p : plan) {
    if (p.block_bytes == 512 || p.block_bytes == 4096) {
      EXPECT_TRUE(p.applicable);
    }
    if (p.block_bytes == 1000) {
      EXPECT_FALSE(p.applicable);
    }
  }
  in.align = {};                                      // O_DIRECT refused by the filesystem
  for (const auto& p : plan_sweep(in)) EXPECT_FALSE(p.applicable);
}

TEST(Plan, BuffersArePageStrided) {
  SweepInput in;
  in.sizes = {8, 4096, 5000, 1 << 20};
  const auto plan = plan_sweep(in);
  EXPECT_EQ(plan[0].slot_bytes, 4096u);
  EXPECT_EQ(plan[1].slot_bytes, 4096u);
  EXPECT_EQ(plan[2].slot_bytes, 8192u);
  EXPECT_EQ(plan[3].slot_bytes, 1u << 20);
  for (const auto& p : plan) EXPECT_EQ(p.slot_bytes % kBufferAlign, 0u);
}

TEST(Plan, SpaceNeededCoversTheLargestFile) {
  SweepInput in;
  in.sizes = {8, 1 << 20};
  in.total_bytes = 1ull << 30;
  const auto plan = plan_sweep(in);
  EXPECT_EQ(largest_file_bytes(plan), 1ull << 30);
  EXPECT_GE(space_needed(plan), (1ull << 30) + (16ull << 20));
  in.total_bytes = 1 << 20;
  EXPECT_EQ(space_needed(plan_sweep(in)), (1u << 20) + (16u << 20));  // the 16 MiB minimum margin
}

TEST(Labels, AsInTheSeedsTable) {
  EXPECT_EQ(size_label(8), "8");
  EXPECT_EQ(size_label(1024), "1k");
  EXPECT_EQ(size_label(1 << 20), "1M");
  EXPECT_EQ(size_label(1000), "1000");
  EXPECT_EQ(size_label(1ull << 30), "1G");
}
