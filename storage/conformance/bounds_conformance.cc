// Conformance: what a store keeps and how its sums behave at the edges of
// the data it accepts: rows outside the time bounds (dropped and counted),
// sums past INT64_MAX (saturated), and types of one name at different
// periods (each answer in the unit of the types it reads).
#include <cstdint>
#include <limits>
#include <map>
#include <tuple>

#include "storage/conformance/store_conformance.h"

namespace warpscope::storage::conformance {
namespace {

using testing::BatchBuilder;
using testing::kSec;
using testing::kT0;

constexpr int64_t kMinute = 60 * kSec;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST_P(StoreConformanceTest, RowsOutsideTheTimeBoundsAreDroppedAndCounted) {
  if (!GetParam().open_at) GTEST_SKIP() << "backend cannot pin its clock";
  const int64_t now = kT0 + 2 * kHour;
  OpenAt(now, kHour);
  BatchBuilder b("clocks", 1);
  const uint32_t cpu = b.Cpu();
  const uint32_t set = b.LabelSet({{"node", "skewed"}});
  const uint32_t stack = b.SimpleStack({"work"});
  b.Sample(now - 2 * kHour, cpu, set, stack, 100);         // older than retention
  b.Sample(now - 30 * kMinute, cpu, set, stack, 3);        // kept
  b.Sample(now + kMinute, cpu, set, stack, 4);             // kept: within the clock skew allowed
  b.Sample(now + 10 * kMinute, cpu, set, stack, 1000);     // too far ahead
  b.Sample(int64_t{7'258'118'400} * kSec, cpu, set, stack, 1000);  // the year 2200
  const uint32_t util = b.MetricType("gpu_utilization", "percent");
  b.MetricPoint(now - 3 * kHour, util, set, 50);  // too old
  b.MetricPoint(now - kMinute, util, set, 60);    // kept
  b.GpuKernel(now + kHour, 1000, set, "late_kernel");    // too new
  b.GpuKernel(now - kMinute, 1000, set, "kept_kernel");  // kept
  b.GpuCoverage(now - 5 * kHour, set, 1, 1, 0);  // too old
  StatusOr<IngestResult> r = store().Ingest(b.batch());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->duplicate);
  EXPECT_EQ(r->samples, 2u);
  EXPECT_EQ(r->metric_points, 1u);
  EXPECT_EQ(r->gpu_activities, 1u);
  EXPECT_EQ(r->dropped.too_old, 3u);
  EXPECT_EQ(r->dropped.too_new, 3u);
  EXPECT_EQ(store().stats().dropped_too_old, 3u);
  EXPECT_EQ(store().stats().dropped_too_new, 3u);
  // What was kept is all an answer over every time shows.
  EXPECT_EQ(Profile("", 0, kMax).total, 7);
  const std::vector<MetricSeries> points = Metric("gpu_utilization", "", now - 4 * kHour, now, kHour);
  ASSERT_EQ(points.size(), 1u);
  uint64_t count = 0;
  for (const MetricStep& p : points[0].points) count += p.count;
  EXPECT_EQ(count, 1u);
  const GpuActivities gpu = GpuTrace("", now - 4 * kHour, now + 2 * kHour);
  ASSERT_EQ(gpu.activities.size(), 1u);
  EXPECT_EQ(gpu.names[gpu.activities[0].name], "kept_kernel");

  // A batch with nothing inside the bounds is still a stored batch: its
  // re-send is a duplicate, not a second chance.
  v1::IngestBatch future = testing::OneSample("clocks", 2, now + 2 * kHour, 9);
  r = store().Ingest(future);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->duplicate);
  EXPECT_EQ(r->samples, 0u);
  EXPECT_EQ(r->dropped.too_new, 1u);
  r = store().Ingest(future);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->duplicate);
}

// Values are bounded per sample (and, for counts, per sample times its
// period), so only many of them can pass INT64_MAX: then every sum sticks at
// INT64_MAX (never wraps negative), the flame graph and the series agree,
// and the store keeps working. gpu_time (nanoseconds, no period) takes the
// largest values.
TEST_P(StoreConformanceTest, SumsPastInt64MaxSaturate) {
  const int64_t big = int64_t{1} << 50;  // the largest value a sample may have
  BatchBuilder b("saturate", 1);
  const uint32_t gpu = b.Type("gpu_time", "nanoseconds", 0);
  const uint32_t set = b.LabelSet({{"node", "n1"}});
  const uint32_t hot = b.SimpleStack({"hot"});
  const uint32_t cold = b.SimpleStack({"cold"});
  for (int i = 0; i < 8193; ++i) b.Sample(kT0, gpu, set, hot, big);  // 8193 * 2^50 > 2^63
  b.Sample(kT0, gpu, set, cold, 5);
  MustIngest(b.batch());
  BatchBuilder more("saturate", 2);
  more.Sample(kT0 + kSec, more.Type("gpu_time", "nanoseconds", 0), more.LabelSet({{"node", "n1"}}),
              more.SimpleStack({"hot"}), big);
  MustIngest(more.batch());
  const MergedProfile p = Profile("", kT0, kT0 + kHour, "gpu_time");
  std::map<std::string, int64_t> leaves = ByLeaf(p);
  EXPECT_EQ(leaves["hot"], kMax);
  EXPECT_EQ(leaves["cold"], 5);
  EXPECT_EQ(p.total, kMax);
  const std::vector<SeriesPoint> series = SeriesPoints("", kT0, kT0 + kHour, kHour, "gpu_time");
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].value, kMax);
  // Later batches are stored and shown as usual.
  MustIngest(testing::OneSample("saturate", 3, kT0 + 2 * kHour, 11, "n1", "after"));
  EXPECT_EQ(ByLeaf(Profile("", kT0 + 2 * kHour, kT0 + 3 * kHour))["after"], 11);
  Reopen();
  EXPECT_EQ(ByLeaf(Profile("", kT0, kT0 + kHour, "gpu_time"))["hot"], kMax);
}

// Two agents send "cpu" at different periods. An answer over one agent's
// series is in that agent's unit; only an answer mixing both is in
// nanoseconds, each count times its own period.
TEST_P(StoreConformanceTest, PeriodsStayWithTheirAgents) {
  constexpr int64_t k19Hz = 1'000'000'000 / 19, k99Hz = 1'000'000'000 / 99;
  for (const auto& [agent, node, period, value] :
       {std::tuple{"a", "node-a", k19Hz, int64_t{10}}, std::tuple{"b", "node-b", k99Hz, int64_t{4}}}) {
    BatchBuilder b(agent, 1);
    b.Sample(kT0, b.Type("cpu", "samples", period), b.LabelSet({{"node", node}}), b.SimpleStack({"work"}), value);
    MustIngest(b.batch());
  }
  const MergedProfile a = Profile("{node=\"node-a\"}", kT0, kT0 + kHour);
  EXPECT_EQ(a.type.sample_unit, "samples");
  EXPECT_EQ(a.type.period_nanos, k19Hz);
  EXPECT_EQ(a.total, 10);
  const MergedProfile b = Profile("{node=\"node-b\"}", kT0, kT0 + kHour);
  EXPECT_EQ(b.type.sample_unit, "samples");
  EXPECT_EQ(b.type.period_nanos, k99Hz);
  EXPECT_EQ(b.total, 4);
  const MergedProfile both = Profile("", kT0, kT0 + kHour);
  EXPECT_EQ(both.type.sample_unit, "nanoseconds");
  EXPECT_EQ(both.total, 10 * k19Hz + 4 * k99Hz);
  ProfileTypeInfo unit_a, unit_both;
  const std::vector<SeriesPoint> series_a =
      SeriesPoints("{node=\"node-a\"}", kT0, kT0 + kHour, kHour, "cpu", &unit_a);
  ASSERT_EQ(series_a.size(), 1u);
  EXPECT_EQ(series_a[0].value, 10);
  EXPECT_EQ(unit_a.sample_unit, "samples");
  EXPECT_EQ(unit_a.period_nanos, k19Hz);
  const std::vector<SeriesPoint> series_both = SeriesPoints("", kT0, kT0 + kHour, kHour, "cpu", &unit_both);
  ASSERT_EQ(series_both.size(), 1u);
  EXPECT_EQ(series_both[0].value, 10 * k19Hz + 4 * k99Hz);
  EXPECT_EQ(unit_both.sample_unit, "nanoseconds") << "a series answer says when it mixed periods";
}

}  // namespace
}  // namespace warpscope::storage::conformance
