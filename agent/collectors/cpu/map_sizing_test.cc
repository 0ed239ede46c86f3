#include "agent/collectors/cpu/map_sizing.h"

#include <gtest/gtest.h>

namespace warpscope {
namespace {
using std::chrono::milliseconds;

TEST(MapSizingTest, SmallMachineGetsMinimums) {
  auto s = ComputeCpuSamplerMapSizes(99, 2, milliseconds(1000), 0);
  // 198 samples/s -> 396 -> 512 -> clamped up to 1024.
  EXPECT_EQ(s.counts_entries, 1024u);
  EXPECT_EQ(s.stacks_entries, 1024u);
  EXPECT_EQ(s.drain_interval, milliseconds(1000));
  EXPECT_EQ(s.target_pids_entries, 1u);
}

TEST(MapSizingTest, GrowsWithCpusAndFrequency) {
  auto s = ComputeCpuSamplerMapSizes(99, 16, milliseconds(1000), 3);
  // 1584 samples -> 3168 -> 4096.
  EXPECT_EQ(s.counts_entries, 4096u);
  EXPECT_EQ(s.stacks_entries, 4096u);
  EXPECT_EQ(s.target_pids_entries, 3u);
}

TEST(MapSizingTest, HugeMachineShortensDrainInsteadOfGrowingMaps) {
  auto s = ComputeCpuSamplerMapSizes(999, 256, milliseconds(1000), 0);
  EXPECT_LE(s.stacks_entries, kMaxStacksEntries);
  EXPECT_LE(s.counts_entries, kMaxCountsEntries);
  EXPECT_EQ(s.drain_interval, kMinDrainInterval);
  // Memory stays bounded by the caps: well under 100 MB.
  EXPECT_LT(s.approx_kernel_bytes, 100ull << 20);

  auto t = ComputeCpuSamplerMapSizes(19, 128, milliseconds(10000), 0);
  // 2432 samples/s: 10 s would need 48640 stacks; the interval shrinks to fit 8192 samples.
  EXPECT_EQ(t.drain_interval, milliseconds(8192 * 1000 / 2432));
  EXPECT_EQ(t.stacks_entries, kMaxStacksEntries);
}

TEST(MapSizingTest, NeverBelowMinimumDrainInterval) {
  auto s = ComputeCpuSamplerMapSizes(19, 1, milliseconds(1), 0);
  EXPECT_EQ(s.drain_interval, kMinDrainInterval);
}

}  // namespace
}  // namespace warpscope
