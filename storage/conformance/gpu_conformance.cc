// Conformance: GPU activities and trace coverage (SelectGpuActivities).
#include <algorithm>

#include "storage/conformance/store_conformance.h"

namespace warpscope::storage::conformance {

using testing::BatchBuilder;
using testing::kSec;
using testing::kT0;

GpuActivities StoreConformanceTest::GpuTrace(const std::string& selector, int64_t from_ns, int64_t to_ns,
                                        size_t max_activities) {
  GpuActivityQuery q;
  q.from_ns = from_ns;
  q.to_ns = to_ns;
  q.max_activities = max_activities;
  StatusOr<Selector> sel = Selector::Parse(selector);
  EXPECT_TRUE(sel.ok()) << sel.status().ToString();
  if (sel.ok()) q.selector = *sel;
  StatusOr<GpuActivities> a = store_->SelectGpuActivities(q);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? std::move(a).value() : GpuActivities{};
}

namespace {

const Labels kProcA = {{"comm", "train"}, {"node", "n1"}, {"pid", "100"}};
const Labels kProcB = {{"comm", "infer"}, {"node", "n1"}, {"pid", "200"}};

// Two processes: A runs gemm x3 and a memcpy, B runs relu once.
BatchBuilder TwoProcesses(uint64_t sequence = 1, int64_t t0 = kT0) {
  BatchBuilder b("agent-gpu", sequence);
  const uint32_t a = b.LabelSet(kProcA);
  const uint32_t bset = b.LabelSet(kProcB);
  b.GpuKernel(t0 + 3'000, 500, a, "gemm", 7, 11);
  b.GpuKernel(t0 + 1'000, 700, a, "gemm", 7, 10).set_graph_id(5);
  b.GpuKernel(t0 + 2 * kSec, 300, a, "gemm", 9, 12);
  auto& copy = b.GpuKernel(t0 + 4'000, 900, a, "", 7, 13);
  copy.set_kind(v1::GPU_ACTIVITY_MEMCPY);
  copy.set_system_name(b.Str(""));
  copy.set_bytes(1 << 20);
  copy.set_copy_kind(1);
  b.GpuKernel(t0 + 2'000, 100, bset, "relu", 3, 1);
  b.GpuCoverage(t0, a, 10, 3, t0 + 5'000);
  b.GpuCoverage(t0 + 2 * kSec, a, 1, 1, t0 + 3 * kSec);
  b.GpuCoverage(t0, bset, 1, 1, t0 + kSec);
  return b;
}

std::string NameOf(const GpuActivities& g, const GpuActivity& a) { return g.names[a.name]; }

TEST_P(StoreConformanceTest, GpuActivitiesRoundTripEveryField) {
  BatchBuilder b("agent-gpu", 1);
  const uint32_t set = b.LabelSet(kProcA);
  const uint32_t stack = b.SimpleStack({"launch", "main"});
  auto& k = b.GpuKernel(kT0 + 5, 1234, set, "void gemm<float>(float*)", 14, 987654321012ull);
  k.set_system_name(b.Str("_Z4gemmIfEvPT_"));
  k.set_device(3);
  k.set_graph_id(42);
  k.set_grid_x(64);
  k.set_grid_y(2);
  k.set_grid_z(3);
  k.set_block_x(256);
  k.set_block_y(4);
  k.set_block_z(5);
  k.set_registers_per_thread(96);
  k.set_static_shared_bytes(4096);
  k.set_dynamic_shared_bytes(8192);
  k.set_stack(stack + 1);
  k.set_launch_start_unix_nanos(kT0 - 7'000);
  k.set_launch_duration_nanos(4'321);
  k.set_launch_tid(123456);
  k.set_launch_api(v1::GPU_LAUNCH_API_CU_LAUNCH_KERNEL_EX);
  auto& m = b.GpuKernel(kT0 + 6, 50, set, "", 2, 7);
  m.set_kind(v1::GPU_ACTIVITY_MEMSET);
  m.set_system_name(b.Str(""));
  m.set_bytes(uint64_t{5} << 33);
  m.set_copy_kind(0);
  MustIngest(b.batch());

  const GpuActivities g = GpuTrace("", kT0, kT0 + kSec);
  ASSERT_EQ(g.activities.size(), 2u);
  ASSERT_EQ(g.label_sets, std::vector<Labels>{kProcA});
  EXPECT_TRUE(std::is_sorted(g.names.begin(), g.names.end()));
  const GpuActivity& a = g.activities[0];
  EXPECT_EQ(a.start_ns, kT0 + 5);
  EXPECT_EQ(a.duration_ns, 1234);
  EXPECT_EQ(a.labels, 0u);
  EXPECT_EQ(NameOf(g, a), "void gemm<float>(float*)");
  EXPECT_EQ(g.names[a.system_name], "_Z4gemmIfEvPT_");
  EXPECT_EQ(a.kind, GpuActivityKind::kKernel);
  EXPECT_EQ(a.device, 3u);
  EXPECT_EQ(a.stream, 14u);
  EXPECT_EQ(a.correlation_id, 987654321012ull);
  EXPECT_EQ(a.graph_id, 42u);
  EXPECT_EQ(a.grid[0], 64u);
  EXPECT_EQ(a.grid[1], 2u);
  EXPECT_EQ(a.grid[2], 3u);
  EXPECT_EQ(a.block[0], 256u);
  EXPECT_EQ(a.block[1], 4u);
  EXPECT_EQ(a.block[2], 5u);
  EXPECT_EQ(a.registers_per_thread, 96u);
  EXPECT_EQ(a.static_shared_bytes, 4096u);
  EXPECT_EQ(a.dynamic_shared_bytes, 8192u);
  EXPECT_EQ(a.launch_start_ns, kT0 - 7'000);
  EXPECT_EQ(a.launch_duration_ns, 4'321);
  EXPECT_EQ(a.launch_tid, 123456u);
  EXPECT_EQ(a.launch_api, GpuLaunchApi::kCuLaunchKernelEx);
  const GpuActivity& s = g.activities[1];
  EXPECT_EQ(s.kind, GpuActivityKind::kMemset);
  EXPECT_EQ(s.launch_start_ns, 0);
  EXPECT_EQ(s.launch_api, GpuLaunchApi::kUnknown);
  EXPECT_EQ(NameOf(g, s), "");
  EXPECT_EQ(s.bytes, uint64_t{5} << 33);
  EXPECT_EQ(s.stream, 2u);
}

TEST_P(StoreConformanceTest, GpuActivitiesSortedByStartWithLabelsAndCoverage) {
  MustIngest(TwoProcesses().batch());
  const GpuActivities g = GpuTrace("", kT0, kT0 + 10 * kSec);
  ASSERT_EQ(g.activities.size(), 5u);
  ASSERT_EQ(g.label_sets, (std::vector<Labels>{kProcB, kProcA}));  // sorted: comm=infer < comm=train
  std::vector<int64_t> starts;
  for (const GpuActivity& a : g.activities) starts.push_back(a.start_ns - kT0);
  EXPECT_EQ(starts, (std::vector<int64_t>{1'000, 2'000, 3'000, 4'000, 2 * kSec}));
  EXPECT_EQ(NameOf(g, g.activities[1]), "relu");
  EXPECT_EQ(g.activities[1].labels, 0u);
  EXPECT_EQ(g.activities[0].graph_id, 5u);
  EXPECT_EQ(g.activities[3].kind, GpuActivityKind::kMemcpy);
  EXPECT_EQ(g.activities[3].bytes, 1u << 20);
  ASSERT_EQ(g.coverage.size(), 3u);
  EXPECT_EQ(g.coverage[0], (GpuTraceCoverage{0, kT0, 1, 1, kT0 + kSec}));
  EXPECT_EQ(g.coverage[1], (GpuTraceCoverage{1, kT0, 10, 3, kT0 + 5'000}));
  EXPECT_EQ(g.coverage[2], (GpuTraceCoverage{1, kT0 + 2 * kSec, 1, 1, kT0 + 3 * kSec}));
}

TEST_P(StoreConformanceTest, GpuRangeIsHalfOpenOnStartAndCoverageOverlaps) {
  MustIngest(TwoProcesses().batch());
  // [t0+2000, t0+4000): 2000 and 3000, not 4000.
  GpuActivities g = GpuTrace("", kT0 + 2'000, kT0 + 4'000);
  ASSERT_EQ(g.activities.size(), 2u);
  EXPECT_EQ(g.activities[0].start_ns, kT0 + 2'000);
  EXPECT_EQ(g.activities[1].start_ns, kT0 + 3'000);
  // The second starting at t0 overlaps the range; the one at t0+2s does not.
  EXPECT_EQ(g.coverage.size(), 2u);
  for (const GpuTraceCoverage& c : g.coverage) EXPECT_EQ(c.second_ns, kT0);
  g = GpuTrace("", kT0 + 2 * kSec, kT0 + 2 * kSec + 1);
  ASSERT_EQ(g.activities.size(), 1u);
  ASSERT_EQ(g.coverage.size(), 1u);
  EXPECT_EQ(g.coverage[0].second_ns, kT0 + 2 * kSec);
  EXPECT_TRUE(GpuTrace("", kT0 + 5 * kSec, kT0 + 6 * kSec).activities.empty());
  EXPECT_TRUE(GpuTrace("", kT0 + 3'000, kT0 + 3'000).activities.empty());  // empty range
}

TEST_P(StoreConformanceTest, GpuSelectorNarrowsToProcesses) {
  MustIngest(TwoProcesses().batch());
  GpuActivities g = GpuTrace("{pid=\"200\"}", kT0, kT0 + 10 * kSec);
  ASSERT_EQ(g.activities.size(), 1u);
  EXPECT_EQ(NameOf(g, g.activities[0]), "relu");
  EXPECT_EQ(g.label_sets, std::vector<Labels>{kProcB});
  ASSERT_EQ(g.coverage.size(), 1u);
  g = GpuTrace("{comm=~\"tr.*\"}", kT0, kT0 + 10 * kSec);
  EXPECT_EQ(g.activities.size(), 4u);
  EXPECT_EQ(g.coverage.size(), 2u);
  g = GpuTrace("{node=\"n2\"}", kT0, kT0 + 10 * kSec);
  EXPECT_TRUE(g.activities.empty());
  EXPECT_TRUE(g.label_sets.empty());
}

TEST_P(StoreConformanceTest, GpuMaxActivitiesIsInvalidArgumentPastIt) {
  MustIngest(TwoProcesses().batch());
  EXPECT_EQ(GpuTrace("", kT0, kT0 + 10 * kSec, 5).activities.size(), 5u);
  GpuActivityQuery q;
  q.from_ns = kT0;
  q.to_ns = kT0 + 10 * kSec;
  q.max_activities = 4;
  StatusOr<GpuActivities> r = store().SelectGpuActivities(q);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("range too long"), std::string::npos) << r.status().message();
}

TEST_P(StoreConformanceTest, GpuDuplicateBatchIsNotStoredTwice) {
  MustIngest(TwoProcesses().batch());
  StatusOr<IngestResult> again = store().Ingest(TwoProcesses().batch());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->duplicate);
  EXPECT_EQ(again->gpu_activities, 0u);
  const GpuActivities g = GpuTrace("", kT0, kT0 + 10 * kSec);
  EXPECT_EQ(g.activities.size(), 5u);
  EXPECT_EQ(g.coverage[1].recorded, 10u);
  // A later batch for the same second adds to its coverage.
  BatchBuilder b("agent-gpu", 2);
  b.GpuCoverage(kT0, b.LabelSet(kProcA), 5, 5, kT0 + 4'000);
  MustIngest(b.batch());
  const GpuActivities g2 = GpuTrace("{pid=\"100\"}", kT0, kT0 + kSec);
  ASSERT_EQ(g2.coverage.size(), 1u);
  EXPECT_EQ(g2.coverage[0], (GpuTraceCoverage{0, kT0, 15, 8, kT0 + 4'000}));
}

TEST_P(StoreConformanceTest, GpuActivitiesSurviveReopen) {
  MustIngest(TwoProcesses(1).batch());
  MustIngest(TwoProcesses(2, kT0 + 10 * kSec).batch());
  const GpuActivities before = GpuTrace("", kT0, kT0 + 20 * kSec);
  ASSERT_EQ(before.activities.size(), 10u);
  Reopen();
  const GpuActivities after = GpuTrace("", kT0, kT0 + 20 * kSec);
  EXPECT_EQ(after.activities, before.activities);
  EXPECT_EQ(after.names, before.names);
  EXPECT_EQ(after.label_sets, before.label_sets);
  EXPECT_EQ(after.coverage, before.coverage);
  // The re-send of an acknowledged batch is still a duplicate after reopening.
  StatusOr<IngestResult> again = store().Ingest(TwoProcesses(2, kT0 + 10 * kSec).batch());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->duplicate);
}

TEST_P(StoreConformanceTest, GpuBadIndexesAreRejectedAndNothingStored) {
  BatchBuilder b("agent-bad", 1);
  const uint32_t set = b.LabelSet(kProcA);
  b.GpuKernel(kT0, 10, set, "ok");
  b.GpuKernel(kT0, 10, set + 5, "bad");
  StatusOr<IngestResult> r = store().Ingest(b.batch());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("gpu_activities[1].label_set"), std::string::npos) << r.status().message();

  BatchBuilder n("agent-bad", 1);
  n.GpuKernel(kT0, -1, n.LabelSet(kProcA), "negative");
  r = store().Ingest(n.batch());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("duration_nanos"), std::string::npos) << r.status().message();
  EXPECT_TRUE(GpuTrace("", kT0 - kSec, kT0 + kSec).activities.empty());
  // The agent's sequence was not used up.
  MustIngest(TwoProcesses(1).batch());
}

}  // namespace
}  // namespace warpscope::storage::conformance
