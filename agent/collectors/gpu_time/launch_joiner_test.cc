#include "agent/collectors/gpu_time/launch_joiner.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace warpscope::gpu {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;

KernelExecution Kernel(uint32_t pid, uint64_t corr, uint64_t kernel, int64_t ns, uint64_t graph = 0) {
  KernelExecution k;
  k.pid = pid;
  k.correlation_id = corr;
  k.kernel_key = kernel;
  k.device = 0;
  k.stream = 7;
  k.graph_id = graph;
  k.start_ns = 1000;
  k.end_ns = 1000 + ns;
  return k;
}

SampledLaunch Launch(uint32_t pid, uint64_t corr, uint64_t stack, uint32_t tid = 11) {
  return SampledLaunch{pid, tid, corr, stack};
}

// stack key -> GPU ns, over samples of one kernel key (all when kernel == 0).
std::map<uint64_t, int64_t> ByStack(const std::vector<GpuTimeSample>& samples, uint64_t kernel = 0) {
  std::map<uint64_t, int64_t> out;
  for (const GpuTimeSample& s : samples) {
    if (kernel == 0 || s.kernel_key == kernel) out[s.stack_key] += s.gpu_ns;
  }
  return out;
}

int64_t Total(const std::vector<GpuTimeSample>& samples) {
  int64_t t = 0;
  for (const GpuTimeSample& s : samples) t += s.gpu_ns;
  return t;
}

TEST(LaunchJoinerTest, SampledLaunchGetsItsKernelsExactly) {
  LaunchJoiner j;
  j.AddLaunch(Launch(1, 100, /*stack=*/5), 0);
  j.AddKernel(Kernel(1, 100, /*kernel=*/9, 250), 0);
  EXPECT_TRUE(j.Drain(1 * kSec).empty()) << "inside the grace period";
  auto out = j.Drain(4 * kSec);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].stack_key, 5u);
  EXPECT_EQ(out[0].tid, 11u);
  EXPECT_EQ(out[0].kernel_key, 9u);
  EXPECT_EQ(out[0].stream, 7u);
  EXPECT_EQ(out[0].gpu_ns, 250);
  EXPECT_EQ(out[0].kernels, 1);
  EXPECT_FALSE(out[0].estimated);
  EXPECT_EQ(j.stats().kernels_sampled, 1u);
}

TEST(LaunchJoinerTest, KernelRecordBeforeItsStackStillJoins) {
  LaunchJoiner j;
  j.AddKernel(Kernel(1, 100, 9, 250), 0);
  j.AddLaunch(Launch(1, 100, 5), 2 * kSec);  // the stack came late, within the grace period
  auto out = j.Drain(4 * kSec);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].stack_key, 5u);
  EXPECT_FALSE(out[0].estimated);
}

TEST(LaunchJoinerTest, UnsampledKernelsAreSpreadOverSameNameStacksByTheirTime) {
  LaunchJoiner j;
  j.AddLaunch(Launch(1, 1, /*stack=*/10), 0);
  j.AddLaunch(Launch(1, 2, /*stack=*/20), 0);
  j.AddKernel(Kernel(1, 1, 9, 300), 0);
  j.AddKernel(Kernel(1, 2, 9, 100), 0);
  // 1,000 unsampled kernels of the same name: 4,001 ns in all.
  for (int i = 0; i < 1000; ++i) j.AddKernel(Kernel(1, 1000 + i, 9, 4), 0);
  j.AddKernel(Kernel(1, 5000, 9, 1), 0);
  auto out = j.Drain(10 * kSec);
  EXPECT_EQ(Total(out), 300 + 100 + 4001) << "no time lost";
  auto by = ByStack(out);
  EXPECT_EQ(by.size(), 2u);
  // 3:1 by measured time.
  EXPECT_NEAR(static_cast<double>(by[10]) / by[20], 3.0, 0.01);
  for (const auto& s : out) EXPECT_TRUE(s.estimated);
  EXPECT_EQ(j.stats().kernels_spread, 1001u);
  EXPECT_EQ(j.stats().kernels_placeholder, 0u);
}

TEST(LaunchJoinerTest, KernelsWithNoSampledLauncherGoToAPlaceholderNeverDropped) {
  LaunchJoiner j;
  j.AddLaunch(Launch(1, 1, 10), 0);
  j.AddKernel(Kernel(1, 1, /*kernel=*/9, 300), 0);
  j.AddKernel(Kernel(1, 2, /*kernel=*/8, 70), 0);   // another name: nobody to spread over
  j.AddKernel(Kernel(2, 1, /*kernel=*/9, 50), 0);   // another process, same correlation id
  auto out = j.Drain(10 * kSec);
  EXPECT_EQ(Total(out), 420);
  int placeholders = 0;
  for (const auto& s : out) {
    if (s.stack_key == 0) {
      ++placeholders;
      EXPECT_TRUE(s.estimated);
      EXPECT_EQ(s.tid, 0u);
    }
  }
  EXPECT_EQ(placeholders, 2);
  EXPECT_EQ(ByStack(out, 9)[10], 300) << "pid 2's kernel is not pid 1's stack";
}

TEST(LaunchJoinerTest, GraphKernelsGoToTheGraphLaunchStackWithTheGraphId) {
  LaunchJoiner j;
  j.AddLaunch(Launch(1, 77, 3), 0);
  for (uint64_t kernel = 1; kernel <= 5; ++kernel) j.AddKernel(Kernel(1, 77, kernel, 10 * kernel, /*graph=*/42), 0);
  auto out = j.Drain(10 * kSec);
  ASSERT_EQ(out.size(), 5u);
  for (const auto& s : out) {
    EXPECT_EQ(s.stack_key, 3u);
    EXPECT_EQ(s.graph_id, 42u);
    EXPECT_FALSE(s.estimated);
  }
  EXPECT_EQ(Total(out), 150);
}

TEST(LaunchJoinerTest, ShuffledArrivalGivesTheSameAnswer) {
  // 3 call sites launching 2 kernels each, one launch in 10 sampled; the
  // records arrive in random order against the stacks, all within grace.
  std::vector<KernelExecution> kernels;
  std::vector<SampledLaunch> launches;
  std::map<uint64_t, int64_t> truth;  // stack -> GPU ns
  uint64_t corr = 1;
  std::mt19937 rng(7);
  for (int i = 0; i < 30000; ++i, ++corr) {
    const uint64_t site = 1 + i % 3;
    const uint64_t kernel = 100 + site * 2 + (i / 3) % 2;
    const int64_t ns = 1000 * static_cast<int64_t>(site) + (rng() % 100);
    kernels.push_back(Kernel(1, corr, kernel, ns));
    truth[site] += ns;
    if (i % 10 < 3) launches.push_back(Launch(1, corr, site));  // every site sampled on both its kernels
  }
  std::shuffle(kernels.begin(), kernels.end(), rng);
  LaunchJoiner j;
  size_t l = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    j.AddKernel(kernels[k], 0);
    if (k % 3 == 0 && l < launches.size()) j.AddLaunch(launches[l++], 0);
  }
  while (l < launches.size()) j.AddLaunch(launches[l++], 0);
  auto by = ByStack(j.Drain(10 * kSec));
  ASSERT_EQ(by.size(), 3u);
  for (const auto& [site, ns] : truth) EXPECT_NEAR(static_cast<double>(by[site]) / ns, 1.0, 0.02) << site;
}

TEST(LaunchJoinerTest, WeightedKernelsAreScaledAndMarked) {
  LaunchJoiner j;
  j.AddLaunch(Launch(1, 1, 10), 0);
  KernelExecution k = Kernel(1, 1, 9, 1000);
  k.weight = 4.0;  // its window recorded a quarter of the time it stands for
  j.AddKernel(k, 0);
  j.AddKernel(Kernel(1, 2, 9, 1000), 0);  // unsampled, weight 1: spread over the same stack
  auto out = j.Drain(10 * kSec);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].gpu_ns, 5000);
  EXPECT_TRUE(out[0].estimated);
  EXPECT_TRUE(out[0].scaled);
  j.AddLaunch(Launch(1, 3, 10), 10 * kSec);
  j.AddKernel(Kernel(1, 3, 9, 1000), 10 * kSec);
  out = j.Drain(20 * kSec);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].gpu_ns, 1000);
  EXPECT_FALSE(out[0].estimated);
  EXPECT_FALSE(out[0].scaled);
}

TEST(LaunchJoinerTest, AWindowsWeightedTimeIsSpreadOverTheSecondsItCovers) {
  LaunchJoiner j;
  j.AddLaunch(Launch(1, 1, 10), 0);
  KernelExecution k = Kernel(1, 1, 9, 1000);
  k.weight = 4.0;
  k.bucket = 10 * kSec;
  k.covers_from = 10 * kSec + kSec / 2;  // 10.5 s .. 12.5 s: half, whole, half
  k.covers_to = 12 * kSec + kSec / 2;
  j.AddKernel(k, 0);
  std::map<int64_t, int64_t> by_bucket;
  int64_t kernels = 0;
  for (const GpuTimeSample& s : j.Drain(10 * kSec)) {
    by_bucket[s.bucket] += s.gpu_ns;
    kernels += s.kernels;
    EXPECT_TRUE(s.scaled);
  }
  EXPECT_EQ(by_bucket, (std::map<int64_t, int64_t>{{10 * kSec, 1000}, {11 * kSec, 2000}, {12 * kSec, 1000}}));
  EXPECT_EQ(kernels, 1);
}

TEST(LaunchJoinerTest, BoundsAreCountedAndOldLaunchesExpire) {
  LaunchJoinerOptions o;
  o.max_pending_kernels = 2;
  o.max_launches = 1;
  o.launch_ttl_ns = 5 * kSec;
  LaunchJoiner j(o);
  j.AddLaunch(Launch(1, 1, 10), 0);
  j.AddLaunch(Launch(1, 2, 20), 0);
  EXPECT_EQ(j.stats().launches_dropped, 1u);
  for (int i = 0; i < 3; ++i) j.AddKernel(Kernel(1, 1, 9, 1), 0);
  EXPECT_EQ(j.stats().kernels_dropped, 1u);
  EXPECT_EQ(j.Drain(10 * kSec).size(), 1u);
  EXPECT_EQ(j.remembered_launches(), 0u) << "older than the TTL";
  j.AddKernel(Kernel(1, 1, 9, 5), 10 * kSec);
  auto out = j.Drain(20 * kSec);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].stack_key, 0u) << "its launch was forgotten: placeholder";
  j.AddKernel(Kernel(1, 1, 9, 5), 20 * kSec);
  EXPECT_EQ(j.Drain(20 * kSec + 1, /*flush_all=*/true).size(), 1u);
  EXPECT_EQ(j.pending_kernels(), 0u);
}

TEST(LaunchJoinerTest, NegativeDurationCountsAsZero) {
  LaunchJoiner j;
  KernelExecution k = Kernel(1, 1, 9, 0);
  k.end_ns = k.start_ns - 5;
  j.AddKernel(k, 0);
  auto out = j.Drain(10 * kSec);
  EXPECT_EQ(Total(out), 0);
  EXPECT_EQ(j.stats().bad_durations, 1u);
}

TEST(LaunchJoinerTest, UnsampledKernelsOfADrainWithoutSamplesUseTheLatestDrainsStacks) {
  LaunchJoiner j;
  j.AddLaunch(Launch(1, 100, /*stack=*/5), 0);
  j.AddKernel(Kernel(1, 100, /*kernel=*/9, 300), 0);
  j.AddKernel(Kernel(1, 101, 9, 100), 0);
  EXPECT_EQ(ByStack(j.Drain(4 * kSec)), (std::map<uint64_t, int64_t>{{5, 400}}));
  // The next drain has only unsampled launches of kernel 9: not the placeholder.
  j.AddKernel(Kernel(1, 102, 9, 70), 5 * kSec);
  EXPECT_EQ(ByStack(j.Drain(9 * kSec)), (std::map<uint64_t, int64_t>{{5, 70}}));
  EXPECT_EQ(j.stats().kernels_placeholder, 0u);
  // Past the launch TTL the old stacks no longer speak for the kernel.
  j.AddKernel(Kernel(1, 103, 9, 30), 100 * kSec);
  EXPECT_EQ(ByStack(j.Drain(104 * kSec)), (std::map<uint64_t, int64_t>{{0, 30}}));
  // A forgotten process takes its stacks with it.
  j.AddLaunch(Launch(2, 1, 6), 110 * kSec);
  j.AddKernel(Kernel(2, 1, 9, 10), 110 * kSec);
  j.Drain(114 * kSec);
  j.ForgetProcess(2);
  j.AddKernel(Kernel(2, 2, 9, 10), 115 * kSec);
  EXPECT_EQ(ByStack(j.Drain(119 * kSec)), (std::map<uint64_t, int64_t>{{0, 10}}));
}

TEST(LaunchJoinerTest, TimeBucketsKeepSamplesApartAndSpreadStaysInTheUnsampledKernelsBucket) {
  LaunchJoiner j;
  KernelExecution a = Kernel(1, 100, 9, 200);
  a.bucket = 10;
  KernelExecution b = Kernel(1, 101, 9, 50);
  b.bucket = 11;
  KernelExecution c = Kernel(1, 102, 9, 20);  // unsampled, in bucket 12
  c.bucket = 12;
  j.AddLaunch(Launch(1, 100, 5), 0);
  j.AddLaunch(Launch(1, 101, 5), 0);
  for (const KernelExecution& k : {a, b, c}) j.AddKernel(k, 0);
  std::map<int64_t, int64_t> by_bucket;
  for (const GpuTimeSample& s : j.Drain(4 * kSec)) {
    EXPECT_EQ(s.stack_key, 5u);
    by_bucket[s.bucket] += s.gpu_ns;
  }
  EXPECT_EQ(by_bucket, (std::map<int64_t, int64_t>{{10, 200}, {11, 50}, {12, 20}}));
}

TEST(LaunchJoinerTest, AReusedCorrelationIdGivesTheLaunchsStackToOneKernelOnly) {
  // Seen on the H200 with CUPTI's callbacks switched on and off (duty mode):
  // several kernel records carried one sampled launch's correlation id.
  LaunchJoiner j;
  j.AddLaunch(Launch(1, 100, /*stack=*/5), 0);
  j.AddLaunch(Launch(1, 200, /*stack=*/6), 0);
  j.AddKernel(Kernel(1, 100, /*kernel=*/9, 100), 0);
  j.AddKernel(Kernel(1, 100, /*kernel=*/8, 40), 0);  // another kernel, same id
  j.AddKernel(Kernel(1, 200, /*kernel=*/8, 60), 0);
  const auto out = j.Drain(4 * kSec);
  EXPECT_EQ(ByStack(out, 9), (std::map<uint64_t, int64_t>{{5, 100}}));
  EXPECT_EQ(ByStack(out, 8), (std::map<uint64_t, int64_t>{{6, 100}})) << "the duplicate spreads over kernel 8's stacks";
  EXPECT_EQ(j.stats().kernels_duplicate_correlation, 1u);
  EXPECT_EQ(j.stats().kernels_sampled, 2u);
  // A graph launch's id covers all of its kernels.
  j.AddLaunch(Launch(1, 300, 7), 5 * kSec);
  for (int i = 0; i < 3; ++i) j.AddKernel(Kernel(1, 300, 10, 10, /*graph=*/42), 5 * kSec);
  EXPECT_EQ(ByStack(j.Drain(9 * kSec), 10), (std::map<uint64_t, int64_t>{{7, 30}}));
  EXPECT_EQ(j.stats().kernels_duplicate_correlation, 1u);
}

}  // namespace
}  // namespace warpscope::gpu
