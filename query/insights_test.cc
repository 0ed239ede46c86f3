#include "query/insights.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "query/insight_support.h"
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

// A process with GPU utilization and no CPU samples (blocked in the GPU, or
// an agent run with --pid) has no CPU entry: with a thread threshold of 0
// every one of its steps is starved, and the finder must not read CPU
// figures it does not have. (The API refuses 0; the finder stays safe.)
TEST(InsightsTest, AGpuOnlyProcessWithAZeroThreadThresholdIsStarvedWithoutCpuFigures) {
  InsightInputs in = Inputs();
  in.process_sm = {Metric({{"comm", "gpu_only"}, {"gpu", "0"}, {"node", "n"}, {"pid", "40"}}, std::vector<double>(12, 5))};
  in.cpu_threads = {Samples({{"comm", "other"}, {"node", "n"}, {"pid", "41"}, {"thread", "other"}},
                            std::vector<int64_t>(12, 95))};
  EXPECT_TRUE(FindGpuStarvedByCpu(in, {}).empty());  // no busy thread: not starved by the CPU
  InsightOptions zero;
  zero.starved_thread_cores = 0;
  const std::vector<Insight> found = FindGpuStarvedByCpu(in, zero);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(insight_support::LabelOf(found[0].target, "pid"), "40");
  for (const auto& [name, value] : found[0].numbers) {
    if (name == "busiest_thread_cores" || name == "process_cores") EXPECT_EQ(value, 0) << name;
  }
  EXPECT_NEAR(found[0].saving_gpu_seconds, 57, 1e-9);  // 95 % idle for all 60 s
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
  EXPECT_EQ(x.severity, "low") << "the exact saving sets the severity";

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

// 20 minutes of 5 s steps (240).
InsightInputs TwentyMinutes() {
  InsightInputs in = Inputs();
  in.to_ns = kT0 + 1200 * kSec;
  return in;
}

const storage::Labels kTrainGpu = {{"comm", "train"}, {"gpu", "0"}, {"node", "n"}, {"pid", "10"}};
const storage::Labels kTrainThread = {{"comm", "train"}, {"node", "n"}, {"pid", "10"}, {"thread", "train"}};

// The feeding thread busy all along (95 samples of 52.6 ms: one core), a
// helper thread a little.
std::vector<storage::Series> FeedingThreads(size_t steps) {
  return {Samples(kTrainThread, std::vector<int64_t>(steps, 95)),
          Samples({{"comm", "train"}, {"node", "n"}, {"pid", "10"}, {"thread", "pt_autograd"}},
                  std::vector<int64_t>(steps, 10))};
}

// The feeding thread's CPU profile in the starved stretches: tokenize_batch.
std::vector<storage::MergedProfile> FeedingProfile() {
  return {CpuProfile({Stack({Python("<module>", "/t.py", 1), Python("tokenize_batch", "/t.py", 9)}, 80),
                      Stack({Python("<module>", "/t.py", 1), Native("memcpy", "/lib/libc.so.6")}, 20)})};
}

// GPU 1 of the node, busy and held at 1800 of 2000 MHz by its power cap for
// the whole range: 0.95 * 1200 s * 10 % = 114 GPU-s to save.
void PowerCappedNeighbour(InsightInputs* in, size_t steps) {
  in->device_utilization.push_back(Metric({{"gpu", "1"}, {"node", "n"}}, std::vector<double>(steps, 95)));
  in->throttled.push_back(Metric({{"gpu", "1"}, {"node", "n"}, {"reason", "power"}}, std::vector<double>(steps, 0.8)));
  in->sm_clock.push_back(Metric({{"gpu", "1"}, {"node", "n"}}, std::vector<double>(steps, 1800)));
  in->sm_clock_max.push_back(Metric({{"gpu", "1"}, {"node", "n"}}, std::vector<double>(steps, 2000)));
}

TEST(InsightsTest, AGpuStalledPeriodicallyWhileItsFeedingThreadComputesIsStarvedAndRankedFirst) {
  InsightInputs in = TwentyMinutes();
  // GPU 0 at 90 %, but for a 25 s stall every 175 s (5 of every 35 steps)
  // at 20 %: 7 stalls, 175 s, 140 GPU-s idle. That is 15 % of the steps,
  // under min_share: a range-wide share misses it.
  std::vector<double> util(240, 90);
  for (size_t stall = 0; stall < 7; ++stall) {
    for (size_t i = 10 + 35 * stall; i < 15 + 35 * stall; ++i) util[i] = 20;
  }
  in.process_sm = {Metric(kTrainGpu, util)};
  in.cpu_threads = FeedingThreads(240);
  PowerCappedNeighbour(&in, 240);
  std::vector<Insight> found = FindGpuStarvedByCpu(in, {});
  ASSERT_EQ(found.size(), 1u);
  Insight& x = found[0];
  EXPECT_EQ(x.target, kTrainGpu);
  EXPECT_NEAR(x.saving_gpu_seconds, 140, 1e-6);
  EXPECT_NEAR(x.saving_share, 140.0 / 1200, 1e-9);
  EXPECT_EQ(x.severity, "medium");
  // Its ranges are the stalls themselves, not the busy time around them.
  ASSERT_EQ(x.ranges.size(), 7u);
  for (size_t stall = 0; stall < 7; ++stall) {
    EXPECT_EQ(x.ranges[stall].from_ns, kT0 + static_cast<int64_t>(10 + 35 * stall) * 5 * kSec) << stall;
    EXPECT_EQ(x.ranges[stall].to_ns, kT0 + static_cast<int64_t>(15 + 35 * stall) * 5 * kSec) << stall;
  }
  EXPECT_NE(x.summary.find("'train'"), std::string::npos) << x.summary;
  // The evidence names the function that feeds the GPU too slowly.
  AddTopFunctions(FeedingProfile(), 5, &x);
  ASSERT_FALSE(x.functions.empty());
  EXPECT_EQ(x.functions[0].name, "tokenize_batch");
  EXPECT_NE(x.summary.find("tokenize_batch"), std::string::npos) << x.summary;
  // Ranked by saving: first, before the power-capped neighbour's 114 GPU-s.
  std::vector<Insight> all = FindThrottled(in, {});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_NEAR(all[0].saving_gpu_seconds, 114, 1e-6);
  all.push_back(x);
  json answer = json::parse(RenderInsightsJson(all, in, {}));
  ASSERT_EQ(answer["insights"].size(), 2u);
  EXPECT_EQ(answer["insights"][0]["kind"], "gpu_starved_by_cpu");
  EXPECT_EQ(answer["insights"][0]["functions"][0]["name"], "tokenize_batch");
  EXPECT_EQ(answer["insights"][0]["severity"], "medium");

  // Single starved steps now and then (each shorter than min_duration, 3 %
  // of the steps) are noise, not an insight.
  std::vector<double> blips(240, 90);
  for (size_t i = 10; i < 240; i += 35) blips[i] = 20;
  in.process_sm = {Metric(kTrainGpu, blips)};
  EXPECT_TRUE(FindGpuStarvedByCpu(in, {}).empty());
}

TEST(InsightsTest, ASteadilyStarvedGpuIsNamedByItsFunctionAndRankedFirst) {
  InsightInputs in = TwentyMinutes();
  in.process_sm = {Metric(kTrainGpu, std::vector<double>(240, 20))};
  in.cpu_threads = FeedingThreads(240);
  PowerCappedNeighbour(&in, 240);
  std::vector<Insight> found = FindGpuStarvedByCpu(in, {});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NEAR(found[0].saving_gpu_seconds, 960, 1e-6);
  EXPECT_EQ(found[0].severity, "high");
  ASSERT_EQ(found[0].ranges.size(), 1u);
  AddTopFunctions(FeedingProfile(), 5, &found[0]);
  EXPECT_NE(found[0].summary.find("tokenize_batch"), std::string::npos) << found[0].summary;
  std::vector<Insight> all = FindThrottled(in, {});
  all.insert(all.begin(), found[0]);
  json answer = json::parse(RenderInsightsJson(all, in, {}));
  EXPECT_EQ(answer["insights"][0]["kind"], "gpu_starved_by_cpu");
  EXPECT_EQ(answer["insights"][1]["kind"], "throttled");
}

// The process's CUDA timeline on device 0: busy and host-wait seconds per step.
void Timeline(InsightInputs* in, const std::vector<double>& busy, const std::vector<double>& idle) {
  in->busy = {Metric({{"category", "compute"}, {"comm", "train"}, {"device", "0"}, {"node", "n"}, {"pid", "10"}}, busy)};
  in->idle = {Metric({{"comm", "train"}, {"device", "0"}, {"node", "n"}, {"pid", "10"}, {"reason", "host_wait"}}, idle)};
}

TEST(InsightsTest, ABusySynchronisingJobGetsNothingAboveLow) {
  InsightInputs in = Inputs();
  // A matmul loop that synchronises every step: its thread waits 3 s of
  // every 5 s, while the GPU runs the matmuls it waits for, 85 % busy.
  in.wait_threads = {Samples(kTrainThread, std::vector<int64_t>(12, 3 * kSec))};
  Timeline(&in, std::vector<double>(12, 4.25), std::vector<double>(12, 0.75));
  EXPECT_TRUE(FindSyncHeavy(in, {}).empty()) << "its waits cannot have idled the GPU more than 15 % of a step";

  // Busy 70 %: the per-step bound (30 % idle) lets it through, and the
  // waits' profile says how much of the waiting really had no GPU work:
  // 0.27 s of 36 s. That is the saving, and it is low.
  Timeline(&in, std::vector<double>(12, 3.5), std::vector<double>(12, 1.5));
  std::vector<Insight> found = FindSyncHeavy(in, {});
  ASSERT_EQ(found.size(), 1u);
  Insight& x = found[0];
  storage::ResolvedFrame gemm = Native("sm90_gemm", "");
  gemm.kind = warpscope::v1::FRAME_KIND_CUDA_KERNEL;
  AddWaitCallSites({CpuProfile({Stack({Python("step", "/t.py", 4), Native("cudaStreamSynchronize", "/x/libcudart.so.13"), gemm},
                                      36 * kSec - 270'000'000),
                                Stack({Python("step", "/t.py", 4), Native("cudaStreamSynchronize", "/x/libcudart.so.13")},
                                      270'000'000)})},
                   5, 60, &x);
  EXPECT_NEAR(x.saving_gpu_seconds, 0.27, 1e-9);
  EXPECT_EQ(x.severity, "low");
  EXPECT_NE(x.summary.find("no work for 0.3 s of that waiting (1%)"), std::string::npos) << x.summary;
  json answer = json::parse(RenderInsightsJson({x}, in, {}));
  EXPECT_EQ(answer["insights"][0]["severity"], "low");
}

TEST(InsightsTest, SyncHeavyRangesAreWhereTheWaitsLeftTheGpuIdle) {
  InsightInputs in = Inputs();
  // The thread waits 3 s of every step; the GPU is busy under the waits
  // except for steps 4 to 7, where it idles 4 s of 5.
  in.wait_threads = {Samples(kTrainThread, std::vector<int64_t>(12, 3 * kSec))};
  std::vector<double> busy(12, 4.9), idle(12, 0.1);
  for (size_t i = 4; i < 8; ++i) busy[i] = 1, idle[i] = 4;
  Timeline(&in, busy, idle);
  std::vector<Insight> found = FindSyncHeavy(in, {});
  ASSERT_EQ(found.size(), 1u);
  ASSERT_EQ(found[0].ranges.size(), 1u);
  EXPECT_EQ(found[0].ranges[0].from_ns, kT0 + 20 * kSec);
  EXPECT_EQ(found[0].ranges[0].to_ns, kT0 + 40 * kSec);
  // Estimated saving: the smaller of waiting and idle per step, 3 s in the
  // dip and 0.1 s elsewhere.
  EXPECT_NEAR(found[0].saving_gpu_seconds, 4 * 3 + 8 * 0.1, 1e-9);
  EXPECT_EQ(found[0].severity, insight_support::Severity(12.8, 12.8 / 60));
}

TEST(InsightsTest, TheOneSeverityRule) {
  using insight_support::Severity;
  EXPECT_EQ(Severity(0, 1.0), "low") << "nothing to save is never above low";
  EXPECT_EQ(Severity(0.5, 0.5), "low") << "under the absolute floor";
  EXPECT_EQ(Severity(300, 0.25), "high");
  EXPECT_EQ(Severity(299, 0.2499), "medium");
  EXPECT_EQ(Severity(120, 0.10), "medium");
  EXPECT_EQ(Severity(119, 0.0999), "low");
  // The rendered severity is the rule's, whatever a finder left in the field.
  Insight x;
  x.kind = "sync_heavy";
  x.severity = "high";
  x.saving_gpu_seconds = 0;
  x.saving_share = 0;
  EXPECT_EQ(json::parse(RenderInsightsJson({x}, Inputs(), {}))["insights"][0]["severity"], "low");
}

}  // namespace
}  // namespace warpscope::query
