#include "query/gpu_ranks.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace warpscope::query {
namespace {

using storage::GpuActivities;
using storage::GpuActivity;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1'764'417'600'000'000'000;

// Four ranks (pids 100..103 on devices 0..3), ten steps of 20 ms: a GEMM,
// then the all-reduce. Rank 2's GEMM takes 6 ms instead of 3, so it joins
// each all-reduce 3 ms after the others, which wait for it in the
// collective: every rank's all-reduce ends at the same time.
GpuActivities TenSteps() {
  GpuActivities g;
  g.names = {"", "gemm", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
  for (int rank = 0; rank < 4; ++rank) {
    g.label_sets.push_back({{"comm", "python3"}, {"node", "n1"}, {"pid", std::to_string(100 + rank)}});
  }
  for (int step = 0; step < 10; ++step) {
    const int64_t t = kT0 + step * 20 * kMs;
    for (uint32_t rank = 0; rank < 4; ++rank) {
      const int64_t gemm = rank == 2 ? 6 * kMs : 3 * kMs;
      GpuActivity a;
      a.labels = rank;
      a.device = rank;
      a.start_ns = t;
      a.duration_ns = gemm;
      a.name = a.system_name = 1;
      g.activities.push_back(a);
      GpuActivity c = a;
      c.start_ns = t + gemm;
      c.duration_ns = 8 * kMs - gemm + 1000 * rank;  // ends at t + 8 ms (+ a few us)
      c.name = c.system_name = 2;
      g.activities.push_back(c);
    }
  }
  return g;
}

TEST(GpuRanks, SlowRankIsTheStragglerOfEveryStep) {
  const RankComparison c = CompareRanks(TenSteps());
  ASSERT_EQ(c.ranks.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(c.ranks[i].rank.pid, std::to_string(100 + i));
    EXPECT_EQ(c.ranks[i].rank.device, i);
    EXPECT_EQ(c.ranks[i].kernels, 20u);
  }
  ASSERT_EQ(c.steps.size(), 10u);
  for (const RankStep& s : c.steps) {
    EXPECT_EQ(s.straggler, 2u);
    EXPECT_EQ(s.wait_ns, 3 * kMs);
    EXPECT_EQ(s.ranks, 4u);
  }
  EXPECT_EQ(c.straggler, 2);
  EXPECT_EQ(c.ranks[2].straggler_steps, 10u);
  EXPECT_EQ(c.ranks[2].caused_wait_ns, 10 * 3 * 3 * kMs) << "three ranks waited 3 ms in each step";
  EXPECT_EQ(c.ranks[0].straggler_steps, 0u);
  // Communication: the slow rank waits least in the collective.
  EXPECT_EQ(c.ranks[2].communication_ns, 10 * (2 * kMs + 2000));
  EXPECT_EQ(c.ranks[0].communication_ns, 10 * 5 * kMs);

  ASSERT_EQ(c.kernels.size(), 2u);
  const RankKernel& gemm = c.kernels[0].system_name == "gemm" ? c.kernels[0] : c.kernels[1];
  ASSERT_EQ(gemm.rows.size(), 4u);
  EXPECT_EQ(gemm.rows[2].mean_ns, 6 * kMs);
  EXPECT_EQ(gemm.rows[2].p50_ns, 6 * kMs);
  EXPECT_EQ(gemm.rows[0].mean_ns, 3 * kMs);
  EXPECT_EQ(gemm.rows[0].launches, 10u);
  EXPECT_DOUBLE_EQ(gemm.spread, 2.0);

  const nlohmann::json j = nlohmann::json::parse(RenderRanksJson(c, kT0, kT0 + 200 * kMs));
  EXPECT_EQ(j["straggler"], 2);
  EXPECT_EQ(j["ranks"][2]["pid"], "102");
  EXPECT_EQ(j["ranks"][2]["straggler_steps"], 10);
  EXPECT_EQ(j["steps"].size(), 10u);
  EXPECT_EQ(j["kernels"][0]["ranks"].size(), 4u);
}

TEST(GpuRanks, WithoutCollectivesThereAreNoSteps) {
  GpuActivities g = TenSteps();
  std::erase_if(g.activities, [](const GpuActivity& a) { return a.system_name == 2; });
  const RankComparison c = CompareRanks(g);
  EXPECT_EQ(c.ranks.size(), 4u);
  EXPECT_TRUE(c.steps.empty());
  EXPECT_EQ(c.straggler, -1);
  EXPECT_EQ(nlohmann::json::parse(RenderRanksJson(c, 0, 1))["straggler"], nullptr);
}

// One rank's collectives never pair with themselves: a rank that runs two
// all-reduces back to back within the tolerance makes two steps of one rank
// each, which are not steps.
TEST(GpuRanks, ARanksOwnCollectivesAreNotAStep) {
  GpuActivities g;
  g.names = {"", "ncclKernel_AllGather"};
  g.label_sets = {{{"pid", "1"}}};
  for (int i = 0; i < 3; ++i) {
    GpuActivity a;
    a.start_ns = kT0 + i * 100'000;
    a.duration_ns = 50'000;
    a.name = a.system_name = 1;
    g.activities.push_back(a);
  }
  EXPECT_TRUE(CompareRanks(g).steps.empty());
}

}  // namespace
}  // namespace warpscope::query
