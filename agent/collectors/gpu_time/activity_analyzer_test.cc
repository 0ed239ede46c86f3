#include "agent/collectors/gpu_time/activity_analyzer.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace warpscope::gpu {
namespace {

constexpr int64_t kUs = 1'000;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

std::shared_ptr<const InternedKernelName> Name(uint64_t key, const std::string& name) {
  auto n = std::make_shared<InternedKernelName>();
  n->key = key;
  n->text.name = name;
  n->text.system_name = name;
  return n;
}

AnalyzedActivity Kernel(int64_t start, int64_t end, int64_t launch, int64_t launch_duration = 5 * kUs,
                        std::shared_ptr<const InternedKernelName> name = Name(1, "void gemm(int)"), uint32_t tid = 7) {
  AnalyzedActivity a;
  a.start_ns = start;
  a.end_ns = end;
  a.kernel = std::move(name);
  a.category = KernelCategory(a.kernel->text.system_name);
  a.launch_ns = launch;
  a.launch_duration_ns = launch_duration;
  a.launch_tid = tid;
  return a;
}

struct Totals {
  std::map<std::string, double> busy, idle;
  double Busy() const {
    double s = 0;
    for (const auto& [k, v] : busy) s += v;
    return s;
  }
  double Idle() const {
    double s = 0;
    for (const auto& [k, v] : idle) s += v;
    return s;
  }
};

Totals Classify(const std::vector<AnalyzedActivity>& acts, int64_t from, int64_t trailing) {
  Totals t;
  ClassifyTimeline(acts, from, trailing, 50 * kUs, [&](const TimelinePiece& p) {
    const double d = static_cast<double>(p.to_ns - p.from_ns);
    if (p.busy) {
      t.busy[std::to_string(static_cast<int>(p.category))] += d;
    } else {
      t.idle[std::to_string(static_cast<int>(p.reason))] += d;
    }
  });
  return t;
}

TEST(ClassifyTimeline, GapsAreHostWaitUntilTheLaunchThenLaunchOverhead) {
  // Idle from 0: the launch at 1 ms, the kernel 10 us later, 2 ms long; the
  // next launched 1 ms after it ended and started 20 us after that; 3 ms
  // idle to the end.
  std::vector<AnalyzedActivity> acts = {Kernel(1 * kMs + 10 * kUs, 3 * kMs + 10 * kUs, 1 * kMs),
                                        Kernel(4 * kMs + 30 * kUs, 5 * kMs, 4 * kMs + 10 * kUs)};
  Totals t = Classify(acts, 0, 8 * kMs);
  EXPECT_DOUBLE_EQ(t.busy["0"], 2 * kMs + 970 * kUs);
  EXPECT_DOUBLE_EQ(t.idle["0"], 1 * kMs + 1 * kMs + 3 * kMs);  // host wait
  EXPECT_DOUBLE_EQ(t.idle["1"], 30 * kUs);                      // kernel wait (10 + 20 us)
  EXPECT_EQ(t.idle.count("2"), 0u);
  EXPECT_DOUBLE_EQ(t.Busy() + t.Idle(), 8 * kMs);
}

TEST(ClassifyTimeline, QueuedWorkThatStartsLateIsOtherAndOverlapsCountOnce) {
  auto nccl = Name(2, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)");
  AnalyzedActivity copy;
  copy.start_ns = 9 * kMs;
  copy.end_ns = 12 * kMs;
  copy.memcpy = true;
  copy.category = GpuWorkCategory::kMemory;
  std::vector<AnalyzedActivity> acts = {
      Kernel(0, 4 * kMs, 0),
      Kernel(2 * kMs, 6 * kMs, 0, 5 * kUs, nccl),  // overlaps the compute kernel: communication only after it
      Kernel(8 * kMs, 10 * kMs, 1 * kMs),          // queued at 1 ms, started 2 ms after the GPU went idle
      copy,                                         // memory only after the kernel
  };
  Totals t = Classify(acts, 0, 0);
  EXPECT_DOUBLE_EQ(t.busy["0"], 4 * kMs + 2 * kMs);
  EXPECT_DOUBLE_EQ(t.busy["1"], 2 * kMs);
  EXPECT_DOUBLE_EQ(t.busy["2"], 2 * kMs);
  EXPECT_DOUBLE_EQ(t.idle["2"], 2 * kMs);
  EXPECT_DOUBLE_EQ(t.Busy() + t.Idle(), 12 * kMs);
}

TEST(KernelCategory, NcclIsCommunication) {
  EXPECT_EQ(KernelCategory("ncclKernel_AllGather_RING_LL_Sum_int8_t"), GpuWorkCategory::kCommunication);
  EXPECT_EQ(KernelCategory("_Z20ncclDevKernel_GenericP11ncclDevComm"), GpuWorkCategory::kCommunication);
  EXPECT_EQ(KernelCategory("ampere_sgemm_128x64_nn"), GpuWorkCategory::kCompute);
  EXPECT_EQ(CopyMemoryOf(1, 3), CopyMemory::kPageable);
  EXPECT_EQ(CopyMemoryOf(3, 2), CopyMemory::kPinned);
  EXPECT_EQ(CopyMemoryOf(3, 3), CopyMemory::kDevice);
}

// Sums of each metric (by its distinguishing label) over the readings.
std::map<std::string, double> Sum(const std::vector<MetricReading>& readings) {
  std::map<std::string, double> out;
  for (const MetricReading& r : readings) {
    std::string key = r.metric;
    for (const char* label : {"category", "reason", "copy", "memory", "sequence"}) {
      if (const std::string* v = FindLabel(r, label)) key += "/" + *v;
    }
    out[key] += r.value;
    EXPECT_EQ(r.time_unix_nanos % kS, 0) << r.metric;
  }
  return out;
}

TEST(GpuActivityAnalyzer, ExactModeIsClassifiedUpToTheGraceAndPlacedInItsSeconds) {
  ActivityAnalysisOptions o;
  o.grace_ns = 1 * kS;
  GpuActivityAnalyzer an(o);
  const int64_t t0 = 100 * kS;
  an.Begin(1, 42, /*windowed=*/false, t0);
  // A 10 ms period: the CPU works 8 ms, then launches a 2 ms kernel (starts 10 us later).
  for (int i = 0; i < 300; ++i) {
    const int64_t launch = t0 + i * 10 * kMs + 8 * kMs;
    an.Add(1, Kernel(launch + 10 * kUs, launch + 10 * kUs + 1990 * kUs, launch));
  }
  AnalyzedActivity copy;
  copy.start_ns = t0 + 5 * kMs;
  copy.end_ns = t0 + 5 * kMs + 100 * kUs;
  copy.memcpy = true;
  copy.category = GpuWorkCategory::kMemory;
  copy.copy_kind = 1;
  copy.memory = CopyMemory::kPageable;
  copy.bytes = 1 << 20;
  an.Add(1, copy);
  std::vector<MetricReading> out;
  // 2 s after the start: classified up to 1 s, readings of the seconds before it.
  an.Finish(t0 + 2 * kS, 0, false, [](uint32_t) { return "trainer"; }, &out);
  std::map<std::string, double> s = Sum(out);
  EXPECT_NEAR(s["cuda_gpu_busy_seconds/compute"], 0.199, 1e-9);  // 100 kernels of 1.99 ms
  EXPECT_NEAR(s["cuda_gpu_busy_seconds/memory"], 0.0001, 1e-12);
  EXPECT_NEAR(s["cuda_gpu_busy_seconds/compute"] + s["cuda_gpu_busy_seconds/memory"] +
                  s["cuda_gpu_idle_seconds/host_wait"] + s["cuda_gpu_idle_seconds/kernel_wait"] +
                  s["cuda_gpu_idle_seconds/other"],
              1.0, 1e-9);
  EXPECT_NEAR(s["cuda_gpu_idle_seconds/kernel_wait"], 100 * 10e-6, 1e-9);
  EXPECT_NEAR(s["cuda_kernels"], 100, 1e-9);
  EXPECT_NEAR(s["cuda_launch_delay_seconds"], 100 * 10e-6, 1e-9);
  EXPECT_NEAR(s["cuda_memcpy_bytes/HtoD/pageable"], 1 << 20, 1e-9);
  // Before the copy nothing says when it was asked for: host wait.
  EXPECT_EQ(s["cuda_gpu_idle_seconds/other"], 0);
  EXPECT_NEAR(s["cuda_gpu_idle_seconds/host_wait"], 0.0079 + 99 * 0.008, 1e-9);  // less the copy
  for (const MetricReading& r : out) {
    ASSERT_NE(FindLabel(r, "pid"), nullptr);
    EXPECT_EQ(*FindLabel(r, "pid"), "42");
    EXPECT_EQ(*FindLabel(r, "comm"), "trainer");
    EXPECT_LT(r.time_unix_nanos, t0 + 1 * kS);
  }
  // The rest when the process ends: up to its last kernel's end, no idle after it.
  an.End(1);
  out.clear();
  an.Finish(t0 + 2 * kS, 0, false, [](uint32_t) { return "trainer"; }, &out);
  s = Sum(out);
  const double last_end = (299 * 10 + 8 + 2) * 1e-3;
  EXPECT_NEAR(s["cuda_gpu_busy_seconds/compute"] + s["cuda_gpu_idle_seconds/host_wait"] +
                  s["cuda_gpu_idle_seconds/kernel_wait"],
              last_end - 1.0, 1e-9);
  EXPECT_NEAR(s["cuda_kernels"], 200, 1e-9);
  EXPECT_EQ(an.stats().late, 0u);
}

TEST(GpuActivityAnalyzer, WindowsStandForTheirPeriod) {
  GpuActivityAnalyzer an(ActivityAnalysisOptions{});
  const int64_t t0 = 50 * kS;
  an.Begin(3, 9, /*windowed=*/true, t0);
  // A 200 ms window standing for 1 s: 100 ms busy, 100 ms host wait.
  an.Add(3, Kernel(t0 + 50 * kMs, t0 + 150 * kMs, t0 + 50 * kMs));
  an.CloseWindow(3, t0, t0 + 200 * kMs, t0 + 1 * kS);
  std::vector<MetricReading> out;
  an.Finish(t0 + 1 * kS + 1, 0, false, [](uint32_t) { return "p"; }, &out);
  std::map<std::string, double> s = Sum(out);
  EXPECT_NEAR(s["cuda_gpu_busy_seconds/compute"], 0.5, 1e-9);
  EXPECT_NEAR(s["cuda_gpu_idle_seconds/host_wait"], 0.5, 1e-9);
  EXPECT_NEAR(s["cuda_kernels"], 5, 1e-9);
}

TEST(GpuActivityAnalyzer, FrequentRunsOfSmallKernelsAreSequencesReportedOnce) {
  GpuActivityAnalyzer an(ActivityAnalysisOptions{});
  const int64_t t0 = 10 * kS;
  an.Begin(1, 5, false, t0);
  auto add = Name(11, "void at::native::vectorized_elementwise_kernel<4, add>(int, add)");
  auto mul = Name(12, "void at::native::vectorized_elementwise_kernel<4, mul>(int, mul)");
  auto relu = Name(13, "void relu_kernel(float*)");
  auto big = Name(14, "void gemm(int)");
  int64_t t = t0;
  for (int i = 0; i < 100; ++i) {
    for (const auto& k : {add, mul, relu}) {
      an.Add(1, Kernel(t + 20 * kUs, t + 24 * kUs, t, 8 * kUs, k));
      t += 30 * kUs;
    }
    if (i % 10 == 9) {  // a big kernel now and then breaks the run
      an.Add(1, Kernel(t + 20 * kUs, t + 2 * kMs, t, 8 * kUs, big));
      t += 3 * kMs;
    }
  }
  std::vector<MetricReading> out;
  an.End(1);
  an.Finish(t + 5 * kS, 0, false, [](uint32_t) { return "p"; }, &out);
  std::map<std::string, double> s = Sum(out);
  const std::string seq =
      "at::native::vectorized_elementwise_kernel<4, add> -> at::native::vectorized_elementwise_kernel<4, mul> -> "
      "relu_kernel";
  // Each group of 10 iterations: 30 small kernels, ten runs of three (runs do
  // not overlap), all add -> mul -> relu.
  EXPECT_NEAR(s["cuda_kernel_sequence_count/" + seq], 100, 1e-9);
  EXPECT_NEAR(s["cuda_kernel_sequence_gpu_seconds/" + seq], 100 * 12e-6, 1e-12);
  EXPECT_NEAR(s["cuda_kernel_sequence_gap_seconds/" + seq], 100 * 52e-6, 1e-12);
  int sequences = 0;
  for (const auto& [k, v] : s) sequences += k.rfind("cuda_kernel_sequence_count/", 0) == 0;
  EXPECT_EQ(sequences, 1);
  EXPECT_NEAR(s["cuda_short_kernels"], 300, 1e-9);  // 4 us kernels, 8 us launch calls
  EXPECT_NEAR(s["cuda_kernels"], 310, 1e-9);
}

TEST(GpuActivityAnalyzer, KernelsOfACudaGraphAreNoSequence) {
  GpuActivityAnalyzer an(ActivityAnalysisOptions{});
  const int64_t t0 = 10 * kS;
  an.Begin(1, 5, false, t0);
  auto add = Name(11, "void add_kernel(float*)");
  auto mul = Name(12, "void mul_kernel(float*)");
  auto relu = Name(13, "void relu_kernel(float*)");
  // 100 replays of a graph of three 4 us kernels: every kernel carries the
  // graph's one launch call (its time and thread), so they look launched
  // back to back by one thread, but the replay already is one launch.
  int64_t t = t0;
  for (int i = 0; i < 100; ++i) {
    int64_t start = t + 20 * kUs;
    for (const auto& k : {add, mul, relu}) {
      AnalyzedActivity a = Kernel(start, start + 4 * kUs, t, 8 * kUs, k);
      a.graph_id = 77;
      an.Add(1, a);
      start += 6 * kUs;
    }
    t += 100 * kUs;
  }
  // Two small kernels launched one by one, then a graph kernel: the graph
  // breaks the run, so these two make no sequence with it either.
  an.Add(1, Kernel(t + 20 * kUs, t + 24 * kUs, t, 8 * kUs, add));
  an.Add(1, Kernel(t + 50 * kUs, t + 54 * kUs, t + 30 * kUs, 8 * kUs, mul));
  AnalyzedActivity g = Kernel(t + 80 * kUs, t + 84 * kUs, t + 60 * kUs, 8 * kUs, relu);
  g.graph_id = 78;
  an.Add(1, g);
  std::vector<MetricReading> out;
  an.End(1);
  an.Finish(t + 5 * kS, 0, false, [](uint32_t) { return "p"; }, &out);
  std::map<std::string, double> s = Sum(out);
  for (const auto& [k, v] : s) EXPECT_NE(k.rfind("cuda_kernel_sequence_", 0), 0u) << k;
  EXPECT_NEAR(s["cuda_kernels"], 303, 1e-9) << "the graph's kernels are counted all the same";
}

// A day-long kernel, and two short kernels a day apart (a day of idle
// between them), are what any local user may still send within the socket's
// bounds. Each used to become one figure per second of its span (86,400 map
// entries, and 2^62 ns ones ran the agent out of memory); now a span is cut
// to the upload window it is reported in (at least 2 minutes), counted.
TEST(GpuActivityAnalyzer, LongSpansAreCutToTheUploadWindowAndCounted) {
  constexpr int64_t kDay = 86'400 * kS;
  ActivityAnalysisOptions o;
  o.grace_ns = 1 * kS;
  GpuActivityAnalyzer an(o);
  const int64_t t0 = 3 * kDay;
  an.Begin(1, 7, /*windowed=*/false, t0 - 2 * kDay);
  std::vector<MetricReading> out;
  an.Finish(t0, 0, false, [](uint32_t) { return "p"; }, &out);  // the previous upload window ended here
  an.Add(1, Kernel(t0 - kDay, t0, 0));                              // a day long
  an.Add(1, Kernel(t0 - 2 * kDay, t0 - 2 * kDay + kMs, 0));         // a day before it
  an.End(1);
  an.Finish(t0 + 10 * kS, 0, false, [](uint32_t) { return "p"; }, &out);
  std::map<std::string, double> s = Sum(out);
  // The day-long kernel's busy time: its last 2 minutes (the cap's floor, as
  // the window is 10 s); the day of idle before it likewise.
  EXPECT_NEAR(s["cuda_gpu_busy_seconds/compute"], 120 + 0.001, 1e-6);
  EXPECT_NEAR(s["cuda_gpu_idle_seconds/host_wait"], 120, 1e-6);
  EXPECT_NEAR(s["cuda_kernel_seconds"], 86'400.001, 1e-6) << "launch figures keep the whole duration";
  EXPECT_LE(out.size(), 2u * 121 + 20);
  EXPECT_EQ(an.stats().spans_capped, 2u);
  EXPECT_NEAR(static_cast<double>(an.stats().capped_ns), 2.0 * (kDay - 120 * kS) - kMs, 1e3);
}

// Figures held at once are bounded: past max_seconds new seconds are left
// out and counted, and past max_span_seconds placements a window's spans are.
TEST(GpuActivityAnalyzer, AnalysisWorkPerWindowIsBounded) {
  ActivityAnalysisOptions o;
  o.max_seconds = 50;
  o.max_span_seconds = 1000;
  GpuActivityAnalyzer an(o);
  const int64_t t0 = 1000 * kS;
  an.Begin(1, 7, /*windowed=*/false, t0);
  // 100 devices, each one kernel a minute long.
  for (uint32_t d = 0; d < 100; ++d) {
    AnalyzedActivity k = Kernel(t0, t0 + 60 * kS, 0);
    k.device = d;
    an.Add(1, k);
  }
  an.End(1);
  std::vector<MetricReading> out;
  an.Finish(t0 + 70 * kS, 0, false, [](uint32_t) { return "p"; }, &out);
  EXPECT_GT(an.stats().spans_dropped, 0u);
  EXPECT_GT(an.stats().seconds_dropped, 0u);
  size_t busy = 0;
  for (const MetricReading& r : out) busy += r.metric == "cuda_gpu_busy_seconds";
  EXPECT_LE(busy, 50u);
}

}  // namespace
}  // namespace warpscope::gpu
