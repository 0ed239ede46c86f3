#include "query/insights.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "query/render_test_frames.h"

namespace warpscope::query {
namespace {

using nlohmann::json;
using testing::CpuProfile;
using testing::Native;
using testing::Python;
using testing::Stack;

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSec;

storage::MetricSeries Metric(storage::Labels labels, const std::vector<double>& per_step, int64_t step = 5 * kSec) {
  storage::MetricSeries s;
  s.labels = std::move(labels);
  for (size_t i = 0; i < per_step.size(); ++i) {
    if (per_step[i] < 0) continue;  // no reading
    s.points.push_back({kT0 + static_cast<int64_t>(i) * step, per_step[i], per_step[i], per_step[i], 1});
  }
  return s;
}

storage::Series Samples(storage::Labels labels, const std::vector<int64_t>& per_step, int64_t step = 5 * kSec) {
  storage::Series s;
  s.labels = std::move(labels);
  for (size_t i = 0; i < per_step.size(); ++i) {
    if (per_step[i] != 0) s.points.push_back({kT0 + static_cast<int64_t>(i) * step, per_step[i]});
  }
  return s;
}

// 12 steps of 5 s; 19 Hz sampling (period 52.6 ms): 95 samples = 1 core.
InsightInputs Inputs() {
  InsightInputs in;
  in.from_ns = kT0;
  in.to_ns = kT0 + 60 * kSec;
  in.step_ns = 5 * kSec;
  in.cpu_period_ns = 52'631'578;
  return in;
}

TEST(InsightsTest, AGpuUnderusedWhileItsProcessIsBusyOnTheCpuIsStarved) {
  InsightInputs in = Inputs();
  // pid 10: GPU at 10 % for the first 8 steps while its main thread is busy,
  // then balanced. pid 20: idle GPU, idle CPU (nothing to say). pid 30: busy
  // GPU and busy CPU (balanced).
  in.process_sm = {Metric({{"comm", "train"}, {"gpu", "0"}, {"node", "n"}, {"pid", "10"}},
                          {10, 10, 10, 10, 10, 10, 10, 10, 90, 90, 90, 90}),
                   Metric({{"comm", "idle"}, {"gpu", "1"}, {"node", "n"}, {"pid", "20"}}, std::vector<double>(12, 0)),
                   Metric({{"comm", "busy"}, {"gpu", "2"}, {"node", "n"}, {"pid", "30"}}, std::vector<double>(12, 95))};
  in.cpu_threads = {
      Samples({{"comm", "train"}, {"node", "n"}, {"pid", "10"}, {"thread", "train"}}, std::vector<int64_t>(12, 95)),
      Samples({{"comm", "train"}, {"node", "n"}, {"pid", "10"}, {"thread", "pt_autograd"}}, std::vector<int64_t>(12, 10)),
      Samples({{"comm", "busy"}, {"node", "n"}, {"pid", "30"}, {"thread", "busy"}}, std::vector<int64_t>(12, 95))};
  std::vector<Insight> found = FindGpuStarvedByCpu(in, {});
  ASSERT_EQ(found.size(), 1u);
  const Insight& x = found[0];
  EXPECT_EQ(x.kind, "gpu_starved_by_cpu");
  EXPECT_EQ(x.target, (storage::Labels{{"comm", "train"}, {"gpu", "0"}, {"node", "n"}, {"pid", "10"}}));
  ASSERT_EQ(x.ranges.size(), 1u);
  EXPECT_EQ(x.ranges[0].from_ns, kT0);
  EXPECT_EQ(x.ranges[0].to_ns, kT0 + 40 * kSec);
  EXPECT_NEAR(x.saving_gpu_seconds, 36, 1e-9);  // 90 % idle for 40 s
  EXPECT_NEAR(x.saving_share, 0.6, 1e-9);
  EXPECT_EQ(x.severity, "high");
  EXPECT_EQ(x.confidence, "medium");  // 8 steps
  EXPECT_EQ(x.evidence_type, "cpu");
  EXPECT_EQ(x.evidence_selector, "{node=\"n\",pid=\"10\"}");
  EXPECT_NE(x.summary.find("'train'"), std::string::npos) << x.summary;
  EXPECT_NE(x.summary.find("at 10%"), std::string::npos) << x.summary;

  // Too short: a starved minute needs min_duration.
  InsightOptions strict;
  strict.min_duration_ns = 41 * kSec;
  EXPECT_TRUE(FindGpuStarvedByCpu(in, strict).empty());
  // Without the process's own SM samples, the GPU's utilization stands in
  // while the process holds memory on it.
  in.device_utilization = {Metric({{"gpu", "0"}, {"node", "n"}}, std::vector<double>(12, 5))};
  in.process_memory = {Metric({{"comm", "train"}, {"gpu", "0"}, {"node", "n"}, {"pid", "10"}}, std::vector<double>(12, 1e9))};
  in.process_sm.erase(in.process_sm.begin());
  found = FindGpuStarvedByCpu(in, {});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NEAR(found[0].saving_gpu_seconds, 57, 1e-9);  // 95 % idle for all 60 s
  EXPECT_NE(found[0].confidence_reason.find("0 of them had the process's own"), std::string::npos);
}

TEST(InsightsTest, TopFunctionsOfTheEvidenceAcrossItsRanges) {
  Insight x;
  AddTopFunctions({CpuProfile({Stack({Python("<module>", "/t.py", 1), Python("tokenize", "/t.py", 9)}, 30),
                               Stack({Python("<module>", "/t.py", 1), Native("memcpy", "/lib/libc.so.6")}, 10)}),
                   CpuProfile({Stack({Python("<module>", "/t.py", 1), Python("tokenize", "/t.py", 9)}, 20)})},
                  5, &x);
  ASSERT_EQ(x.functions.size(), 2u);
  EXPECT_EQ(x.functions[0].name, "tokenize");
  EXPECT_EQ(x.functions[0].value, 50);
  EXPECT_NEAR(x.functions[0].share, 50.0 / 60, 1e-9);
  EXPECT_EQ(x.functions[1].name, "memcpy");
}

TEST(InsightsTest, AThreadBlockedInCudaSynchronisationIsSyncHeavyWithItsCallSites) {
  InsightInputs in = Inputs();
  // 3 s of every 5 s step waiting (60 %); another thread 0.5 s in all.
  in.wait_threads = {
      Samples({{"comm", "train"}, {"node", "n"}, {"pid", "10"}, {"thread", "train"}}, std::vector<int64_t>(12, 3 * kSec)),
      Samples({{"comm", "train"}, {"node", "n"}, {"pid", "10"}, {"thread", "loader"}}, {kSec / 2})};
  std::vector<Insight> found = FindSyncHeavy(in, {});
  ASSERT_EQ(found.size(), 1u);
  Insight& x = found[0];
  EXPECT_EQ(x.kind, "sync_heavy");
  EXPECT_EQ(x.target, (storage::Labels{{"comm", "train"}, {"node", "n"}, {"pid", "10"}, {"thread", "train"}}));
  EXPECT_EQ(x.severity, "high");
  EXPECT_EQ(x.confidence, "high");
  EXPECT_EQ(x.evidence_type, "gpu_wait");
  // The evidence: waits under read_loss (Python) and a native site, part of
  // them under a kernel.
  storage::ResolvedFrame gemm = Native("sm90_gemm", "");
  gemm.kind = warpscope::v1::FRAME_KIND_CUDA_KERNEL;
  AddWaitCallSites({CpuProfile({Stack({Python("read_loss", "/t.py", 4), Native("cudaStreamSynchronize", "/x/libcudart.so.13"), gemm}, 20),
                                Stack({Python("read_loss", "/t.py", 4), Native("cudaStreamSynchronize", "/x/libcudart.so.13")}, 10),
                                Stack({Native("main"), Native("flush"), Native("cuCtxSynchronize", "/x/libcuda.so.1")}, 5)})},
                   5, 60, &x);
  ASSERT_EQ(x.functions.size(), 2u);
  EXPECT_EQ(x.functions[0].name, "read_loss");
  EXPECT_EQ(x.functions[0].value, 30);
  EXPECT_EQ(x.functions[1].name, "flush") << "the application's frame that made the call";
  ASSERT_EQ(x.waited_for.size(), 1u);
  EXPECT_EQ(x.waited_for[0].name, "sm90_gemm");
  EXPECT_NEAR(x.saving_gpu_seconds, 15e-9, 1e-18) << "the waiting with no kernel under it";
  EXPECT_NEAR(x.saving_share, 15e-9 / 60, 1e-20);

  json answer = json::parse(RenderInsightsJson({x}, in, {}));
  EXPECT_EQ(answer["insights"][0]["kind"], "sync_heavy");
  EXPECT_EQ(answer["insights"][0]["waited_for"][0]["name"], "sm90_gemm");
  EXPECT_EQ(answer["insights"][0]["links"][0]["type"], "gpu_wait");
  EXPECT_EQ(answer["insights"][0]["sparkline"].size(), 12u);
  EXPECT_EQ(answer["step_ms"], 5000);
}

TEST(InsightsTest, ABalancedRangeHasNoInsight) {
  InsightInputs in = Inputs();
  in.process_sm = {Metric({{"comm", "train"}, {"gpu", "0"}, {"node", "n"}, {"pid", "10"}}, std::vector<double>(12, 85))};
  in.cpu_threads = {
      Samples({{"comm", "train"}, {"node", "n"}, {"pid", "10"}, {"thread", "train"}}, std::vector<int64_t>(12, 80))};
  in.wait_threads = {
      Samples({{"comm", "train"}, {"node", "n"}, {"pid", "10"}, {"thread", "train"}}, std::vector<int64_t>(12, kSec / 10))};
  EXPECT_TRUE(FindGpuStarvedByCpu(in, {}).empty());
  EXPECT_TRUE(FindSyncHeavy(in, {}).empty());
  EXPECT_EQ(json::parse(RenderInsightsJson({}, in, {}))["insights"].size(), 0u);
}

}  // namespace
}  // namespace warpscope::query
