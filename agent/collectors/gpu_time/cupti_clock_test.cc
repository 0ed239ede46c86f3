#include "agent/collectors/gpu_time/cupti_clock.h"

#include <gtest/gtest.h>

#include <cmath>

namespace warpscope::gpu {
namespace {

constexpr uint64_t kSec = 1'000'000'000;
// CUPTI on the H200 reads Unix-epoch time: ~1.8e18 ahead of CLOCK_MONOTONIC.
constexpr uint64_t kEpochOffset = 1'795'989'376'569'927'002ull;

// A pair taken at host time `host` with a 90 ns bracket, CUPTI running
// `ppm` faster than the host clock from host time `origin`.
ClockPair PairAt(uint64_t host, double ppm = 0, uint64_t origin = 0) {
  // Integers for the large part: a double cannot hold 1.8e18 to the nanosecond.
  const auto drift = static_cast<int64_t>(std::llround(static_cast<double>(host - origin) * ppm * 1e-6));
  return ClockPair{host - 45, kEpochOffset + host + static_cast<uint64_t>(drift), host + 45};
}

TEST(CuptiClockTest, OffsetFromOnePairWithinItsBracket) {
  CuptiClock c;
  EXPECT_FALSE(c.ToHostMonotonic(kEpochOffset + 5 * kSec).has_value());
  ASSERT_TRUE(c.AddPair(PairAt(100 * kSec)));
  const int64_t host = *c.ToHostMonotonic(kEpochOffset + 100 * kSec + 1234);
  EXPECT_NEAR(static_cast<double>(host), static_cast<double>(100 * kSec + 1234), 50);
  // Before the pair, too.
  EXPECT_NEAR(static_cast<double>(*c.ToHostMonotonic(kEpochOffset + 99 * kSec)), 99.0 * kSec, 50);
}

TEST(CuptiClockTest, DriftIsFittedAndCorrected) {
  CuptiClock c;
  const uint64_t t0 = 1000 * kSec;
  for (uint64_t s = 0; s <= 60; s += 5) ASSERT_TRUE(c.AddPair(PairAt(t0 + s * kSec, 40, t0)));
  EXPECT_NEAR(c.drift_ppm(), 40, 0.5);
  // 30 s after the last pair, uncorrected drift would be 1.2 ms off.
  const uint64_t host = t0 + 90 * kSec;
  const ClockPair truth = PairAt(host, 40, t0);
  EXPECT_NEAR(static_cast<double>(*c.ToHostMonotonic(truth.cupti_ns)), static_cast<double>(host), 1000);
}

TEST(CuptiClockTest, ShortSpansAndAbsurdDriftAreNotTrusted) {
  CuptiClock c;
  ASSERT_TRUE(c.AddPair(PairAt(10 * kSec, 300)));
  ASSERT_TRUE(c.AddPair(PairAt(12 * kSec, 300)));
  EXPECT_EQ(c.drift_ppm(), 0) << "2 s apart: too short to fit";
  CuptiClock wild;
  ASSERT_TRUE(wild.AddPair(PairAt(10 * kSec, 5000)));
  ASSERT_TRUE(wild.AddPair(PairAt(40 * kSec, 5000, 10 * kSec)));
  EXPECT_EQ(wild.drift_ppm(), 0) << "5000 ppm is no clock";
}

TEST(CuptiClockTest, BadAndOutOfOrderPairsAreRefused) {
  CuptiClock c;
  EXPECT_FALSE(c.AddPair(ClockPair{200, kEpochOffset, 100}));
  EXPECT_FALSE(c.AddPair(ClockPair{100, 0, 200}));
  ASSERT_TRUE(c.AddPair(PairAt(50 * kSec)));
  EXPECT_FALSE(c.AddPair(PairAt(40 * kSec)));
  EXPECT_TRUE(c.calibrated());
}

}  // namespace
}  // namespace warpscope::gpu
