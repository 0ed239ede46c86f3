#include "agent/unwind/range_allocator.h"

#include <gtest/gtest.h>

namespace warpscope {
namespace {

TEST(RangeAllocatorTest, AllocatesFirstFitAndCoalesces) {
  RangeAllocator a(100);
  EXPECT_EQ(a.Allocate(10), 0u);
  EXPECT_EQ(a.Allocate(20), 10u);
  EXPECT_EQ(a.Allocate(30), 30u);
  EXPECT_EQ(a.used(), 60u);
  a.Free(10, 20);
  EXPECT_EQ(a.Allocate(25), 60u) << "the 20-slot hole is too small";
  EXPECT_EQ(a.Allocate(15), 10u) << "first fit reuses the hole";
  a.Free(0, 10);
  a.Free(10, 15);
  a.Free(30, 30);
  a.Free(60, 25);
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.largest_free(), 100u) << "everything coalesced";
}

TEST(RangeAllocatorTest, FullAndZero) {
  RangeAllocator a(8);
  EXPECT_FALSE(a.Allocate(0).has_value());
  EXPECT_FALSE(a.Allocate(9).has_value());
  EXPECT_EQ(a.Allocate(8), 0u);
  EXPECT_FALSE(a.Allocate(1).has_value());
}

TEST(RangeAllocatorTest, RandomisedNeverOverlaps) {
  RangeAllocator a(1000);
  std::vector<bool> taken(1000, false);
  std::vector<std::pair<uint32_t, uint32_t>> live;  // first, count
  uint32_t seed = 7;
  auto rnd = [&] { return (seed = seed * 1103515245 + 12345) >> 16 & 0x7fff; };
  for (int i = 0; i < 5000; ++i) {
    if (!live.empty() && rnd() % 2) {
      const size_t k = rnd() % live.size();
      for (uint32_t j = 0; j < live[k].second; ++j) taken[live[k].first + j] = false;
      a.Free(live[k].first, live[k].second);
      live.erase(live.begin() + static_cast<long>(k));
    } else {
      const uint32_t count = 1 + rnd() % 50;
      if (auto first = a.Allocate(count)) {
        for (uint32_t j = 0; j < count; ++j) {
          ASSERT_FALSE(taken[*first + j]) << "overlap at " << *first + j;
          taken[*first + j] = true;
        }
        live.emplace_back(*first, count);
      }
    }
  }
  uint32_t used = 0;
  for (const auto& l : live) used += l.second;
  EXPECT_EQ(a.used(), used);
}

}  // namespace
}  // namespace warpscope
