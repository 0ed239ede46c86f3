#include "cuda/launch_sampler.h"

#include <gtest/gtest.h>

#include "cuda/link_config.h"

namespace warpscope::cuda {
namespace {

constexpr uint64_t kSecond = 1000000000ull;

TEST(LaunchTokenBucket, BurstThenRate) {
  LaunchTokenBucket bucket;
  int taken = 0;
  for (int i = 0; i < 100; ++i) taken += bucket.Take(10 * kSecond, 50, 10, 1);
  EXPECT_EQ(taken, 10);  // the burst, at one instant
  taken = 0;
  // One launch every millisecond for 2 s: 50/s.
  for (uint64_t t = 0; t < 2000; ++t) taken += bucket.Take(10 * kSecond + (t + 1) * 1000000, 50, 10, 1);
  EXPECT_NEAR(taken, 100, 2);
}

TEST(LaunchTokenBucket, NewEpochRefills) {
  LaunchTokenBucket bucket;
  for (int i = 0; i < 10; ++i) bucket.Take(kSecond, 1, 3, 1);
  EXPECT_FALSE(bucket.Take(kSecond, 1, 3, 1));
  EXPECT_TRUE(bucket.Take(kSecond, 1, 3, 2));  // a new connection or config
}

TEST(LaunchTokenBucket, ClockGoingBackwardsGivesNothing) {
  LaunchTokenBucket bucket;
  EXPECT_TRUE(bucket.Take(5 * kSecond, 10, 1, 1));
  EXPECT_FALSE(bucket.Take(4 * kSecond, 10, 1, 1));
  EXPECT_FALSE(bucket.Take(5 * kSecond, 10, 1, 1));
}

TEST(LinkConfig, DefaultsAndClamps) {
  const LinkConfig d = ResolveLinkConfig(ws_cuda_config{});
  EXPECT_EQ(d.mode, static_cast<uint32_t>(WS_CUDA_MODE_OFF));
  EXPECT_EQ(d.samples_per_sec, 200u);
  EXPECT_EQ(d.sample_burst, 200u);
  EXPECT_EQ(d.duty_on_ms, 100u);
  EXPECT_EQ(d.duty_period_ms, 1000u);
  EXPECT_EQ(d.buffer_bytes, 1u << 20);
  EXPECT_EQ(d.buffer_count, 16u);
  EXPECT_FALSE(d.memcpy);

  ws_cuda_config wild{};
  wild.mode = WS_CUDA_MODE_DUTY;
  wild.duty_on_ms = 5000;
  wild.duty_period_ms = 2;
  wild.activity_buffer_bytes = 1;
  wild.activity_buffer_count = 1000;
  wild.flags = WS_CUDA_CONFIG_MEMSET;
  const LinkConfig c = ResolveLinkConfig(wild);
  EXPECT_EQ(c.duty_period_ms, 10u);
  EXPECT_EQ(c.duty_on_ms, 10u);  // never longer than the period
  EXPECT_EQ(c.buffer_bytes, 64u << 10);
  EXPECT_EQ(c.buffer_count, 64u);
  EXPECT_TRUE(c.memset);
  EXPECT_FALSE(c.memcpy);
}

}  // namespace
}  // namespace warpscope::cuda

namespace warpscope::cuda {
namespace {

TEST(ApiNesting, OnlyTheOutermostCallCounts) {
  ApiNesting n;
  constexpr int kRuntime = 1, kDriver = 2;
  EXPECT_TRUE(n.Enter(1, kRuntime));
  EXPECT_FALSE(n.Enter(1, kDriver));  // the runtime call's nested driver call
  EXPECT_FALSE(n.Exit(1));
  EXPECT_TRUE(n.Exit(1));
  EXPECT_FALSE(n.Exit(1)) << "an exit without its entry";
  // A missed exit: the next entry in the outer call's domain starts over.
  EXPECT_TRUE(n.Enter(1, kRuntime));
  EXPECT_TRUE(n.Enter(1, kRuntime));
  EXPECT_TRUE(n.Exit(1));
  // A new epoch forgets an open call; an exit of the old one counts nothing.
  EXPECT_TRUE(n.Enter(1, kDriver));
  EXPECT_FALSE(n.Exit(2));
  EXPECT_TRUE(n.Enter(2, kDriver));
  EXPECT_TRUE(n.Exit(2));
}

}  // namespace
}  // namespace warpscope::cuda
