// The GPU answers: kernel table, per-stream timeline and its JSON, Chrome trace.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <map>
#include <set>

#include "query/chrome_trace.h"
#include "query/gpu_kernel_table.h"
#include "query/gpu_stream_timeline.h"

namespace warpscope::query {
namespace {

using nlohmann::json;
using storage::GpuActivities;
using storage::GpuActivity;
using storage::GpuActivityKind;

constexpr int64_t kT0 = 1'700'000'000'000'000'000LL;

GpuActivity Kernel(int64_t start, int64_t duration, uint32_t name, uint32_t stream = 7, uint32_t labels = 0) {
  GpuActivity a;
  a.start_ns = start;
  a.duration_ns = duration;
  a.name = name;
  a.system_name = name;
  a.stream = stream;
  a.labels = labels;
  a.grid[0] = a.grid[1] = a.grid[2] = 1;
  a.block[0] = 128;
  a.block[1] = a.block[2] = 1;
  return a;
}

// names: 0 "", 1 "gemm", 2 "relu". gemm runs 10 times for 1..10 us (one with
// another block size), relu twice for 50 us, one memcpy of 5 us.
GpuActivities Sample() {
  GpuActivities g;
  g.names = {"", "gemm", "relu"};
  g.label_sets = {{{"comm", "train"}, {"node", "n1"}, {"pid", "100"}}, {{"comm", "infer"}, {"pid", "7"}}};
  int64_t t = kT0;
  for (int i = 1; i <= 10; ++i) {
    GpuActivity a = Kernel(t, i * 1000, 1);
    if (i == 10) a.block[0] = 256;
    g.activities.push_back(a);
    t += 20'000;
  }
  g.activities.push_back(Kernel(kT0 + 1'000, 50'000, 2, 9, 1));
  g.activities.push_back(Kernel(kT0 + 300'000, 50'000, 2, 9, 1));
  GpuActivity copy = Kernel(kT0 + 500, 5'000, 0, 3);
  copy.kind = GpuActivityKind::kMemcpy;
  copy.copy_kind = 1;
  copy.bytes = 4096;
  copy.grid[0] = copy.block[0] = 0;
  g.activities.push_back(copy);
  g.coverage.push_back({0, kT0, 20, 11, kT0 + 500'000});
  return g;
}

TEST(GpuKernelTableTest, StatsPerKindAndNameSortedByTotal) {
  const KernelTable t = BuildKernelTable(Sample());
  EXPECT_EQ(t.activities, 13u);
  EXPECT_EQ(t.total_ns, 55'000 + 100'000 + 5'000);
  ASSERT_EQ(t.kernels.size(), 3u);
  const KernelStats& relu = t.kernels[0];
  EXPECT_EQ(relu.name, "relu");
  EXPECT_EQ(relu.launches, 2u);
  EXPECT_EQ(relu.total_ns, 100'000);
  EXPECT_EQ(relu.p50_ns, 50'000);
  const KernelStats& gemm = t.kernels[1];
  EXPECT_EQ(gemm.name, "gemm");
  EXPECT_EQ(gemm.kind, GpuActivityKind::kKernel);
  EXPECT_EQ(gemm.launches, 10u);
  EXPECT_EQ(gemm.total_ns, 55'000);
  EXPECT_EQ(gemm.mean_ns, 5'500);
  EXPECT_EQ(gemm.p50_ns, 5'000);   // rank ceil(5) = 5th of 1..10 us
  EXPECT_EQ(gemm.p95_ns, 10'000);  // rank ceil(9.5) = 10th
  EXPECT_EQ(gemm.max_ns, 10'000);
  EXPECT_EQ(gemm.configs, 2u);
  EXPECT_EQ(gemm.grid, (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(gemm.block, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_DOUBLE_EQ(gemm.share, 55'000.0 / 160'000.0);
  const KernelStats& copy = t.kernels[2];
  EXPECT_EQ(copy.kind, GpuActivityKind::kMemcpy);
  EXPECT_EQ(copy.configs, 0u);
  EXPECT_STREQ(GpuActivityKindName(copy.kind), "memcpy");
}

TEST(GpuKernelTableTest, NearestRankPercentiles) {
  EXPECT_EQ(NearestRankPercentile({7}, 50), 7);
  EXPECT_EQ(NearestRankPercentile({7}, 95), 7);
  EXPECT_EQ(NearestRankPercentile({1, 2}, 50), 1);
  EXPECT_EQ(NearestRankPercentile({1, 2}, 95), 2);
  std::vector<int64_t> hundred;
  for (int i = 1; i <= 100; ++i) hundred.push_back(i);
  EXPECT_EQ(NearestRankPercentile(hundred, 95), 95);
  EXPECT_TRUE(BuildKernelTable(GpuActivities{}).kernels.empty());
}

TEST(GpuStreamTimelineTest, LanesByLabelsDeviceStreamWithClippedBusyTime) {
  GpuActivities g = Sample();
  // An overlapping kernel on stream 7 counts once, and one running past the
  // range's end is clipped.
  g.activities.push_back(Kernel(kT0 + 500, 1'000, 1));
  g.activities.push_back(Kernel(kT0 + 990'000, 50'000, 1));
  std::stable_sort(g.activities.begin(), g.activities.end(),
                   [](const GpuActivity& a, const GpuActivity& b) { return a.start_ns < b.start_ns; });
  const auto lanes = BuildStreamTimeline(g, kT0, kT0 + 1'000'000);
  ASSERT_EQ(lanes.size(), 3u);
  EXPECT_EQ(lanes[0].labels, 0u);
  EXPECT_EQ(lanes[0].stream, 3u);
  EXPECT_EQ(lanes[0].busy_ns, 5'000);
  EXPECT_EQ(lanes[1].stream, 7u);
  EXPECT_EQ(lanes[1].activities.size(), 12u);
  // 55 us of gemm + 500 ns of the overlap's tail (kT0+1000..kT0+1500 lies
  // inside the first gemm, which runs kT0..kT0+1000: 500 new) + 10 us clipped.
  EXPECT_EQ(lanes[1].busy_ns, 55'000 + 500 + 10'000);
  EXPECT_EQ(lanes[2].labels, 1u);
  EXPECT_EQ(lanes[2].busy_ns, 100'000);
}

TEST(GpuStreamTimelineTest, TraceJsonShape) {
  const json j = json::parse(RenderGpuTraceJson(Sample(), kT0, kT0 + 1'000'000));
  EXPECT_EQ(j["from_ns"], kT0);
  EXPECT_EQ(j["to_ns"], kT0 + 1'000'000);
  EXPECT_EQ(j["names"], json({"", "gemm", "relu"}));
  ASSERT_EQ(j["streams"].size(), 3u);
  const json& s = j["streams"][0];
  EXPECT_EQ(s["labels"], json({{"comm", "train"}, {"node", "n1"}, {"pid", "100"}}));
  EXPECT_EQ(s["device"], 0);
  EXPECT_EQ(s["stream"], 3);
  EXPECT_EQ(s["activities"], json::parse("[[" + std::to_string(kT0 + 500) + ",5000,0,1,0,0,0,0,0,0]]"));
  EXPECT_EQ(j["launch_apis"][1], "cudaLaunchKernel");
  EXPECT_EQ(j["launch_apis"].size(), kGpuLaunchApiCount);
  EXPECT_EQ(j["streams"][1]["activities"].size(), 10u);
  EXPECT_EQ(j["streams"][1]["activities"][9][0], kT0 + 180'000);
  ASSERT_EQ(j["coverage"].size(), 1u);
  EXPECT_EQ(j["coverage"][0]["recorded"], 20);
  EXPECT_EQ(j["coverage"][0]["sent"], 11);
  EXPECT_EQ(j["coverage"][0]["complete_until_ns"], kT0 + 500'000);
  EXPECT_EQ(j["coverage"][0]["labels"]["pid"], "100");
}

TEST(ChromeTraceTest, CompleteEventsWithProcessAndThreadNames) {
  const std::string text = RenderChromeTrace(Sample(), kT0, kT0 + 1'000'000);
  const json j = json::parse(text);
  EXPECT_EQ(j["otherData"]["origin_unix_ns"], kT0);
  const json& events = j["traceEvents"];
  std::map<std::string, json> metadata;
  std::vector<json> complete;
  for (const json& e : events) {
    if (e["ph"] == "M") {
      metadata[e["name"].get<std::string>() + " " + std::to_string(e["pid"].get<int>()) + " " +
               std::to_string(e["tid"].get<int64_t>())] = e["args"]["name"];
    } else {
      ASSERT_EQ(e["ph"], "X");
      complete.push_back(e);
    }
  }
  EXPECT_EQ(metadata["process_name 1 0"], "train (100) on n1");
  EXPECT_EQ(metadata["process_name 2 0"], "infer (7)");
  EXPECT_EQ(metadata["thread_name 1 1000000007"], "GPU 0 stream 7");
  EXPECT_EQ(metadata["thread_name 2 1000000009"], "GPU 0 stream 9");
  ASSERT_EQ(complete.size(), 13u);
  const json& first = complete[0];
  EXPECT_EQ(first["name"], "gemm");
  EXPECT_EQ(first["cat"], "kernel");
  EXPECT_EQ(first["pid"], 1);
  EXPECT_EQ(first["tid"], 1000000007);
  EXPECT_DOUBLE_EQ(first["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(first["dur"].get<double>(), 1.0);
  EXPECT_EQ(first["args"]["block"], json({128, 1, 1}));
  const json& copy = complete.back();
  EXPECT_EQ(copy["name"], "memcpy HtoD");
  EXPECT_EQ(copy["args"]["bytes"], 4096);
  EXPECT_DOUBLE_EQ(copy["ts"].get<double>(), 0.5);
  // Exact nanoseconds in the text.
  EXPECT_NE(text.find("\"ts\":0.500,\"dur\":5.000"), std::string::npos);
  EXPECT_EQ(MicrosecondsText(1'234'567), "1234.567");
  EXPECT_EQ(MicrosecondsText(5), "0.005");
  EXPECT_EQ(MicrosecondsText(-1500), "-1.500");
}

// Kernels with their launch calls: the call on the launching thread's lane
// once per correlation id (a graph launch runs two kernels under one id),
// and a flow from the call to each kernel.
TEST(ChromeTraceTest, LaunchCallsOnCpuThreadsWithFlowsToTheirKernels) {
  GpuActivities g;
  g.names = {"", "gemm"};
  g.label_sets = {{{"comm", "train"}, {"pid", "100"}}};
  GpuActivity a = Kernel(kT0 + 10'000, 2'000, 1);
  a.correlation_id = 5;
  a.launch_start_ns = kT0 + 1'000;
  a.launch_duration_ns = 4'000;
  a.launch_tid = 4242;
  a.launch_api = GpuLaunchApi::kCudaLaunchKernel;
  GpuActivity b = a;  // the graph's second kernel
  b.start_ns = kT0 + 13'000;
  b.correlation_id = 6;
  b.launch_api = GpuLaunchApi::kCudaGraphLaunch;
  GpuActivity c = b;
  c.start_ns = kT0 + 15'000;
  GpuActivity unknown = Kernel(kT0 + 20'000, 1'000, 1);  // launched before recording began
  g.activities = {a, b, c, unknown};
  const json j = json::parse(RenderChromeTrace(g, kT0, kT0 + 100'000));
  std::vector<json> calls, kernels, starts, ends;
  std::map<int64_t, std::string> threads;
  for (const json& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") threads[e["tid"].get<int64_t>()] = e["args"]["name"];
    if (e["ph"] == "X") (e["cat"] == "cuda_api" ? calls : kernels).push_back(e);
    if (e["ph"] == "s") starts.push_back(e);
    if (e["ph"] == "f") ends.push_back(e);
  }
  EXPECT_EQ(threads[4242], "thread 4242 (CPU)");
  EXPECT_EQ(threads[1000000007], "GPU 0 stream 7");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["name"], "cudaLaunchKernel");
  EXPECT_EQ(calls[1]["name"], "cudaGraphLaunch");
  EXPECT_EQ(calls[0]["tid"], 4242);
  EXPECT_DOUBLE_EQ(calls[0]["ts"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(calls[0]["dur"].get<double>(), 4.0);
  EXPECT_EQ(calls[0]["args"]["correlation_id"], 5);
  EXPECT_EQ(kernels.size(), 4u);
  ASSERT_EQ(starts.size(), 3u);
  ASSERT_EQ(ends.size(), 3u);
  std::set<int64_t> ids;
  for (size_t i = 0; i < starts.size(); ++i) {
    EXPECT_EQ(starts[i]["id"], ends[i]["id"]);
    ids.insert(starts[i]["id"].get<int64_t>());
    EXPECT_EQ(starts[i]["tid"], 4242);
    EXPECT_DOUBLE_EQ(starts[i]["ts"].get<double>(), 3.0);  // inside the call
    EXPECT_EQ(ends[i]["tid"], 1000000007);
    EXPECT_EQ(ends[i]["bp"], "e");
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_DOUBLE_EQ(ends[0]["ts"].get<double>(), 10.0);  // the kernel's start
  EXPECT_DOUBLE_EQ(ends[2]["ts"].get<double>(), 15.0);
}

// CPU samples: per lane and second, the stacks laid out from the second's
// start by their CPU time, sorted by path, a shared prefix as one event,
// squeezed into the second when they add up to more, clipped to the range.
TEST(ChromeTraceTest, CpuSamplesAsNestedEventsPerThreadAndSecond) {
  GpuActivities g;
  g.names = {"", "gemm"};
  g.label_sets = {{{"comm", "train"}, {"node", "n1"}, {"pid", "100"}}};
  g.activities = {Kernel(kT0 + 1'000, 500, 1)};
  storage::StackTimeline cpu;
  cpu.profile.type = {"cpu", "samples", 10'000'000};  // 10 ms a sample
  auto frame = [](const std::string& name) {
    storage::ResolvedFrame f;
    f.function_name = name;
    f.mapping_file = "/bin/train";
    return f;
  };
  cpu.profile.frames = {frame("main"), frame("step"), frame("load"), frame("spin")};
  // Leaf first: main;step, main;load, spin (1,000 samples: 10 s in one second).
  cpu.profile.stacks = {{{1, 0}, 30}, {{2, 0}, 20}, {{3}, 1000}};
  cpu.lanes = {{{"comm", "train"}, {"node", "n1"}, {"pid", "100"}, {"thread", "main"}},
               {{"comm", "train"}, {"node", "n1"}, {"pid", "100"}, {"thread", "spinner"}},
               {{"comm", "other"}, {"node", "n1"}, {"pid", "999"}, {"thread", "x"}}};  // no GPU process: left out
  cpu.points = {{0, kT0, 0, 30}, {0, kT0, 1, 20}, {1, kT0, 2, 1000}, {2, kT0, 2, 5}};
  const json j = json::parse(RenderChromeTrace(g, kT0, kT0 + 400'000'000, &cpu));
  std::map<int64_t, std::string> threads;
  std::vector<json> samples;
  for (const json& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") threads[e["tid"].get<int64_t>()] = e["args"]["name"];
    if (e["cat"] == "cpu_sample") samples.push_back(e);
  }
  EXPECT_EQ(threads[2000000000], "CPU samples · main");
  EXPECT_EQ(threads[2000000001], "CPU samples · spinner");
  EXPECT_EQ(threads.count(2000000002), 0u);
  std::map<std::string, std::pair<double, double>> main_events;  // name -> (ts, dur) in us
  int spin = 0;
  for (const json& e : samples) {
    EXPECT_EQ(e["pid"], 1);
    if (e["tid"] == 2000000000) main_events[e["name"]] = {e["ts"].get<double>(), e["dur"].get<double>()};
    if (e["tid"] == 2000000001) {
      ++spin;
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.0);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 400'000.0) << "squeezed into the second, clipped to 400 ms";
    }
  }
  EXPECT_EQ(spin, 1);
  ASSERT_EQ(main_events.size(), 3u) << "main once for both stacks";
  EXPECT_EQ(main_events["main"], (std::pair<double, double>{0.0, 400'000.0}));  // 500 ms, clipped
  EXPECT_EQ(main_events["load"], (std::pair<double, double>{0.0, 200'000.0}));  // "load" sorts before "step"
  EXPECT_EQ(main_events["step"], (std::pair<double, double>{200'000.0, 200'000.0}));  // 300 ms clipped at 400 ms
}

TEST(ChromeTraceTest, EmptyTraceIsValidJson) {
  const json j = json::parse(RenderChromeTrace(GpuActivities{}, kT0, kT0 + 1));
  EXPECT_TRUE(j["traceEvents"].empty());
}

}  // namespace
}  // namespace warpscope::query
