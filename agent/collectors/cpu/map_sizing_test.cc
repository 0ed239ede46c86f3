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

TEST(MapSizingTest, OffCpuWaitsGetTheirCountsAndShareTheStacks) {
  auto none = ComputeCpuSamplerMapSizes(19, 8, milliseconds(1000), 0);
  EXPECT_EQ(none.off_cpu_counts_entries, 0u) << "no off-CPU map without off-CPU time";
  auto s = ComputeCpuSamplerMapSizes(19, 8, milliseconds(1000), 0, 250);
  // 152 samples and 2000 waits per second: counts 304 -> 1024, off-CPU counts
  // 4000 -> 4096, stacks 2 * 2152 -> 8192.
  EXPECT_EQ(s.counts_entries, 1024u);
  EXPECT_EQ(s.off_cpu_counts_entries, 4096u);
  EXPECT_EQ(s.stacks_entries, 8192u);
  EXPECT_GT(s.approx_kernel_bytes, none.approx_kernel_bytes);
  // Many CPUs: the shared stacks map keeps its cap and the drain shortens.
  auto big = ComputeCpuSamplerMapSizes(19, 128, milliseconds(1000), 0, 250);
  EXPECT_EQ(big.stacks_entries, kMaxStacksEntries);
  EXPECT_LT(big.drain_interval, milliseconds(1000));
  EXPECT_LE(big.off_cpu_counts_entries, kMaxCountsEntries);
}

TEST(MapSizingTest, NeverBelowMinimumDrainInterval) {
  auto s = ComputeCpuSamplerMapSizes(19, 1, milliseconds(1), 0);
  EXPECT_EQ(s.drain_interval, kMinDrainInterval);
}

}  // namespace
}  // namespace warpscope
