#include "agent/export/window_batches.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <set>
#include <thread>

#include "tests/fakes/fake_ingest_server.h"
#include "tests/support/test_profile.h"
#include "agent/export/uploader.h"

namespace warpscope {
namespace {

using std::chrono::milliseconds;
using testing::FakeIngestServer;

constexpr char kAgentId[] = "00112233445566778899aabbccddeeff";
constexpr uint32_t kFloodPid = 4242;

// `n` bytes that zstd cannot shrink much (a local user's names need not be
// repetitive either).
std::string Noise(uint64_t seed, size_t n) {
  std::string s(n, 'a');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (char& c : s) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>('a' + x % 26);
  }
  return s;
}

// A window's GPU trace after a flood of distinct kernel names through the
// CUDA socket: `count` activities, each its own ~4 KiB name, mangled and
// demangled (the server's longest string).
GpuTrace FloodTrace(size_t count) {
  GpuTrace trace;
  for (size_t i = 0; i < count; ++i) {
    GpuActivityRecord a;
    a.pid = kFloodPid;
    a.start_ns = testing::kTestTimeNanos + static_cast<int64_t>(i);
    a.duration_ns = 1000;
    a.correlation_id = i;
    a.name = std::make_shared<KernelName>(KernelName{"flood" + Noise(i, 4000), "_Z5flood" + Noise(i + (1ull << 40), 4000)});
    trace.activities.push_back(std::move(a));
  }
  trace.coverage.push_back({kFloodPid, testing::kTestTimeNanos, count, count, testing::kTestTimeNanos + 1'000'000'000});
  trace.comms[kFloodPid] = "flood";
  return trace;
}

Profile GpuTimeProfile(const Profile& cpu) {
  ProfileBuilder b(cpu.time_nanos, 0, 0);
  const uint64_t kernel = b.InternSourceLocation(b.InternFunction("gemm()", "_Z4gemmv", ""), 0, FrameKind::kCudaKernel);
  b.AddSample({kernel}, 5000, SampleLabels{kFloodPid, kFloodPid, "flood", "flood", {{"device", "0"}}});
  Profile gpu = b.Finish(cpu.duration_nanos);
  gpu.sample_types = {{"gpu_time", "nanoseconds"}};
  return gpu;
}

std::unique_ptr<Uploader> StartUploader(const std::string& url) {
  char dir[] = "/tmp/ws_window_batches_XXXXXX";
  UploaderOptions o;
  o.server.server_url = url;
  o.spool_dir = mkdtemp(dir);
  o.initial_backoff = milliseconds(20);
  o.max_backoff = milliseconds(100);
  o.jitter_seed = 1;
  auto up = Uploader::Create(o);
  EXPECT_TRUE(up.ok()) << up.status().ToString();
  (*up)->Start();
  return std::move(up).value();
}

// Numbers and posts the window's batches as the agent's run loop does.
void Post(std::vector<WindowBatch>& batches, Uploader* up, uint64_t first_sequence = 1) {
  uint64_t sequence = first_sequence;
  for (WindowBatch& b : batches) {
    b.batch.set_sequence(sequence);
    auto body = CompressIngestBatch(b.batch);
    ASSERT_TRUE(body.ok());
    up->PostBatch(sequence++, std::move(*body));
  }
}

int64_t CpuSamples(const v1::IngestBatch& b) {
  int64_t n = 0;
  for (const v1::Sample& s : b.samples()) {
    if (b.strings(b.types(static_cast<int>(s.type())).name()) == kIngestCpuTypeName) n += s.value();
  }
  return n;
}

// A local user's kernel names can make a window's data larger than the
// server takes (64 MiB decompressed, 16 MiB as sent): in one batch, the
// server answers 413 and the node's CPU samples go with it. Each source goes
// in batches of its own below the server's limits: everything arrives.
TEST(WindowBatchesTest, AFloodOfKernelNamesNeverCostsTheNodeItsCpuSamples) {
  const Profile cpu = testing::MakeTestProfile();
  const GpuTrace trace = FloodTrace(9000);  // ~72 MB of names
  WindowBatchStats stats;
  auto batches = EncodeWindowBatches({&cpu, nullptr, &trace, nullptr}, {kAgentId, 0, "node-a"}, {},
                                     kDefaultMaxBatchBytes, &stats);
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();

  FakeIngestServer server;  // the real HTTP core and its limits
  auto up = StartUploader(server.url());
  Post(*batches, up.get());
  ASSERT_TRUE(server.WaitForStored(batches->size(), milliseconds(60000)))
      << server.stored_sequences().size() << " of " << batches->size() << " stored";
  up->Stop();

  int64_t cpu_samples = 0;
  size_t activities = 0, coverage = 0;
  std::set<std::string> names;
  for (const FakeIngestServer::Request& r : server.requests()) {
    EXPECT_EQ(r.answered, 200);
    EXPECT_LE(r.batch.ByteSizeLong(), kDefaultMaxBatchBytes);
    cpu_samples += CpuSamples(r.batch);
    activities += r.batch.gpu_activities_size();
    coverage += r.batch.gpu_trace_coverage_size();
    for (const v1::GpuActivity& a : r.batch.gpu_activities()) names.insert(r.batch.strings(a.system_name()));
    EXPECT_EQ(r.batch.start_unix_nanos(), cpu.time_nanos) << "every batch carries the window";
  }
  EXPECT_EQ(cpu_samples, testing::kTestTotalSamples) << "the node's CPU samples arrived";
  EXPECT_EQ(activities, 9000u);
  EXPECT_EQ(names.size(), 9000u);
  EXPECT_EQ(coverage, 1u) << "once, with the trace's first batch";
  EXPECT_GE(stats.split, 5u) << "the trace took several batches";
  EXPECT_EQ(stats.rows_too_large, 0u);
  EXPECT_EQ(up->StatsFromAnyThread().batches_rejected, 0u);
}

// A batch the server refuses (a bad GPU record: 400; too large: 413) is
// dropped and counted alone: the window's other sources still arrive.
TEST(WindowBatchesTest, ARefusedBatchCostsOnlyItsOwnSource) {
  const Profile cpu = testing::MakeTestProfile();
  const Profile gpu = GpuTimeProfile(cpu);
  const GpuTrace trace = FloodTrace(3);
  const std::vector<MetricReading> metrics = {{"gpu_utilization", "percent", {{"gpu", "0"}}, 97.0, testing::kTestTimeNanos}};
  WindowBatchStats stats;
  auto batches = EncodeWindowBatches({&cpu, &gpu, &trace, &metrics}, {kAgentId, 0, "node-a"}, {},
                                     kDefaultMaxBatchBytes, &stats);
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  ASSERT_EQ(batches->size(), 4u);
  EXPECT_EQ((*batches)[0].source, WindowSource::kCpu);
  EXPECT_EQ((*batches)[1].source, WindowSource::kGpuTime);
  EXPECT_EQ((*batches)[2].source, WindowSource::kGpuTrace);
  EXPECT_EQ((*batches)[3].source, WindowSource::kGpuMetrics);
  EXPECT_EQ(stats.batches, 4u);
  EXPECT_EQ(stats.split, 0u);

  FakeIngestServer server;
  server.Script({200, 413, 400, 200});
  auto up = StartUploader(server.url());
  Post(*batches, up.get());
  ASSERT_TRUE(server.WaitForRequests(4));
  ASSERT_TRUE(server.WaitForStored(2));
  up->Stop();
  const std::vector<FakeIngestServer::Request> requests = server.requests();
  EXPECT_EQ(CpuSamples(requests[0].batch), testing::kTestTotalSamples);
  EXPECT_EQ(requests[3].batch.metric_points_size(), 1);
  EXPECT_EQ(server.stored_sequences(), (std::vector<uint64_t>{1, 4}));
  EXPECT_EQ(up->StatsFromAnyThread().batches_rejected, 2u);
}

// Off-CPU time goes in a batch of its own, as its own profile type with its
// wait_reason label, after the CPU profile.
TEST(WindowBatchesTest, OffCpuTimeIsItsOwnSourceAndType) {
  const Profile cpu = testing::MakeTestProfile();
  ProfileBuilder b(cpu.time_nanos, 0, 0);
  const uint64_t loc = b.InternSourceLocation(b.InternFunction("nap", "nap", "t.py"), 3, FrameKind::kPython);
  b.AddSample({loc}, 30'000'000, SampleLabels{kFloodPid, kFloodPid, "flood", "flood", {{"wait_reason", "sleep"}}});
  Profile off = b.Finish(cpu.duration_nanos);
  off.sample_types = {{"off_cpu", "nanoseconds"}};
  WindowSources sources{&cpu, nullptr, nullptr, nullptr};
  sources.off_cpu = &off;
  WindowBatchStats stats;
  auto batches = EncodeWindowBatches(sources, {kAgentId, 0, "node-a"}, {}, kDefaultMaxBatchBytes, &stats);
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  ASSERT_EQ(batches->size(), 2u);
  EXPECT_EQ((*batches)[0].source, WindowSource::kCpu);
  EXPECT_EQ((*batches)[1].source, WindowSource::kOffCpu);
  const v1::IngestBatch& batch = (*batches)[1].batch;
  ASSERT_EQ(batch.types_size(), 1);
  EXPECT_EQ(batch.strings(static_cast<int>(batch.types(0).name())), "off_cpu");
  EXPECT_EQ(batch.strings(static_cast<int>(batch.types(0).sample_unit())), "nanoseconds");
  ASSERT_EQ(batch.samples_size(), 1);
  EXPECT_EQ(batch.samples(0).value(), 30'000'000);
  bool labelled = false;
  for (const auto& set : batch.label_sets()) {
    for (const auto& l : set.labels()) {
      labelled |= batch.strings(static_cast<int>(l.key())) == "wait_reason" &&
                  batch.strings(static_cast<int>(l.value())) == "sleep";
    }
  }
  EXPECT_TRUE(labelled);
}

// Over the limit, a source is cut by rows: nothing lost, nothing twice,
// counters and coverage once, every batch under the limit.
TEST(WindowBatchesTest, ASourceOverTheLimitIsCutByRows) {
  Profile cpu = testing::MakeTestProfile();
  cpu.counters = {{"drop_counts_map_full", 3}, {"spool_dropped_batches", 1}};
  std::vector<MetricReading> metrics;
  for (int i = 0; i < 3000; ++i) {
    metrics.push_back({"gpu_power", "watts", {{"gpu", std::to_string(i % 8)}}, 100.0 + i, testing::kTestTimeNanos + i});
  }
  const GpuTrace trace = FloodTrace(40);
  constexpr size_t kLimit = 16 << 10;
  WindowBatchStats stats;
  auto batches = EncodeWindowBatches({&cpu, nullptr, &trace, &metrics}, {kAgentId, 0, "node-a"}, {}, kLimit, &stats);
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  std::map<WindowSource, int> per_source;
  int64_t cpu_samples = 0;
  size_t points = 0, activities = 0, coverage = 0, counters = 0;
  for (const WindowBatch& b : *batches) {
    EXPECT_LE(b.batch.ByteSizeLong(), kLimit);
    ++per_source[b.source];
    cpu_samples += CpuSamples(b.batch);
    points += b.batch.metric_points_size();
    activities += b.batch.gpu_activities_size();
    coverage += b.batch.gpu_trace_coverage_size();
    counters += b.batch.counters_size();
    if (b.source != WindowSource::kCpu) {
      EXPECT_EQ(b.batch.samples_size(), 0);
    }
  }
  EXPECT_EQ(per_source[WindowSource::kCpu], 1) << "small enough as it is";
  EXPECT_GT(per_source[WindowSource::kGpuTrace], 10);
  EXPECT_GT(per_source[WindowSource::kGpuMetrics], 1);
  EXPECT_EQ(cpu_samples, testing::kTestTotalSamples);
  EXPECT_EQ(points, 3000u);
  EXPECT_EQ(activities, 40u);
  EXPECT_EQ(coverage, 1u);
  EXPECT_EQ(counters, 2u);
  EXPECT_EQ(stats.batches, batches->size());
  EXPECT_EQ(stats.split, batches->size() - 3);

  // The CPU profile cut too, when it must be.
  WindowBatchStats small;
  auto whole = EncodeWindowBatches({&cpu, nullptr, nullptr, nullptr}, {kAgentId, 0, "node-a"}, {}, kLimit, &small);
  ASSERT_TRUE(whole.ok());
  ASSERT_EQ(whole->size(), 1u);
  const size_t limit = (*whole)[0].batch.ByteSizeLong() * 2 / 3;
  auto cut = EncodeWindowBatches({&cpu, nullptr, nullptr, nullptr}, {kAgentId, 0, "node-a"}, {}, limit, &small);
  ASSERT_TRUE(cut.ok());
  ASSERT_GT(cut->size(), 1u);
  int64_t total = 0;
  for (const WindowBatch& b : *cut) {
    EXPECT_EQ(b.source, WindowSource::kCpu);
    EXPECT_LE(b.batch.ByteSizeLong(), limit);
    total += CpuSamples(b.batch);
  }
  EXPECT_EQ(total, testing::kTestTotalSamples);
  EXPECT_EQ((*cut)[0].batch.counters_size(), 2) << "counters with the first";
  EXPECT_EQ((*cut)[1].batch.counters_size(), 0);

  // A row larger than the limit on its own is left out and counted.
  WindowBatchStats tiny;
  auto none = EncodeWindowBatches({&cpu, nullptr, &trace, nullptr}, {kAgentId, 0, "node-a"}, {}, 6000, &tiny);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(tiny.rows_too_large, 40u) << "each activity has 8 KB of names";
}

}  // namespace
}  // namespace warpscope
