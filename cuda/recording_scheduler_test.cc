#include "cuda/recording_scheduler.h"

#include <gtest/gtest.h>

namespace warpscope::cuda {
namespace {

constexpr uint64_t kMs = 1'000'000ull;
using Step = RecordingScheduler::Step;

LinkConfig Adaptive() {
  LinkConfig c;
  c.mode = WS_CUDA_MODE_ADAPTIVE;
  c.windowed = true;
  c.duty_on_ms = 200;
  c.duty_period_ms = 10000;
  return c;
}

TEST(RecordingScheduler, OpensClosesDrainsAndPlansTheNextWindow) {
  RecordingScheduler r;
  const uint64_t t0 = 1000 * kMs;
  r.Reset(Adaptive(), t0);
  EXPECT_EQ(r.Due(t0), Step::kOpen);
  r.Opened(t0, 5 * kMs);
  EXPECT_EQ(r.Due(t0 + 199 * kMs), Step::kNone);
  EXPECT_EQ(r.NextDeadline(), t0 + 200 * kMs);
  ASSERT_EQ(r.Due(t0 + 200 * kMs), Step::kClose);
  // 20k launches in 200 ms at 2.5 us each is 50 ms of cost: a 1 % budget
  // asks for a period of at least 5 s.
  const RecordingScheduler::Close c = r.CloseAt(t0 + 200 * kMs, 20000, 3 * kMs);
  EXPECT_FALSE(c.continuous);
  EXPECT_GE(c.period_ns, 5000 * kMs);
  EXPECT_LE(c.period_ns, 10000 * kMs);
  EXPECT_EQ(r.window().covers_until_ns, t0 + c.period_ns);
  EXPECT_EQ(r.Due(t0 + 210 * kMs), Step::kNone) << "draining";
  ASSERT_EQ(r.Due(t0 + 220 * kMs), Step::kFinishDrain);
  r.Drained();
  EXPECT_EQ(r.Due(t0 + 221 * kMs), Step::kNone);
  EXPECT_EQ(r.NextDeadline(), t0 + c.period_ns);
  EXPECT_EQ(r.Due(t0 + c.period_ns), Step::kOpen);
}

TEST(RecordingScheduler, AProcessThatLaunchesLittleIsRecordedContinuously) {
  RecordingScheduler r;
  r.Reset(Adaptive(), 0);
  r.Opened(0, 0);
  const RecordingScheduler::Close c = r.CloseAt(200 * kMs, 10, 0);
  EXPECT_TRUE(c.continuous);
  EXPECT_TRUE(r.window().open);
  EXPECT_EQ(r.window().start_ns, 200 * kMs) << "the next window starts where this one ended";
  EXPECT_EQ(r.Due(399 * kMs), Step::kNone);
  EXPECT_EQ(r.Due(400 * kMs), Step::kClose);
}

TEST(RecordingScheduler, AStepAsideEndsTheWindowAndNothingOpensUntilResume) {
  RecordingScheduler r;
  r.Reset(Adaptive(), 0);
  r.Opened(0, 0);
  r.Interrupted();
  EXPECT_TRUE(r.interrupted());
  EXPECT_FALSE(r.window().open);
  for (uint64_t t = 50; t < 60000; t += 1000) EXPECT_EQ(r.Due(t * kMs), Step::kNone);
  EXPECT_EQ(r.NextDeadline(), UINT64_MAX);
  r.Resume(60000 * kMs);
  EXPECT_EQ(r.Due(60000 * kMs), Step::kOpen);
}

TEST(RecordingScheduler, ATakenCuptiIsTriedAgainLater) {
  RecordingScheduler r;
  r.Reset(Adaptive(), 0);
  r.RetryOpenAt(10000 * kMs);
  EXPECT_EQ(r.Due(9999 * kMs), Step::kNone);
  EXPECT_EQ(r.Due(10000 * kMs), Step::kOpen);
}

TEST(RecordingScheduler, DutyPhases) {
  RecordingScheduler r;
  LinkConfig c;
  c.mode = WS_CUDA_MODE_DUTY;
  c.duty_on_ms = 100;
  c.duty_period_ms = 1000;
  r.Reset(c, 0);
  EXPECT_EQ(r.Due(0), Step::kNone) << "duty mode without leaving has no windows";
  RecordingScheduler::DutyPhase p = r.Duty(50 * kMs);
  EXPECT_TRUE(p.on);
  EXPECT_EQ(p.next_change_ns, 100 * kMs);
  p = r.Duty(100 * kMs);
  EXPECT_FALSE(p.on);
  EXPECT_EQ(p.next_change_ns, 1000 * kMs);
  p = r.Duty(2050 * kMs);
  EXPECT_TRUE(p.on);
  EXPECT_EQ(p.next_change_ns, 2100 * kMs);
}

}  // namespace
}  // namespace warpscope::cuda
