#include "agent/export/ingest_batch_encoder.h"

#include <gtest/gtest.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "tests/support/test_profile.h"

namespace warpscope {
namespace {

using testing::MakeTestProfile;

constexpr char kAgentId[] = "0123456789abcdef0123456789abcdef";
constexpr char kContainer[] = "c0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ff";
constexpr char kPodUid[] = "8f2d1c3a-5b6e-4f70-9a81-b2c3d4e5f607";

ProcessLabelMap AppLabels() {
  ProcessLabelMap labels;
  labels[100] = {"/usr/bin/app", {kContainer, "containerd", kPodUid, "burstable"}, {}};
  return labels;
}

// Everything a reader of the batch sees, resolved through the tables.
struct DecodedSample {
  std::map<std::string, std::string> labels;
  std::vector<std::string> frames;  // leaf first; a location's innermost function
  int64_t value = 0;
  int64_t time = 0;
};

const std::string& Str(const v1::IngestBatch& b, uint32_t i) { return b.strings().at(i); }

std::vector<DecodedSample> Decode(const v1::IngestBatch& b) {
  std::vector<DecodedSample> out;
  for (const v1::Sample& s : b.samples()) {
    DecodedSample d;
    d.value = s.value();
    d.time = s.time_unix_nanos();
    for (const v1::Label& l : b.label_sets().at(s.label_set()).labels()) d.labels[Str(b, l.key())] = Str(b, l.value());
    for (uint32_t loc : b.stacks().at(s.stack()).locations()) {
      const v1::Location& location = b.locations().at(loc);
      d.frames.push_back(location.lines().empty() ? "?" : Str(b, b.functions().at(location.lines(0).function()).name()));
    }
    out.push_back(d);
  }
  return out;
}

const v1::Location* FindLocation(const v1::IngestBatch& b, const std::string& function) {
  for (const v1::Location& l : b.locations()) {
    if (!l.lines().empty() && Str(b, b.functions().at(l.lines(0).function()).name()) == function) return &l;
  }
  return nullptr;
}

TEST(IngestBatchEncoderTest, HeaderTypeAndCounters) {
  auto batch = EncodeIngestBatch(MakeTestProfile(), {kAgentId, 42, "node-a"}, AppLabels());
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->schema_version(), 1u);
  EXPECT_EQ(batch->agent_id(), kAgentId);
  EXPECT_EQ(batch->sequence(), 42u);
  EXPECT_EQ(batch->start_unix_nanos(), testing::kTestTimeNanos);
  EXPECT_EQ(batch->end_unix_nanos(), testing::kTestTimeNanos + testing::kTestDurationNanos);
  ASSERT_GT(batch->strings_size(), 0);
  EXPECT_EQ(batch->strings(0), "");
  std::set<std::string> unique(batch->strings().begin(), batch->strings().end());
  EXPECT_EQ(unique.size(), static_cast<size_t>(batch->strings_size())) << "every string once";
  ASSERT_EQ(batch->types_size(), 1);
  EXPECT_EQ(Str(*batch, batch->types(0).name()), "cpu");
  EXPECT_EQ(Str(*batch, batch->types(0).sample_unit()), "samples");
  EXPECT_EQ(batch->types(0).period_nanos(), testing::kTestPeriodNanos);
  ASSERT_EQ(batch->counters_size(), 2);
  EXPECT_EQ(Str(*batch, batch->counters(0).name()), "ringbuf_drops");
  EXPECT_EQ(batch->counters(0).value(), 3u);
  EXPECT_EQ(Str(*batch, batch->counters(1).name()), "truncated_stacks");
  EXPECT_EQ(batch->counters(1).value(), 1u);
}

TEST(IngestBatchEncoderTest, StringsOverTheServersLimitAreCutAtACharacterBoundary) {
  Profile profile = MakeTestProfile();
  // A CUDA kernel's template name past the limit, with a 3-byte character across the cut.
  std::string name = std::string(kIngestMaxStringBytes - 4, 'a') + "\u2192" + std::string(2000, 'b');
  profile.functions[0].name = name;
  auto batch = EncodeIngestBatch(profile, {kAgentId, 1, "node-a"}, AppLabels());
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  bool found = false;
  for (const std::string& str : batch->strings()) {
    EXPECT_LE(str.size(), kIngestMaxStringBytes);
    if (str.size() > 1000 && str[0] == 'a') {
      found = true;
      EXPECT_EQ(str, std::string(kIngestMaxStringBytes - 4, 'a') + "...") << "cut before the 3-byte character";
    }
  }
  EXPECT_TRUE(found);
}

TEST(IngestBatchEncoderTest, GpuTraceCarriesActivitiesAndCoverageWithTheirProcessLabels) {
  GpuTrace trace;
  auto kernel = std::make_shared<KernelName>(KernelName{"gemm<float>()", "_Z4gemmIfEvv"});
  GpuActivityRecord a;
  a.pid = 4242;
  a.start_ns = testing::kTestTimeNanos + 5;
  a.duration_ns = 700;
  a.name = kernel;
  a.device = 1;
  a.stream = 7;
  a.correlation_id = 99;
  a.grid[0] = 128, a.block[0] = 256;
  a.registers_per_thread = 32;
  trace.activities.push_back(a);
  GpuActivityRecord m;
  m.pid = 4242;
  m.kind = GpuActivityKind::kMemcpy;
  m.bytes = 1 << 20;
  m.copy_kind = 1;
  trace.activities.push_back(m);
  trace.coverage.push_back({4242, testing::kTestTimeNanos, 10, 2, testing::kTestTimeNanos + 100});
  trace.comms[4242] = "trainer";
  const Profile profile = MakeTestProfile();
  auto batch = EncodeIngestBatch(std::vector<const Profile*>{&profile}, {kAgentId, 1, "node-a"}, AppLabels(), {},
                                 &trace);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->gpu_activities_size(), 2);
  const v1::GpuActivity& k = batch->gpu_activities(0);
  EXPECT_EQ(k.start_unix_nanos(), testing::kTestTimeNanos + 5);
  EXPECT_EQ(k.duration_nanos(), 700);
  EXPECT_EQ(k.kind(), v1::GPU_ACTIVITY_KERNEL);
  EXPECT_EQ(Str(*batch, k.name()), "gemm<float>()");
  EXPECT_EQ(Str(*batch, k.system_name()), "_Z4gemmIfEvv");
  EXPECT_EQ(k.device(), 1u);
  EXPECT_EQ(k.stream(), 7u);
  EXPECT_EQ(k.correlation_id(), 99u);
  EXPECT_EQ(k.grid_x(), 128u);
  EXPECT_EQ(k.block_x(), 256u);
  EXPECT_EQ(k.registers_per_thread(), 32u);
  const v1::GpuActivity& c = batch->gpu_activities(1);
  EXPECT_EQ(c.kind(), v1::GPU_ACTIVITY_MEMCPY);
  EXPECT_EQ(c.name(), 0u);
  EXPECT_EQ(c.bytes(), 1u << 20);
  EXPECT_EQ(c.copy_kind(), 1u);
  EXPECT_EQ(c.label_set(), k.label_set());
  ASSERT_EQ(batch->gpu_trace_coverage_size(), 1);
  EXPECT_EQ(batch->gpu_trace_coverage(0).recorded(), 10u);
  EXPECT_EQ(batch->gpu_trace_coverage(0).sent(), 2u);
  EXPECT_EQ(batch->gpu_trace_coverage(0).label_set(), k.label_set());
  std::map<std::string, std::string> labels;
  for (const v1::Label& l : batch->label_sets(static_cast<int>(k.label_set())).labels()) {
    labels[Str(*batch, l.key())] = Str(*batch, l.value());
  }
  EXPECT_EQ(labels["pid"], "4242");
  EXPECT_EQ(labels["comm"], "trainer");
  EXPECT_EQ(labels["node"], "node-a");
  EXPECT_EQ(labels.count("thread"), 0u);
}

TEST(IngestBatchEncoderTest, SamplesStacksAndLabelsExactly) {
  auto batch = EncodeIngestBatch(MakeTestProfile(), {kAgentId, 1, "node-a"}, AppLabels());
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  const std::map<std::string, std::string> app = {
      {"comm", "app"},          {"container_id", kContainer}, {"container_runtime", "containerd"},
      {"exe", "/usr/bin/app"},  {"node", "node-a"},            {"pid", "100"},
      {"pod_uid", kPodUid},     {"qos_class", "burstable"},    {"thread", "app"}};
  auto app_worker = app;
  app_worker["thread"] = "app-worker";
  // pid 200 has no entry in the label map: no exe, no container labels.
  const std::map<std::string, std::string> worker = {
      {"comm", "worker"}, {"node", "node-a"}, {"pid", "200"}, {"thread", "worker"}};
  auto worker2 = worker;
  worker2["thread"] = "worker-2";

  const std::vector<DecodedSample> samples = Decode(*batch);
  ASSERT_EQ(samples.size(), 7u);
  struct Want {
    std::map<std::string, std::string> labels;
    std::vector<std::string> frames;
    int64_t value;
  };
  const std::vector<Want> want = {
      {app, {"inline_helper", "main"}, 5},
      {app_worker, {"?", "inline_helper", "main"}, 2},
      {app, {"__x64_sys_write", "do_syscall_64", "entry_SYSCALL_64", "?", "inline_helper", "main"}, 1},
      {app_worker, {"inline_helper", "compute()", "main"}, 4},
      {worker, {"spin", "worker_main"}, 6},
      {worker2, {"spin", "worker_main"}, 1},
      {worker, {"do_syscall_64", "entry_SYSCALL_64"}, 2},
  };
  int64_t total = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(samples[i].labels, want[i].labels) << "sample " << i;
    EXPECT_EQ(samples[i].frames, want[i].frames) << "sample " << i;
    EXPECT_EQ(samples[i].value, want[i].value) << "sample " << i;
    EXPECT_EQ(samples[i].time, testing::kTestTimeNanos) << "stamped with the window start";
    EXPECT_EQ(batch->samples(i).type(), 0u);
    total += samples[i].value;
  }
  EXPECT_EQ(total, testing::kTestTotalSamples);

  EXPECT_EQ(batch->label_sets_size(), 4);
  for (const v1::LabelSet& set : batch->label_sets()) {
    for (int i = 1; i < set.labels_size(); ++i) {
      EXPECT_LT(Str(*batch, set.labels(i - 1).key()), Str(*batch, set.labels(i).key())) << "sorted, unique keys";
    }
  }
  // Each stack, location, function and mapping once.
  std::set<std::vector<uint32_t>> stacks;
  for (const v1::Stack& s : batch->stacks()) stacks.insert({s.locations().begin(), s.locations().end()});
  EXPECT_EQ(stacks.size(), static_cast<size_t>(batch->stacks_size()));
  EXPECT_EQ(batch->stacks_size(), 6) << "worker and worker-2 share their stack";
  EXPECT_EQ(batch->locations_size(), 9);
  EXPECT_EQ(batch->functions_size(), 8);
  ASSERT_EQ(batch->mappings_size(), 4);
}

// The agent's --label pairs go on every sample's series, under labels the
// series has of its own.
TEST(IngestBatchEncoderTest, AgentLabelsGoOnEverySeries) {
  IngestBatchHeader header{kAgentId, 1, "node-a", {{"region", "eu-north-1"}, {"exe", "not-this"}}};
  auto batch = EncodeIngestBatch(MakeTestProfile(), header, AppLabels());
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  for (const DecodedSample& s : Decode(*batch)) {
    EXPECT_EQ(s.labels.at("region"), "eu-north-1");
    if (s.labels.at("pid") == "100") EXPECT_EQ(s.labels.at("exe"), "/usr/bin/app");
  }
}

TEST(IngestBatchEncoderTest, LocationsCarryFileOffsetsAndInlinedLines) {
  auto batch = EncodeIngestBatch(MakeTestProfile(), {kAgentId, 1, "n"}, {});
  ASSERT_TRUE(batch.ok());
  const v1::IngestBatch& b = *batch;
  auto mapping_name = [&](const v1::Location& l) { return l.mapping() ? Str(b, b.mappings(l.mapping() - 1).filename()) : ""; };

  const v1::Location* main = FindLocation(b, "main");
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(mapping_name(*main), "/usr/bin/app");
  EXPECT_EQ(main->address(), 0x1000u) << "0x401000 - start 0x400000 + offset 0";
  EXPECT_EQ(main->kind(), v1::FRAME_KIND_NATIVE);
  EXPECT_EQ(Str(b, b.mappings(main->mapping() - 1).build_id()), "abcdef0123456789");

  const v1::Location* inlined = FindLocation(b, "inline_helper");
  ASSERT_NE(inlined, nullptr);
  ASSERT_EQ(inlined->lines_size(), 2);
  EXPECT_EQ(Str(b, b.functions(inlined->lines(0).function()).name()), "inline_helper");
  EXPECT_EQ(inlined->lines(0).line(), 42);
  EXPECT_EQ(Str(b, b.functions(inlined->lines(1).function()).name()), "compute()");
  EXPECT_EQ(Str(b, b.functions(inlined->lines(1).function()).system_name()), "_Z7computev");
  EXPECT_EQ(Str(b, b.functions(inlined->lines(1).function()).filename()), "app.cc");
  EXPECT_EQ(inlined->lines(1).line(), 30);

  bool found_libfoo = false;
  for (const v1::Location& l : b.locations()) {
    if (mapping_name(l) != "/usr/lib/libfoo.so") continue;
    found_libfoo = true;
    EXPECT_EQ(l.address(), 0x1a2bu) << "0x7f0000000a2b - start + offset 0x1000";
    EXPECT_TRUE(l.lines().empty());
    EXPECT_EQ(Str(b, b.mappings(l.mapping() - 1).build_id()), "");
  }
  EXPECT_TRUE(found_libfoo);

  const v1::Location* write = FindLocation(b, "__x64_sys_write");
  ASSERT_NE(write, nullptr);
  EXPECT_EQ(write->kind(), v1::FRAME_KIND_KERNEL);
  EXPECT_EQ(write->address(), 0xffffffff81000300u) << "kernel frames keep their address";
  EXPECT_EQ(mapping_name(*write), "[kernel.kallsyms]");
}

TEST(IngestBatchEncoderTest, SameBinaryInTwoProcessesSharesMappingAndLocations) {
  ProfileBuilder b(1000, 10, 100);
  // One binary loaded at different addresses (ASLR) in two processes.
  const uint64_t m1 = b.InternMapping({0, 0x555500000000, 0x555500100000, 0x1000, "/bin/srv", "aa", false});
  const uint64_t m2 = b.InternMapping({0, 0x560000000000, 0x560000100000, 0x1000, "/bin/srv", "aa", false});
  const uint64_t f = b.InternFunction("handle", "handle");
  const uint64_t l1 = b.InternLocation(m1, 0x555500000500, FrameKind::kNative, {{f, 7}});
  const uint64_t l2 = b.InternLocation(m2, 0x560000000500, FrameKind::kNative, {{f, 7}});
  b.AddSample({l1}, 3, {1, 1, "srv", "srv"});
  b.AddSample({l2}, 4, {2, 2, "srv", "srv"});
  // Two threads of one process with one name: one series.
  b.AddSample({l1}, 5, {1, 9, "srv", "srv"});
  auto batch = EncodeIngestBatch(b.Finish(5), {kAgentId, 1, "n"}, {});
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->mappings_size(), 1);
  ASSERT_EQ(batch->locations_size(), 1);
  EXPECT_EQ(batch->locations(0).address(), 0x1500u);
  EXPECT_EQ(batch->stacks_size(), 1);
  EXPECT_EQ(batch->label_sets_size(), 2);
  ASSERT_EQ(batch->samples_size(), 2) << "threads 1 and 9 of pid 1 merge";
  EXPECT_EQ(batch->samples(0).value(), 8);
  EXPECT_EQ(batch->samples(1).value(), 4);
}

// `run` stamps each second's samples: one row per (series, stack, second),
// and unstamped samples take the window start.
TEST(IngestBatchEncoderTest, SampleTimesKeepTheirSecond) {
  ProfileBuilder b(1000, 10, 100);
  const uint64_t f = b.InternFunction("spin", "spin");
  const uint64_t l = b.InternLocation(0, 0x10, FrameKind::kNative, {{f, 0}});
  b.AddSample({l}, 1, {1, 1, "app", "app"});  // no time yet: the window start
  b.SetSampleTime(2'000'000'000);
  b.AddSample({l}, 2, {1, 1, "app", "app"});
  b.AddSample({l}, 3, {1, 2, "app", "app"});  // another thread, same name: same row
  b.SetSampleTime(3'000'000'000);
  b.AddSample({l}, 4, {1, 1, "app", "app"});
  auto batch = EncodeIngestBatch(b.Finish(5), {kAgentId, 1, "n"}, {});
  ASSERT_TRUE(batch.ok());
  std::map<int64_t, int64_t> by_time;
  for (const DecodedSample& d : Decode(*batch)) by_time[d.time] += d.value;
  EXPECT_EQ(batch->samples_size(), 3);
  EXPECT_EQ(by_time, (std::map<int64_t, int64_t>{{1000, 1}, {2'000'000'000, 5}, {3'000'000'000, 4}}));
}

// GPU metrics ride in the same batch: types once, the node label on every
// series, process labels for per-process readings, non-finite values left out.
TEST(IngestBatchEncoderTest, MetricReadingsBecomeMetricPoints) {
  ProfileBuilder b(1000, 10, 100);
  ProcessLabelMap labels = AppLabels();
  const std::vector<std::pair<std::string, std::string>> gpu0 = {{"gpu", "0"}, {"gpu_name", "NVIDIA H200"}, {"uuid", "GPU-1"}};
  auto with_pid = gpu0;
  with_pid.emplace_back("pid", "100");
  with_pid.emplace_back("comm", "train.py");  // as the GPU metrics loop adds it
  std::sort(with_pid.begin(), with_pid.end());
  std::vector<MetricReading> metrics = {
      {"gpu_utilization", "percent", gpu0, 45, 1'000'000'000},
      {"gpu_utilization", "percent", gpu0, 55, 2'000'000'000},
      {"gpu_power", "watts", gpu0, 312.5, 1'000'000'000},
      {"gpu_process_sm_utilization", "percent", with_pid, 30, 1'000'000'000},
      {"gpu_power", "watts", gpu0, std::nan(""), 2'000'000'000},
  };
  auto batch = EncodeIngestBatch(b.Finish(5), {kAgentId, 1, "node-a"}, labels, metrics);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->metric_types_size(), 3);
  ASSERT_EQ(batch->metric_points_size(), 4) << "the NaN reading is left out";
  std::map<std::string, std::string> units;
  for (const v1::MetricType& t : batch->metric_types()) units[Str(*batch, t.name())] = Str(*batch, t.unit());
  EXPECT_EQ(units, (std::map<std::string, std::string>{
                       {"gpu_power", "watts"}, {"gpu_process_sm_utilization", "percent"}, {"gpu_utilization", "percent"}}));
  for (const v1::MetricPoint& p : batch->metric_points()) {
    std::map<std::string, std::string> l;
    for (const v1::Label& x : batch->label_sets(p.label_set()).labels()) l[Str(*batch, x.key())] = Str(*batch, x.value());
    EXPECT_EQ(l["node"], "node-a");
    EXPECT_EQ(l["gpu"], "0");
    const std::string name = Str(*batch, batch->metric_types(p.metric()).name());
    if (name == "gpu_process_sm_utilization") {
      EXPECT_EQ(l["pid"], "100");
      EXPECT_EQ(l["comm"], "train.py");
      EXPECT_EQ(l["exe"], "/usr/bin/app");
      EXPECT_EQ(l["container_id"], kContainer);
      EXPECT_EQ(p.value(), 30);
    } else {
      EXPECT_EQ(l.count("pid"), 0u);
    }
    if (name == "gpu_power") {
      EXPECT_DOUBLE_EQ(p.value(), 312.5);
    }
  }
  EXPECT_EQ(batch->metric_points(0).time_unix_nanos(), 1'000'000'000);
  EXPECT_EQ(batch->metric_points(1).time_unix_nanos(), 2'000'000'000);
  EXPECT_EQ(batch->metric_points(0).label_set(), batch->metric_points(1).label_set()) << "one series";
}

TEST(IngestBatchEncoderTest, PythonFramesHaveNoMappingOrAddress) {
  ProfileBuilder b(1000, 10, 100);
  const uint64_t f = b.InternFunction("handler", "handler", "app.py");
  const uint64_t l = b.InternSourceLocation(f, 12, FrameKind::kPython);
  b.AddSample({l}, 1, {1, 1, "python3", "python3"});
  auto batch = EncodeIngestBatch(b.Finish(5), {kAgentId, 1, "n"}, {});
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->locations_size(), 1);
  EXPECT_EQ(batch->locations(0).kind(), v1::FRAME_KIND_PYTHON);
  EXPECT_EQ(batch->locations(0).mapping(), 0u);
  EXPECT_EQ(batch->locations(0).address(), 0u);
  EXPECT_EQ(batch->locations(0).lines(0).line(), 12);
  EXPECT_EQ(Str(*batch, batch->functions(0).filename()), "app.py");
}

// GPU time (docs/design/gpu_time.md) travels beside the CPU profile: its own type, kernel
// leaves of kind CUDA_KERNEL without mapping or address, and its extra
// series labels.
TEST(IngestBatchEncoderTest, GpuTimeProfileIsItsOwnTypeWithKernelLeavesAndDeviceLabels) {
  const Profile cpu = MakeTestProfile();
  ProfileBuilder b(cpu.time_nanos, 0, 0);
  const uint64_t py = b.InternSourceLocation(b.InternFunction("train_step", "train_step", "train.py"), 40,
                                             FrameKind::kPython);
  const uint64_t kernel = b.InternSourceLocation(
      b.InternFunction("void gemm<float>(int)", "_Z4gemmIfEvi", ""), 0, FrameKind::kCudaKernel);
  SampleLabels labels{100, 101, "python3", "pt_main_thread", {{"device", "0"}, {"stream", "7"}}};
  b.AddSample({kernel, py}, 123456, labels);
  Profile gpu = b.Finish(cpu.duration_nanos);
  gpu.sample_types = {{"gpu_time", "nanoseconds"}};
  auto batch = EncodeIngestBatch({&cpu, &gpu}, {kAgentId, 3, "node-a"}, AppLabels());
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->types_size(), 2);
  EXPECT_EQ(Str(*batch, batch->types(0).name()), "cpu");
  EXPECT_EQ(Str(*batch, batch->types(1).name()), "gpu_time");
  EXPECT_EQ(Str(*batch, batch->types(1).sample_unit()), "nanoseconds");
  EXPECT_EQ(batch->types(1).period_nanos(), 0);
  const v1::Location* leaf = FindLocation(*batch, "void gemm<float>(int)");
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(leaf->kind(), v1::FRAME_KIND_CUDA_KERNEL);
  EXPECT_EQ(leaf->mapping(), 0u);
  EXPECT_EQ(leaf->address(), 0u);
  int gpu_rows = 0;
  for (int i = 0; i < batch->samples_size(); ++i) {
    if (batch->samples(i).type() != 1) continue;
    ++gpu_rows;
    const DecodedSample d = Decode(*batch)[i];
    EXPECT_EQ(d.value, 123456);
    EXPECT_EQ(d.frames, (std::vector<std::string>{"void gemm<float>(int)", "train_step"}));
    EXPECT_EQ(d.labels.at("device"), "0");
    EXPECT_EQ(d.labels.at("stream"), "7");
    EXPECT_EQ(d.labels.at("exe"), "/usr/bin/app");
  }
  EXPECT_EQ(gpu_rows, 1);
  // The CPU rows are unchanged by the second profile.
  auto alone = EncodeIngestBatch(cpu, {kAgentId, 3, "node-a"}, AppLabels());
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(batch->samples_size(), alone->samples_size() + 1);
}

// The pod's Kubernetes names ride beside pod_uid on every kind of series of
// the process: CPU and GPU-time samples, per-process GPU metrics, GPU trace.
TEST(IngestBatchEncoderTest, KubernetesLabelsRideOnEverySeriesOfThePodsProcess) {
  ProcessLabelMap labels = AppLabels();
  labels[100].kubernetes = {"web-7d9f8b6c5d-x2k4q", "shop", "nginx", "web", "Deployment"};
  const std::map<std::string, std::string> want = {{"pod", "web-7d9f8b6c5d-x2k4q"}, {"namespace", "shop"},
                                                   {"container", "nginx"},          {"workload", "web"},
                                                   {"workload_kind", "Deployment"}, {"pod_uid", kPodUid}};
  auto has_pod_labels = [&](const std::map<std::string, std::string>& l) {
    for (const auto& [k, v] : want) {
      auto it = l.find(k);
      if (it == l.end() || it->second != v) return false;
    }
    return true;
  };
  const Profile cpu = MakeTestProfile();
  ProfileBuilder b(cpu.time_nanos, 0, 0);
  const uint64_t kernel = b.InternSourceLocation(b.InternFunction("k", "k", ""), 0, FrameKind::kCudaKernel);
  b.AddSample({kernel}, 1000, {100, 101, "app", "app", {{"device", "0"}}});
  Profile gpu = b.Finish(cpu.duration_nanos);
  gpu.sample_types = {{"gpu_time", "nanoseconds"}};
  const std::vector<MetricReading> metrics = {
      {"gpu_process_sm_utilization", "percent", {{"comm", "app"}, {"gpu", "0"}, {"pid", "100"}}, 30, 1'000'000'000}};
  GpuTrace trace;
  GpuActivityRecord a;
  a.pid = 100;
  a.start_ns = cpu.time_nanos + 5;
  a.duration_ns = 700;
  trace.activities.push_back(a);
  auto batch = EncodeIngestBatch({&cpu, &gpu}, {kAgentId, 1, "node-a"}, labels, metrics, &trace);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  int cpu_rows = 0, gpu_rows = 0;
  for (int i = 0; i < batch->samples_size(); ++i) {
    const DecodedSample d = Decode(*batch)[i];
    const bool app = d.labels.at("pid") == "100";
    EXPECT_EQ(has_pod_labels(d.labels), app) << "sample " << i;
    if (!app) {
      EXPECT_EQ(d.labels.count("pod"), 0u) << "no pod, no empty pod label";
    } else {
      ++(batch->samples(i).type() == 0 ? cpu_rows : gpu_rows);
    }
  }
  EXPECT_GT(cpu_rows, 0);
  EXPECT_EQ(gpu_rows, 1);
  auto labels_of = [&](uint32_t set) {
    std::map<std::string, std::string> l;
    for (const v1::Label& x : batch->label_sets(static_cast<int>(set)).labels()) l[Str(*batch, x.key())] = Str(*batch, x.value());
    return l;
  };
  ASSERT_EQ(batch->metric_points_size(), 1);
  EXPECT_TRUE(has_pod_labels(labels_of(batch->metric_points(0).label_set())));
  ASSERT_EQ(batch->gpu_activities_size(), 1);
  EXPECT_TRUE(has_pod_labels(labels_of(batch->gpu_activities(0).label_set())));
}

TEST(IngestBatchEncoderTest, EmptyWindowIsAValidBatch) {
  ProfileBuilder b(1000, 10, 100);
  b.SetCounter("drops", 0);
  auto batch = EncodeIngestBatch(b.Finish(10), {kAgentId, 9, "n"}, {});
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->samples_size(), 0);
  EXPECT_EQ(batch->strings(0), "");
  EXPECT_EQ(batch->counters_size(), 1);
  EXPECT_EQ(batch->types_size(), 1);
}

TEST(IngestBatchEncoderTest, BadIdsAreErrorsNotCrashes) {
  Profile p = MakeTestProfile();
  p.samples[0].location_ids.push_back(999);
  auto batch = EncodeIngestBatch(p, {kAgentId, 1, "n"}, {});
  EXPECT_FALSE(batch.ok());
  EXPECT_NE(batch.status().message().find("unknown location 999"), std::string::npos);
}

TEST(IngestBatchEncoderTest, CompressedRoundTrip) {
  auto batch = EncodeIngestBatch(MakeTestProfile(), {kAgentId, 7, "node-a"}, AppLabels());
  ASSERT_TRUE(batch.ok());
  auto body = CompressIngestBatch(*batch);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(static_cast<unsigned char>((*body)[0]), 0x28) << "zstd frame magic";
  auto back = DecompressIngestBatch(*body);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->SerializeAsString(), batch->SerializeAsString());
  EXPECT_FALSE(DecompressIngestBatch("not zstd").ok());
  EXPECT_FALSE(DecompressIngestBatch(body->substr(0, body->size() / 2)).ok());
  EXPECT_EQ(DecompressIngestBatch(*body, 16).status().code(), StatusCode::kResourceExhausted);
  // The frame carries a content checksum: a byte damaged in its data (in the
  // spool, on the way) fails decompression instead of giving another batch.
  ZSTD_frameHeader header{};
  ASSERT_EQ(ZSTD_getFrameHeader(&header, body->data(), body->size()), 0u);
  EXPECT_EQ(header.checksumFlag, 1u);
  std::string damaged = *body;
  damaged[damaged.size() - 6] ^= 0x01;  // in the last block, before the 4-byte checksum
  EXPECT_FALSE(DecompressIngestBatch(damaged).ok());
}

}  // namespace
}  // namespace warpscope
