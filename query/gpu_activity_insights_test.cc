#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "query/insight_support.h"
#include "query/insights.h"
#include "query/render_test_frames.h"

namespace warpscope::query {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kFrom = 1'000 * kS;
constexpr int64_t kSteps = 12;  // one minute of 5 s steps

storage::MetricSeries Series(storage::Labels labels, double per_step) {
  storage::MetricSeries s;
  std::sort(labels.begin(), labels.end());
  s.labels = std::move(labels);
  for (int64_t i = 0; i < kSteps; ++i) s.points.push_back({kFrom + i * 5 * kS, per_step, per_step, per_step, 1});
  return s;
}

storage::Labels Proc(std::vector<std::pair<std::string, std::string>> more = {}) {
  storage::Labels l = {{"node", "n1"}, {"pid", "42"}, {"comm", "train"}, {"device", "0"}};
  l.insert(l.end(), more.begin(), more.end());
  return l;
}

InsightInputs Inputs() {
  InsightInputs in;
  in.from_ns = kFrom;
  in.to_ns = kFrom + kSteps * 5 * kS;
  in.step_ns = 5 * kS;
  return in;
}

// A 5 s step of a process on device 0: busy compute/memory, host and kernel wait (seconds).
void Timeline(InsightInputs* in, double compute, double memory, double host_wait, double kernel_wait) {
  in->busy.push_back(Series(Proc({{"category", "compute"}}), compute));
  if (memory > 0) in->busy.push_back(Series(Proc({{"category", "memory"}}), memory));
  in->idle.push_back(Series(Proc({{"reason", "host_wait"}}), host_wait));
  in->idle.push_back(Series(Proc({{"reason", "kernel_wait"}}), kernel_wait));
}

void Launches(InsightInputs* in, double kernels, double short_kernels, double kernel_s, double launch_s) {
  in->kernels.push_back(Series(Proc(), kernels));
  in->kernels_launch_known.push_back(Series(Proc(), kernels));
  in->short_kernels.push_back(Series(Proc(), short_kernels));
  in->kernel_seconds.push_back(Series(Proc(), kernel_s));
  in->launch_call_seconds.push_back(Series(Proc(), launch_s));
}

TEST(LaunchBound, TinyKernelsAndAnIdleGpuAreLaunchBound) {
  InsightInputs in = Inputs();
  // 100,000 kernels of 8 us per 5 s, each launched in 30 us: 0.8 s busy, 4.2 s waiting for launches.
  Timeline(&in, 0.8, 0, 3.5, 0.7);
  Launches(&in, 100'000, 100'000, 0.8, 3.0);
  std::vector<Insight> found = FindLaunchBound(in, InsightOptions{});
  ASSERT_EQ(found.size(), 1u);
  const Insight& x = found[0];
  EXPECT_EQ(x.kind, "launch_bound");
  EXPECT_NEAR(x.saving_gpu_seconds, 12 * 4.2, 1e-9);
  EXPECT_EQ(x.severity, "high");
  EXPECT_EQ(x.evidence_type, "gpu_time");
  EXPECT_EQ(x.evidence_selector, "{node=\"n1\",pid=\"42\"}");
  EXPECT_NE(x.summary.find("20000 kernels/s"), std::string::npos) << x.summary;
  EXPECT_TRUE(FindTransferBound(in, InsightOptions{}).empty());

  // The same process starved by its CPU is explained by the launches.
  Insight starved;
  starved.kind = "gpu_starved_by_cpu";
  starved.target = {{"comm", "train"}, {"gpu", "0"}, {"node", "n1"}, {"pid", "42"}};
  std::vector<Insight> all = {starved, x};
  DropExplainedStarvation(&all);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].kind, "launch_bound");
}

TEST(LaunchBound, BigKernelsWithGapsAreNot) {
  InsightInputs in = Inputs();
  // A data-loader stall: 50 kernels of 20 ms per 5 s, the GPU waiting 4 s for the host.
  Timeline(&in, 1.0, 0, 4.0, 0.001);
  Launches(&in, 50, 0, 1.0, 0.0005);
  EXPECT_TRUE(FindLaunchBound(in, InsightOptions{}).empty());
  // The starvation NVML and the CPU samples found, as the CUDA timeline saw it.
  Insight starved;
  starved.kind = "gpu_starved_by_cpu";
  starved.target = {{"comm", "train"}, {"gpu", "0"}, {"node", "n1"}, {"pid", "42"}};
  starved.ranges = {{kFrom, kFrom + 30 * kS}};
  AddHostWaitEvidence(in, &starved);
  ASSERT_EQ(starved.numbers.size(), 1u);
  EXPECT_NEAR(starved.numbers[0].second, 4.0 / 5.001, 1e-9);
  EXPECT_NE(starved.confidence_reason.find("waited for the host 80%"), std::string::npos) << starved.confidence_reason;
  // A busy GPU: no insight of any kind.
  InsightInputs busy = Inputs();
  Timeline(&busy, 4.95, 0, 0.02, 0.03);
  Launches(&busy, 5000, 100, 4.95, 0.05);
  EXPECT_TRUE(FindLaunchBound(busy, InsightOptions{}).empty());
  EXPECT_TRUE(FindTransferBound(busy, InsightOptions{}).empty());
  EXPECT_TRUE(FindFusionCandidates(busy, InsightOptions{}).empty());
}

TEST(FusionCandidate, TheMostFrequentSequenceOfAProcess) {
  InsightInputs in = Inputs();
  const std::string seq = "add_kernel -> mul_kernel -> relu_kernel";
  in.sequence_count.push_back(Series({{"node", "n1"}, {"pid", "42"}, {"comm", "train"}, {"sequence", seq}}, 5000));
  in.sequence_gpu_seconds.push_back(Series({{"node", "n1"}, {"pid", "42"}, {"comm", "train"}, {"sequence", seq}}, 0.06));
  in.sequence_gap_seconds.push_back(Series({{"node", "n1"}, {"pid", "42"}, {"comm", "train"}, {"sequence", seq}}, 0.25));
  in.sequence_count.push_back(
      Series({{"node", "n1"}, {"pid", "42"}, {"comm", "train"}, {"sequence", "a -> b -> c"}}, 300));
  // Too rare: 10 runs per second is below the 50/s default.
  in.sequence_count.push_back(Series({{"node", "n1"}, {"pid", "7"}, {"comm", "eval"}, {"sequence", seq}}, 50));
  std::vector<Insight> found = FindFusionCandidates(in, InsightOptions{});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].sequence, (std::vector<std::string>{"add_kernel", "mul_kernel", "relu_kernel"}));
  EXPECT_NEAR(found[0].saving_gpu_seconds, 12 * 0.25, 1e-9);
  EXPECT_EQ(found[0].ranges.size(), 1u);
}

TEST(TransferBound, CopiesAloneFromPageableMemory) {
  InsightInputs in = Inputs();
  Timeline(&in, 0.5, 2.5, 2.0, 0);
  in.memcpy_seconds.push_back(Series(Proc({{"copy", "HtoD"}, {"memory", "pageable"}}), 2.6));
  in.memcpy_bytes.push_back(Series(Proc({{"copy", "HtoD"}, {"memory", "pageable"}}), 2.6 * 6e9));
  std::vector<Insight> found = FindTransferBound(in, InsightOptions{});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NEAR(found[0].saving_gpu_seconds, 12 * 2.5, 1e-9);
  EXPECT_NE(found[0].summary.find("HtoD, 6.0 GB/s, 100% from pageable"), std::string::npos) << found[0].summary;
  EXPECT_NE(found[0].fix.find("pin_memory"), std::string::npos);
}

TEST(Throttled, ABusyGpuUnderItsPowerCap) {
  InsightInputs in = Inputs();
  in.device_utilization.push_back(Series({{"node", "n1"}, {"gpu", "0"}}, 95));
  in.throttled.push_back(Series({{"node", "n1"}, {"gpu", "0"}, {"reason", "power"}}, 0.8));
  in.throttled.push_back(Series({{"node", "n1"}, {"gpu", "0"}, {"reason", "thermal"}}, 0));
  in.sm_clock.push_back(Series({{"node", "n1"}, {"gpu", "0"}}, 1500));
  in.sm_clock_max.push_back(Series({{"node", "n1"}, {"gpu", "0"}}, 2000));
  // GPU 1: as busy, never throttled.
  in.device_utilization.push_back(Series({{"node", "n1"}, {"gpu", "1"}}, 95));
  in.throttled.push_back(Series({{"node", "n1"}, {"gpu", "1"}, {"reason", "power"}}, 0));
  std::vector<Insight> found = FindThrottled(in, InsightOptions{});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].target, (storage::Labels{{"gpu", "0"}, {"node", "n1"}}));
  EXPECT_NEAR(found[0].saving_gpu_seconds, 60 * 0.95 * 0.25, 1e-9);
  EXPECT_NE(found[0].summary.find("its power limit"), std::string::npos) << found[0].summary;
}

TEST(MemoryBound, BusyNearItsDramBandwidthWithIdleTensorCores) {
  InsightInputs in = Inputs();
  in.device_utilization.push_back(Series({{"node", "n1"}, {"gpu", "0"}}, 98));
  in.dram_bandwidth.push_back(Series({{"node", "n1"}, {"gpu", "0"}}, 85));
  in.tensor_activity.push_back(Series({{"node", "n1"}, {"gpu", "0"}}, 2));
  // GPU 1 is as busy with its tensor cores: compute-bound, no insight.
  in.device_utilization.push_back(Series({{"node", "n1"}, {"gpu", "1"}}, 98));
  in.dram_bandwidth.push_back(Series({{"node", "n1"}, {"gpu", "1"}}, 70));
  in.tensor_activity.push_back(Series({{"node", "n1"}, {"gpu", "1"}}, 60));
  // GPU 2 has no GPM: nothing to say.
  in.device_utilization.push_back(Series({{"node", "n1"}, {"gpu", "2"}}, 98));
  std::vector<Insight> found = FindMemoryBound(in, InsightOptions{});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].target, (storage::Labels{{"gpu", "0"}, {"node", "n1"}}));
  EXPECT_EQ(found[0].saving_gpu_seconds, 0);
  EXPECT_EQ(found[0].severity, "low") << "no saving estimated: low by the one rule, however long it held";
  EXPECT_NE(found[0].summary.find("85% of its DRAM bandwidth"), std::string::npos) << found[0].summary;
}

TEST(LaunchBound, ADipOfLaunchBoundStepsCountsThoughItIsAFewOfTheSteps) {
  // Two minutes (24 steps): tiny kernels for 10 s, a busy GPU otherwise.
  // 2 of 24 steps is under min_share; the dip lasts min_duration.
  InsightInputs in = Inputs();
  in.to_ns = kFrom + 24 * 5 * kS;
  auto step = [&](std::vector<storage::MetricSeries>* out, storage::Labels l, double dip, double other) {
    storage::MetricSeries s;
    std::sort(l.begin(), l.end());
    s.labels = std::move(l);
    for (int64_t i = 0; i < 24; ++i) {
      const double v = i == 7 || i == 8 ? dip : other;
      s.points.push_back({kFrom + i * 5 * kS, v, v, v, 1});
    }
    out->push_back(std::move(s));
  };
  step(&in.busy, Proc({{"category", "compute"}}), 0.8, 4.95);
  step(&in.idle, Proc({{"reason", "host_wait"}}), 3.5, 0.05);
  step(&in.idle, Proc({{"reason", "kernel_wait"}}), 0.7, 0);
  step(&in.kernels, Proc(), 100'000, 500);
  step(&in.kernels_launch_known, Proc(), 100'000, 500);
  step(&in.short_kernels, Proc(), 100'000, 0);
  step(&in.kernel_seconds, Proc(), 0.8, 4.95);
  step(&in.launch_call_seconds, Proc(), 3.0, 0.01);
  std::vector<Insight> found = FindLaunchBound(in, InsightOptions{});
  ASSERT_EQ(found.size(), 1u);
  ASSERT_EQ(found[0].ranges.size(), 1u);
  EXPECT_EQ(found[0].ranges[0].from_ns, kFrom + 35 * kS);
  EXPECT_EQ(found[0].ranges[0].to_ns, kFrom + 45 * kS);
  EXPECT_NEAR(found[0].saving_gpu_seconds, 2 * 4.2, 1e-9);
  EXPECT_EQ(found[0].severity, "low") << "8.4 GPU-s of 120 s";
}

// Every kind's severity is the one rule of its saving, and its share is the
// saving over the range: a kind whose other figures are large (a long
// memory-bound stretch, a thread waiting most of the time) but whose saving
// is small is low.
TEST(Severity, EveryKindFollowsTheOneRuleOfItsSaving) {
  InsightInputs in = Inputs();
  // launch_bound (50 GPU-s), transfer_bound on device 1 (19 GPU-s), throttled
  // GPU 0 and memory_bound GPU 2 (no saving estimated), fusion_candidate
  // (3 GPU-s), gpu_starved_by_cpu (54 GPU-s) and sync_heavy (its exact
  // saving 0.2 s).
  Timeline(&in, 0.8, 0, 3.5, 0.7);
  Launches(&in, 100'000, 100'000, 0.8, 3.0);
  storage::Labels device1 = {{"node", "n1"}, {"pid", "42"}, {"comm", "train"}, {"device", "1"}};
  auto with = [](storage::Labels l, std::pair<std::string, std::string> more) {
    l.push_back(std::move(more));
    return l;
  };
  in.busy.push_back(Series(with(device1, {"category", "memory"}), 1.6));
  in.busy.push_back(Series(with(device1, {"category", "compute"}), 0.2));
  in.idle.push_back(Series(with(device1, {"reason", "host_wait"}), 3.2));
  in.device_utilization.push_back(Series({{"node", "n1"}, {"gpu", "0"}}, 95));
  in.throttled.push_back(Series({{"node", "n1"}, {"gpu", "0"}, {"reason", "power"}}, 0.8));
  in.sm_clock.push_back(Series({{"node", "n1"}, {"gpu", "0"}}, 1980));
  in.sm_clock_max.push_back(Series({{"node", "n1"}, {"gpu", "0"}}, 2000));
  in.device_utilization.push_back(Series({{"node", "n1"}, {"gpu", "2"}}, 98));
  in.dram_bandwidth.push_back(Series({{"node", "n1"}, {"gpu", "2"}}, 85));
  in.tensor_activity.push_back(Series({{"node", "n1"}, {"gpu", "2"}}, 2));
  const std::string seq = "add_kernel -> mul_kernel -> relu_kernel";
  in.sequence_count.push_back(Series({{"node", "n1"}, {"pid", "42"}, {"comm", "train"}, {"sequence", seq}}, 5000));
  in.sequence_gap_seconds.push_back(Series({{"node", "n1"}, {"pid", "42"}, {"comm", "train"}, {"sequence", seq}}, 0.25));
  in.process_sm.push_back(Series({{"node", "n1"}, {"pid", "7"}, {"comm", "prep"}, {"gpu", "3"}}, 10));
  storage::Series cpu;
  cpu.labels = {{"comm", "prep"}, {"node", "n1"}, {"pid", "7"}, {"thread", "prep"}};
  storage::Series wait;
  wait.labels = {{"comm", "train"}, {"node", "n1"}, {"pid", "42"}, {"thread", "train"}};
  for (int64_t i = 0; i < kSteps; ++i) {
    cpu.points.push_back({kFrom + i * 5 * kS, 5 * kS});
    wait.points.push_back({kFrom + i * 5 * kS, 3 * kS});
  }
  in.cpu_threads = {cpu};
  in.cpu_period_ns = 1;
  in.wait_threads = {wait};

  std::vector<Insight> all;
  for (auto* find : {&FindGpuStarvedByCpu, &FindSyncHeavy, &FindLaunchBound, &FindFusionCandidates,
                     &FindTransferBound, &FindThrottled, &FindMemoryBound}) {
    for (Insight& x : find(in, InsightOptions{})) all.push_back(std::move(x));
  }
  std::map<std::string, Insight*> by_kind;
  for (Insight& x : all) by_kind[x.kind] = &x;
  for (const char* kind : {"gpu_starved_by_cpu", "sync_heavy", "launch_bound", "fusion_candidate", "transfer_bound",
                           "throttled", "memory_bound"}) {
    ASSERT_TRUE(by_kind.count(kind)) << kind;
  }
  // sync_heavy's exact saving, from its waits' profile: 0.2 s of no GPU work.
  AddWaitCallSites({testing::CpuProfile({testing::Stack(
                       {testing::Native("step"), testing::Native("cudaStreamSynchronize", "/x/libcudart.so.13")},
                       200'000'000)})},
                   5, 60, by_kind["sync_heavy"]);

  const double range_s = 60;
  for (const Insight& x : all) {
    EXPECT_NEAR(x.saving_share, x.saving_gpu_seconds / range_s, 1e-12) << x.kind;
    EXPECT_EQ(x.severity, insight_support::Severity(x.saving_gpu_seconds, x.saving_share)) << x.kind;
  }
  EXPECT_EQ(by_kind["launch_bound"]->severity, "high");
  EXPECT_EQ(by_kind["gpu_starved_by_cpu"]->severity, "high");
  EXPECT_EQ(by_kind["sync_heavy"]->severity, "low") << "waiting 60 % of the time, but 0.2 s of it idled the GPU";
  EXPECT_EQ(by_kind["memory_bound"]->severity, "low") << "no saving estimated";
  EXPECT_EQ(by_kind["throttled"]->severity, "low") << "1 % slower clock";
  EXPECT_EQ(by_kind["fusion_candidate"]->severity, "low");
}

}  // namespace
}  // namespace warpscope::query
