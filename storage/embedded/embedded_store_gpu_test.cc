// The embedded store's GPU activities through its own machinery: WAL record
// (version 2, and version 1 records still read), flush, compaction,
// retention. The interface-level behaviour is in conformance/gpu_conformance.cc.
#include <gtest/gtest.h>

#include "storage/embedded/embedded_store_test_util.h"
#include "storage/embedded/head_record.h"

namespace warpscope::embedded {
namespace {

using storage::testing::BatchBuilder;
using testing::kSec;
using testing::kT0;
using testing::ManualOptions;
using testing::MustOpen;
using testing::ScratchDir;

// One process, `kernels` kernels of 1..kernels us starting at `t`, one coverage row.
v1::IngestBatch KernelBatch(uint64_t sequence, int64_t t, int kernels) {
  BatchBuilder b("agent-gpu", sequence);
  const uint32_t set = b.LabelSet({{"comm", "train"}, {"node", "n1"}, {"pid", "1"}});
  for (int i = 0; i < kernels; ++i) {
    b.GpuKernel(t + i * 1000, (i + 1) * 1000, set, i % 2 ? "gemm" : "relu", 7, sequence * 1000 + i);
  }
  b.GpuCoverage(t - t % kSec, set, kernels + 1, kernels, t + kernels * 1000);
  return b.batch();
}

storage::GpuActivities Select(EmbeddedProfileStore& store, int64_t from = 0, int64_t to = INT64_MAX) {
  storage::GpuActivityQuery q;
  q.from_ns = from;
  q.to_ns = to;
  StatusOr<storage::GpuActivities> g = store.SelectGpuActivities(q);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? std::move(g).value() : storage::GpuActivities{};
}

TEST(EmbeddedStoreGpuTest, ActivitiesGoThroughFlushAndCompactionUnchanged) {
  ScratchDir dir;
  EmbeddedStoreOptions options = ManualOptions(dir.data());
  options.compaction.min_inputs = 2;
  auto store = MustOpen(options);
  for (uint64_t seq = 1; seq <= 4; ++seq) {
    ASSERT_TRUE(store->Ingest(KernelBatch(seq, kT0 + static_cast<int64_t>(seq) * 10 * kSec, 50)).ok());
    if (seq == 2) ASSERT_TRUE(store->FlushNow().ok());
  }
  const storage::GpuActivities in_head = Select(*store);
  ASSERT_EQ(in_head.activities.size(), 200u);
  ASSERT_EQ(in_head.coverage.size(), 4u);
  ASSERT_TRUE(store->FlushNow().ok());
  EXPECT_EQ(store->state().segments, 2u);
  EXPECT_EQ(store->state().head_rows, 0u);
  EXPECT_EQ(Select(*store).activities, in_head.activities);
  ASSERT_TRUE(store->CompactNow().ok());
  EXPECT_EQ(store->state().segments, 1u);
  EXPECT_EQ(store->state().segment_rows, 204u);  // GPU-only segments: activities + coverage rows
  const storage::GpuActivities compacted = Select(*store);
  EXPECT_EQ(compacted.activities, in_head.activities);
  EXPECT_EQ(compacted.coverage, in_head.coverage);
  EXPECT_EQ(compacted.names, in_head.names);
  store.reset();
  store = MustOpen(options);
  EXPECT_EQ(Select(*store).activities, in_head.activities);
  // A range inside one batch reads only what it needs and edges are exact.
  EXPECT_EQ(Select(*store, kT0 + 20 * kSec, kT0 + 20 * kSec + 5000).activities.size(), 5u);
}

TEST(EmbeddedStoreGpuTest, RetentionKeepsRecentGpuOnlySegmentsAndDropsOldOnes) {
  ScratchDir dir;
  int64_t now = kT0 + 100 * kSec;
  EmbeddedStoreOptions options = ManualOptions(dir.data());
  options.retention_ns = 1800 * kSec;
  options.now_ns = [&] { return now; };
  auto store = MustOpen(options);
  ASSERT_TRUE(store->Ingest(KernelBatch(1, kT0, 10)).ok());
  ASSERT_TRUE(store->FlushNow().ok());
  now = kT0 + 3600 * kSec;  // batch 1 is past retention now
  ASSERT_TRUE(store->Ingest(KernelBatch(2, kT0 + 3000 * kSec, 10)).ok());
  ASSERT_TRUE(store->FlushNow().ok());
  EXPECT_EQ(Select(*store).activities.size(), 10u);  // old rows hidden before retention runs
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  EXPECT_EQ(store->state().segments, 1u);
  EXPECT_EQ(Select(*store).activities.size(), 10u);
  now += 3600 * kSec;
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  EXPECT_EQ(store->state().segments, 0u);
  EXPECT_TRUE(Select(*store).activities.empty());
}

TEST(EmbeddedStoreGpuTest, UnflushedActivitiesSurviveACrash) {
  ScratchDir dir;
  const EmbeddedStoreOptions options = ManualOptions(dir.data());  // no flush at close: like kill -9
  auto store = MustOpen(options);
  ASSERT_TRUE(store->Ingest(KernelBatch(1, kT0, 20)).ok());
  store.reset();
  store = MustOpen(options);
  EXPECT_EQ(Select(*store).activities.size(), 20u);
  StatusOr<storage::IngestResult> again = store->Ingest(KernelBatch(1, kT0, 20));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->duplicate);
  EXPECT_EQ(store->stats().gpu_activities, 0u);
}

TEST(EmbeddedStoreGpuTest, HeadRecordCarriesGpuRowsAndReadsVersions1And2) {
  GpuRows gpu;
  GpuActivityRow a;
  a.start_ns = kT0;
  a.duration_ns = 5;
  a.series_id = 3;
  a.name_id = 9;
  a.system_name_id = 10;
  a.stack_id = 1ull << 40;
  a.correlation_id = 77;
  a.graph_id = 2;
  a.bytes = 1ull << 35;
  a.device = 1;
  a.stream = 13;
  a.grid[2] = 4;
  a.block[0] = 1024;
  a.registers_per_thread = 255;
  a.static_shared_bytes = 48 << 10;
  a.dynamic_shared_bytes = 1;
  a.copy_kind = 8;
  a.kind = 1;
  a.launch_start_ns = kT0 - 3000;
  a.launch_duration_ns = 1200;
  a.launch_tid = 4242;
  a.launch_api = 5;
  gpu.activities = {a, GpuActivityRow{}, a, a};
  gpu.activities[2].start_ns = kT0 - 100;
  gpu.activities[3].launch_start_ns = kT0 + 1;  // a skewed clock: the launch after the start
  gpu.coverage = {{kT0, 3, 10, 4, kT0 + 77}, {kT0 - kSec, 1, 0, 0, kT0}};
  const std::vector<SampleRow> rows = {{kT0, 3, 9, 5, 1}};
  const std::string payload = EncodeHeadRecord("agent-g", 7, rows, gpu);
  StatusOr<HeadRecord> back = DecodeHeadRecord(payload, "test");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->rows, rows);
  EXPECT_EQ(back->gpu.activities, gpu.activities);
  EXPECT_EQ(back->gpu.coverage, gpu.coverage);
  for (size_t cut = 9; cut < payload.size(); cut += 7) {
    EXPECT_FALSE(DecodeHeadRecord(payload.substr(0, cut), "cut").ok()) << cut;
  }
  // A version-1 record (written before GPU activities) has none.
  const std::string v1_bytes("WSHR\x01\x00\x00\x00\x01" "a\x07\x01\x01\x02\x03\x0a\x05", 17);
  StatusOr<HeadRecord> old = DecodeHeadRecord(v1_bytes, "v1");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_TRUE(old->gpu.empty());
  // A version-2 record: activities without the launch columns (read as 0).
  GpuRows plain;
  plain.activities = {a};
  plain.activities[0].launch_start_ns = plain.activities[0].launch_duration_ns = 0;
  plain.activities[0].launch_tid = plain.activities[0].launch_api = 0;
  std::string v2_bytes = EncodeHeadRecord("agent-g", 8, {}, plain);
  ASSERT_EQ(v2_bytes.substr(v2_bytes.size() - 5), std::string(5, '\0'));  // 4 launch columns of one row, no coverage
  v2_bytes.erase(v2_bytes.size() - 5, 4);
  v2_bytes[4] = 2;
  StatusOr<HeadRecord> v2 = DecodeHeadRecord(v2_bytes, "v2");
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(v2->gpu.activities, plain.activities);
}

}  // namespace
}  // namespace warpscope::embedded
