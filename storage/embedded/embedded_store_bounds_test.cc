// Rows dated outside what the store keeps (storage/ingest_time_bounds.h):
// older than retention, or further ahead of the server's clock than
// max_future_skew_ns. They are left out at ingest and counted in the answer
// and in stats(); the rest of the batch is stored, and the batch counts as
// stored even when nothing of it was kept.
#include <gtest/gtest.h>

#include "storage/embedded/embedded_store_test_util.h"

namespace warpscope::embedded {
namespace {

using namespace testing;  // NOLINT
using storage::testing::BatchBuilder;
using storage::testing::OneSample;

constexpr int64_t kHour = 3600 * kSec;
constexpr int64_t kYear2200 = 7'258'118'400 * kSec;

struct Clocked {
  explicit Clocked(const std::string& data_dir) : options(ManualOptions(data_dir)) {
    options.retention_ns = kHour;
    options.now_ns = [this] { return now; };
  }
  int64_t now = kT0 + 10 * kHour;
  EmbeddedStoreOptions options;
};

// One node with a bad clock: its sample from 2200 must not keep the flush's
// segment (and every other node's rows in it) past retention for good.
TEST(EmbeddedStoreBoundsTest, FutureSampleIsDroppedCountedAndCannotPinASegment) {
  ScratchDir dir;
  Clocked clock(dir.data());
  auto store = MustOpen(clock.options);
  BatchBuilder b("agent-skewed", 1);
  const uint32_t cpu = b.Cpu();
  const uint32_t set = b.LabelSet({{"node", "n1"}});
  const uint32_t stack = b.SimpleStack({"main"});
  b.Sample(clock.now - 10 * kSec, cpu, set, stack, 3);
  b.Sample(kYear2200, cpu, set, stack, 5);
  b.Sample(clock.now + storage::kDefaultMaxFutureSkewNs, cpu, set, stack, 7);  // exactly at the bound: kept
  StatusOr<storage::IngestResult> r = store->Ingest(b.batch());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->duplicate);
  EXPECT_EQ(r->samples, 2u);
  EXPECT_EQ(r->dropped.too_new, 1u);
  EXPECT_EQ(r->dropped.too_old, 0u);
  EXPECT_EQ(store->stats().samples, 2u);
  EXPECT_EQ(store->stats().dropped_too_new, 1u);
  EXPECT_EQ(Total(*store), 10);
  ASSERT_TRUE(store->FlushNow().ok());
  EXPECT_EQ(store->state().segments, 1u);
  clock.now += 3 * kHour;
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  EXPECT_EQ(store->state().segments, 0u);
  EXPECT_EQ(Total(*store), 0);
}

// A server clock stepped forward by more than retention used to delete every
// segment for good at the next pass. Retention now stands aside while the
// clock is far ahead of the newest row (counted), the rows come back into
// answers when the clock does, and deleting resumes once rows arrive at
// times near the clock (it was right after all).
TEST(EmbeddedStoreBoundsTest, AClockSteppedForwardPausesRetentionInsteadOfDeletingEverything) {
  ScratchDir dir;
  Clocked clock(dir.data());
  clock.options.retention_clock_guard_ns = storage::kRetentionClockJumpNs;
  auto store = MustOpen(clock.options);
  auto ingest = [&](uint64_t seq, int64_t time, int64_t value) {
    BatchBuilder b("agent", seq);
    b.Sample(time, b.Cpu(), b.LabelSet({{"node", "n1"}}), b.SimpleStack({"main"}), value);
    ASSERT_TRUE(store->Ingest(b.batch()).ok());
    ASSERT_TRUE(store->FlushNow().ok());
  };
  ingest(1, clock.now - 10 * kSec, 3);
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  EXPECT_EQ(store->state().segments, 1u);
  EXPECT_EQ(store->stats().retention_paused, 0u) << "the clock agrees with the rows";

  clock.now += 2 * kHour;  // stepped forward, past the 1 h retention
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  EXPECT_EQ(store->state().segments, 1u) << "nothing deleted while the clock is 2 h ahead of every row";
  EXPECT_EQ(store->stats().retention_paused, 2u);

  clock.now -= 2 * kHour;  // stepped back
  EXPECT_EQ(Total(*store), 3) << "the rows are all there";

  clock.now += 2 * kHour;  // the jump was real: rows arrive at the new clock's times
  ingest(2, clock.now - 10 * kSec, 5);
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  EXPECT_EQ(store->state().segments, 1u) << "the old segment went, the new one stays";
  EXPECT_EQ(Total(*store), 5);
  EXPECT_EQ(store->stats().retention_paused, 2u);
}

// A sample already older than retention would be acknowledged and never
// shown: it is dropped and the answer says so.
TEST(EmbeddedStoreBoundsTest, SampleOlderThanRetentionIsDroppedAndCountedNotHidden) {
  ScratchDir dir;
  Clocked clock(dir.data());
  auto store = MustOpen(clock.options);
  StatusOr<storage::IngestResult> r = store->Ingest(OneSample("a", 1, clock.now - 2 * kHour, 4));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->duplicate);
  EXPECT_EQ(r->samples, 0u);
  EXPECT_EQ(r->dropped.too_old, 1u);
  EXPECT_EQ(r->dropped.total(), 1u);
  const storage::StoreStats stats = store->stats();
  EXPECT_EQ(stats.ingested_batches, 1u);
  EXPECT_EQ(stats.samples, 0u);
  EXPECT_EQ(stats.dropped_too_old, 1u);
  EXPECT_EQ(store->state().head_rows, 0u);
  // The batch counts as stored: its re-send is a duplicate, before and after
  // a restart and a flush.
  StatusOr<storage::IngestResult> again = store->Ingest(OneSample("a", 1, clock.now - 2 * kHour, 4));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->duplicate);
  store.reset();
  store = MustOpen(clock.options);
  again = store->Ingest(OneSample("a", 1, clock.now - 2 * kHour, 4));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->duplicate);
  ASSERT_TRUE(store->FlushNow().ok());
  EXPECT_EQ(store->state().segments, 0u);
  store.reset();
  store = MustOpen(clock.options);
  again = store->Ingest(OneSample("a", 1, clock.now - 2 * kHour, 4));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->duplicate);
  // The next batch, in bounds, is stored as usual.
  r = store->Ingest(OneSample("a", 2, clock.now - kSec, 4));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->samples, 1u);
  EXPECT_EQ(r->dropped.total(), 0u);
  EXPECT_EQ(Total(*store), 4);
}

// Metric points, GPU activities and coverage rows are bounded the same way,
// and the skew allowed is an option.
TEST(EmbeddedStoreBoundsTest, MetricPointsGpuActivitiesAndCoverageRowsAreBoundedToo) {
  ScratchDir dir;
  Clocked clock(dir.data());
  clock.options.max_future_skew_ns = 60 * kSec;
  auto store = MustOpen(clock.options);
  BatchBuilder b("agent-gpu", 1);
  const uint32_t set = b.LabelSet({{"node", "n1"}, {"pid", "1"}});
  const uint32_t util = b.MetricType("gpu_utilization", "percent");
  const int64_t ok = clock.now - kSec, old = clock.now - 2 * kHour, ahead = clock.now + 2 * 60 * kSec;
  for (int64_t t : {ok, old, ahead}) {
    b.MetricPoint(t, util, set, 50);
    b.GpuKernel(t, 1000, set, "gemm");
    b.GpuCoverage(t - t % kSec, set, 1, 1, t + kSec);
  }
  StatusOr<storage::IngestResult> r = store->Ingest(b.batch());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->metric_points, 1u);
  EXPECT_EQ(r->gpu_activities, 1u);
  EXPECT_EQ(r->dropped.too_old, 3u);
  EXPECT_EQ(r->dropped.too_new, 3u);
  EXPECT_EQ(store->stats().metric_points, 1u);
  EXPECT_EQ(store->stats().gpu_activities, 1u);
  storage::GpuActivityQuery q;
  q.from_ns = 0;
  q.to_ns = INT64_MAX;
  StatusOr<storage::GpuActivities> g = store->SelectGpuActivities(q);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->activities.size(), 1u);
  EXPECT_EQ(g->activities[0].start_ns, ok);
  ASSERT_EQ(g->coverage.size(), 1u);
  EXPECT_EQ(g->coverage[0].second_ns, ok - ok % kSec);
}

}  // namespace
}  // namespace warpscope::embedded
