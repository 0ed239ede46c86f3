#include "agent/collectors/gpu_time/recording_windows.h"

#include <gtest/gtest.h>

namespace warpscope::gpu {
namespace {

constexpr int64_t kMs = 1'000'000;

KernelExecution Kernel(int64_t start_ms, int64_t ns) {
  KernelExecution k;
  k.pid = 7;
  k.start_ns = start_ms * kMs;
  k.end_ns = k.start_ns + ns;
  return k;
}

ws_cuda_window Window(int64_t start_ms, int64_t end_ms, int64_t until_ms) {
  ws_cuda_window w{};
  w.on_start_ns = static_cast<uint64_t>(start_ms * kMs);
  w.on_end_ns = static_cast<uint64_t>(end_ms * kMs);
  w.covers_until_ns = static_cast<uint64_t>(until_ms * kMs);
  return w;
}

int64_t WeightedSum(const std::vector<KernelExecution>& ks) {
  double sum = 0;
  for (const KernelExecution& k : ks) sum += static_cast<double>(k.end_ns - k.start_ns) * k.weight;
  return static_cast<int64_t>(sum + 0.5);
}

TEST(RecordingWindowsTest, KernelsWaitForTheirWindowsPeriodThenCarryItsWeight) {
  RecordingWindows w(100);
  ASSERT_TRUE(w.Add(Kernel(10, 1000)));
  ASSERT_TRUE(w.Add(Kernel(50, 3000)));
  std::vector<KernelExecution> out;
  w.TakeSettled(150 * kMs, false, 0, &out);
  EXPECT_TRUE(out.empty()) << "the window has not closed yet";
  w.Close(Window(0, 100, 1000));  // recorded 100 ms of 1 s
  w.TakeSettled(500 * kMs, false, 0, &out);
  EXPECT_TRUE(out.empty()) << "its period is not over";
  EXPECT_EQ(w.waiting(), 2u);
  w.TakeSettled(1000 * kMs, false, 0, &out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_DOUBLE_EQ(out[0].weight, 10.0);
  EXPECT_EQ(WeightedSum(out), 40000);
  EXPECT_EQ(out[0].covers_from, 0);
  EXPECT_EQ(out[0].covers_to, 1000 * kMs);
  EXPECT_EQ(w.waiting(), 0u);
}

// A GPU-bound process: the window's launches (refilling the queue drained
// while CUPTI attached) run for 400 ms after the 100 ms window; the GPU was
// busy all along, so the estimate must be the whole period, not 4x it.
TEST(RecordingWindowsTest, ABusyGpusWindowIsWeighedByTheSpanItsKernelsRanIn) {
  RecordingWindows w(1000);
  for (int i = 0; i < 400; ++i) w.Add(Kernel(20 + i, kMs));  // back to back from 20 ms to 420 ms
  w.Close(Window(0, 100, 2000));
  std::vector<KernelExecution> out;
  w.TakeSettled(2000 * kMs, false, 0, &out);
  ASSERT_EQ(out.size(), 400u);
  EXPECT_DOUBLE_EQ(out[0].weight, 5.0);  // 2 s over the 400 ms the kernels ran
  EXPECT_EQ(WeightedSum(out), 2000 * kMs);
}

TEST(RecordingWindowsTest, AProcessEndingBetweenWindowsIsCountedUntilItsEnd) {
  RecordingWindows w(100);
  w.Add(Kernel(10, 1000));
  w.Close(Window(0, 100, 1000));
  w.Add(Kernel(1010, 500));  // the next window is open when the process ends
  std::vector<KernelExecution> out;
  w.TakeSettled(400 * kMs, /*ended=*/true, 0, &out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_DOUBLE_EQ(out[0].weight, 4.0);  // 400 ms stood for by 100 ms of recording
  EXPECT_DOUBLE_EQ(out[1].weight, 1.0);  // the open window covered only itself
  EXPECT_EQ(w.waiting(), 0u);
}

TEST(RecordingWindowsTest, ContinuousWindowsWeighOne) {
  RecordingWindows w(100);
  w.Add(Kernel(10, 1000));
  w.Close(Window(0, 200, 200));
  std::vector<KernelExecution> out;
  w.TakeSettled(200 * kMs, false, 0, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_DOUBLE_EQ(out[0].weight, 1.0);
  EXPECT_DOUBLE_EQ(w.estimate().recorded_share, 1.0);
}

TEST(RecordingWindowsTest, BoundIsKeptAndEstimateErrorReflectsWindowSpread) {
  RecordingWindows w(2);
  EXPECT_TRUE(w.Add(Kernel(1, 10)));
  EXPECT_TRUE(w.Add(Kernel(2, 10)));
  EXPECT_FALSE(w.Add(Kernel(3, 10)));
  w.Close(Window(0, 100, 1000));
  std::vector<KernelExecution> out;
  w.TakeSettled(1000 * kMs, false, 0, &out);
  // Steady windows: the same GPU time per recording second each time.
  RecordingWindows steady(100);
  RecordingWindows bursty(100);
  for (int i = 0; i < 10; ++i) {
    const int64_t t = i * 1000;
    steady.Add(Kernel(t + 10, 50 * kMs));
    steady.Close(Window(t, t + 100, t + 1000));
    bursty.Add(Kernel(t + 10, (i % 2 ? 90 : 10) * kMs));
    bursty.Close(Window(t, t + 100, t + 1000));
  }
  steady.TakeSettled(20000 * kMs, false, 0, &out);
  bursty.TakeSettled(20000 * kMs, false, 0, &out);
  EXPECT_EQ(steady.estimate().windows, 10u);
  EXPECT_NEAR(steady.estimate().recorded_share, 0.1, 1e-9);
  EXPECT_NEAR(steady.estimate().relative_error, 0.0, 1e-9);
  EXPECT_GT(bursty.estimate().relative_error, 0.2);
}

}  // namespace
}  // namespace warpscope::gpu
