#include "agent/collectors/gpu_time/wait_joiner.h"

#include <gtest/gtest.h>

#include <map>

namespace warpscope::gpu {
namespace {

constexpr int64_t kUs = 1'000;
constexpr int64_t kSec = 1'000'000'000;
constexpr uint64_t kConn = 1;
constexpr uint32_t kPid = 42;

ws_cuda_wait Wait(uint32_t corr, int64_t start, int64_t end, uint16_t api, bool sampled, uint32_t stream = 0) {
  ws_cuda_wait w{};
  w.start_ns = static_cast<uint64_t>(start);
  w.end_ns = static_cast<uint64_t>(end);
  w.tid = 7;
  w.correlation_id = corr;
  w.attach_epoch = 1;
  w.stream_id = stream;
  w.api = api;
  w.flags = sampled ? WS_CUDA_WAIT_FLAG_SAMPLED : 0;
  return w;
}

uint64_t ProbeKey(uint32_t corr) { return uint64_t{1} << 32 | corr; }

GpuSpan Kernel(int64_t start, int64_t end, uint64_t key, uint32_t stream = 7) {
  return GpuSpan{start, end, stream, 0, GpuChild{key, 0}};
}

// (stack, child kernel key) -> ns.
std::map<std::pair<uint64_t, uint64_t>, int64_t> ByStackAndChild(const std::vector<GpuWaitSample>& samples) {
  std::map<std::pair<uint64_t, uint64_t>, int64_t> out;
  for (const GpuWaitSample& s : samples) out[{s.stack_key, s.child.kernel_key}] += s.wait_ns;
  return out;
}

TEST(WaitJoinerTest, SampledWaitIsSplitByTheKernelsThatRanDuringIt) {
  WaitJoiner j;
  j.AddSpan(kConn, Kernel(100 * kUs, 400 * kUs, 5), 0);    // 300 us before and inside
  j.AddSpan(kConn, Kernel(400 * kUs, 900 * kUs, 6), 0);    // 500 us inside
  j.AddSpan(kConn, Kernel(900 * kUs, 2000 * kUs, 8), 0);   // after the wait
  j.AddSpan(kConn, Kernel(300 * kUs, 800 * kUs, 9, 3), 0); // another stream: not waited on
  j.AddWait(kConn, kPid, Wait(10, 200 * kUs, 1000 * kUs, WS_CUDA_WAIT_STREAM_SYNCHRONIZE, true, 7), 0, 1.0, 0);
  j.AddStack(kPid, 7, ProbeKey(10), 77, 0);
  EXPECT_TRUE(j.Drain(kSec, false).empty()) << "the grace period is not over";
  const auto out = ByStackAndChild(j.Drain(4 * kSec, false));
  EXPECT_EQ(out.at({77, 5}), 200 * kUs);
  EXPECT_EQ(out.at({77, 6}), 500 * kUs);
  EXPECT_EQ(out.at({77, 8}), 100 * kUs);
  EXPECT_EQ(out.count({77, 0}), 0u) << "every nanosecond of the wait was under a kernel";
}

TEST(WaitJoinerTest, UncoveredTimeStaysOnTheCallAndConcurrentStreamsAreScaledToTheWait) {
  WaitJoiner j;
  // Device synchronisation waits on every stream: two kernels of 600 us each
  // overlap a 1000 us wait on two streams (1200 us in all).
  j.AddSpan(kConn, Kernel(0, 600 * kUs, 5, 1), 0);
  j.AddSpan(kConn, Kernel(0, 600 * kUs, 6, 2), 0);
  j.AddWait(kConn, kPid, Wait(10, 0, 1000 * kUs, WS_CUDA_WAIT_DEVICE_SYNCHRONIZE, true), 0, 1.0, 0);
  j.AddStack(kPid, 7, ProbeKey(10), 77, 0);
  // A wait with nothing running under it.
  j.AddWait(kConn, kPid, Wait(11, 5000 * kUs, 5300 * kUs, WS_CUDA_WAIT_DEVICE_SYNCHRONIZE, true), 0, 1.0, 0);
  j.AddStack(kPid, 7, ProbeKey(11), 78, 0);
  const auto out = ByStackAndChild(j.Drain(0, true));
  EXPECT_EQ(out.at({77, 5}), 500 * kUs);
  EXPECT_EQ(out.at({77, 6}), 500 * kUs);
  EXPECT_EQ(out.count({77, 0}), 0u);
  EXPECT_EQ(out.at({78, 0}), 300 * kUs);
  EXPECT_EQ(j.stats().wait_ns, 1300u * kUs);
  EXPECT_EQ(j.stats().overlap_ns, 1000u * kUs);
}

TEST(WaitJoinerTest, UnsampledWaitsAreSpreadOverTheSameCallsSampledStacksKeepingEveryNanosecond) {
  WaitJoiner j;
  // Two sampled stream waits, 1:3, and three unsampled ones of 1001 ns.
  j.AddWait(kConn, kPid, Wait(1, 0, 1000, WS_CUDA_WAIT_STREAM_SYNCHRONIZE, true), 0, 1.0, 0);
  j.AddWait(kConn, kPid, Wait(2, 0, 3000, WS_CUDA_WAIT_STREAM_SYNCHRONIZE, true), 0, 1.0, 0);
  for (uint32_t c = 3; c < 6; ++c) j.AddWait(kConn, kPid, Wait(c, 0, 1001, WS_CUDA_WAIT_STREAM_SYNCHRONIZE, false), 0, 1.0, 0);
  // An unsampled wait of another call with no sampled stack: the placeholder.
  j.AddWait(kConn, kPid, Wait(9, 0, 500, WS_CUDA_WAIT_MEMCPY, false), 0, 1.0, 0);
  j.AddStack(kPid, 7, ProbeKey(1), 100, 0);
  j.AddStack(kPid, 7, ProbeKey(2), 200, 0);
  const std::vector<GpuWaitSample> samples = j.Drain(0, true);
  std::map<uint64_t, int64_t> by_stack;
  int64_t total = 0;
  for (const GpuWaitSample& s : samples) {
    by_stack[s.stack_key] += s.wait_ns;
    total += s.wait_ns;
  }
  EXPECT_EQ(total, 1000 + 3000 + 3 * 1001 + 500);
  EXPECT_EQ(by_stack[100], 1000 + 751);  // 3003 / 4 = 750.75
  EXPECT_EQ(by_stack[200], 3000 + 2252);
  EXPECT_EQ(by_stack[0], 500);
  EXPECT_EQ(j.stats().waits_sampled, 2u);
  EXPECT_EQ(j.stats().waits_spread, 3u);
  EXPECT_EQ(j.stats().waits_placeholder, 1u);

  // A later drain without sampled waits spreads over the last ones seen.
  j.AddWait(kConn, kPid, Wait(20, 0, 4000, WS_CUDA_WAIT_STREAM_SYNCHRONIZE, false), 0, 1.0, kSec);
  by_stack.clear();
  for (const GpuWaitSample& s : j.Drain(kSec, true)) by_stack[s.stack_key] += s.wait_ns;
  EXPECT_EQ(by_stack[100], 1000);
  EXPECT_EQ(by_stack[200], 3000);
}

TEST(WaitJoinerTest, SampledWaitWhoseStackNeverCameIsSpreadAndCounted) {
  WaitJoiner j;
  j.AddWait(kConn, kPid, Wait(1, 0, 1000, WS_CUDA_WAIT_STREAM_SYNCHRONIZE, true), 0, 1.0, 0);
  const std::vector<GpuWaitSample> samples = j.Drain(0, true);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].stack_key, 0u);
  EXPECT_EQ(samples[0].wait_ns, 1000);
  EXPECT_EQ(j.stats().waits_stack_missing, 1u);
  EXPECT_EQ(j.stats().waits_placeholder, 1u);
}

TEST(WaitJoinerTest, WeightedWaitsKeepTheirSplitAndAreMarkedScaled) {
  WaitJoiner j;
  j.AddSpan(kConn, Kernel(0, 250, 5), 0);
  j.AddWait(kConn, kPid, Wait(1, 0, 1000, WS_CUDA_WAIT_STREAM_SYNCHRONIZE, true, 7), 0, 4.0, 0);
  j.AddStack(kPid, 7, ProbeKey(1), 100, 0);
  const auto samples = j.Drain(0, true);
  const auto out = ByStackAndChild(samples);
  EXPECT_EQ(out.at({100, 5}), 1000);
  EXPECT_EQ(out.at({100, 0}), 3000);
  for (const GpuWaitSample& s : samples) EXPECT_TRUE(s.scaled);
}

TEST(WaitJoinerTest, AnEndedConnectionsWaitsAreJudgedAtOnceAndEveryBoundCounts) {
  WaitJoinerOptions o;
  o.max_pending_waits = 1;
  o.max_spans_per_connection = 1;
  o.max_stacks = 1;
  WaitJoiner j(o);
  j.AddSpan(kConn, Kernel(0, 10, 5), 0);
  j.AddSpan(kConn, Kernel(0, 10, 6), 0);
  j.AddWait(kConn, kPid, Wait(1, 0, 100, WS_CUDA_WAIT_STREAM_SYNCHRONIZE, false), 0, 1.0, 0);
  j.AddWait(kConn, kPid, Wait(2, 0, 100, WS_CUDA_WAIT_STREAM_SYNCHRONIZE, false), 0, 1.0, 0);
  j.AddStack(kPid, 7, ProbeKey(1), 100, 0);
  j.AddStack(kPid, 7, ProbeKey(2), 200, 0);
  EXPECT_EQ(j.stats().spans_dropped, 1u);
  EXPECT_EQ(j.stats().waits_dropped, 1u);
  EXPECT_EQ(j.stats().stacks_dropped, 1u);
  EXPECT_TRUE(j.Drain(0, false).empty());
  j.EndConnection(kConn);
  EXPECT_EQ(j.Drain(0, false).size(), 2u);  // kernel 5's 10 ns and the rest
}

}  // namespace
}  // namespace warpscope::gpu
