// Queries stop at their deadline (storage/query_context.h) with
// DeadlineExceeded, whether the rows are in the head or in segments, instead
// of holding a server worker for as long as the scan takes.
#include <gtest/gtest.h>

#include <chrono>

#include "storage/embedded/embedded_store_test_util.h"

namespace warpscope::embedded {
namespace {

using namespace testing;  // NOLINT
using storage::QueryContext;
using storage::testing::BatchBuilder;

// Calls every query of the store with `context`; returns each one's status.
std::vector<std::pair<std::string, Status>> QueryAll(EmbeddedProfileStore& store, QueryContext* context) {
  std::vector<std::pair<std::string, Status>> out;
  storage::ProfileQuery profile;
  profile.type = "cpu";
  profile.from_ns = kT0 - 100 * kSec;
  profile.to_ns = kT0 + 100 * kSec;
  profile.context = context;
  out.emplace_back("SelectProfile", store.SelectProfile(profile).status());
  storage::SeriesQuery series;
  series.profile = profile;
  series.step_ns = kSec;
  out.emplace_back("SelectSeries", store.SelectSeries(series).status());
  storage::TimelineQuery timeline;
  timeline.profile = profile;
  out.emplace_back("SelectStackTimeline", store.SelectStackTimeline(timeline).status());
  storage::SeriesLabelsQuery labels;
  labels.from_ns = profile.from_ns;
  labels.to_ns = profile.to_ns;
  labels.context = context;
  out.emplace_back("SelectSeriesLabels", store.SelectSeriesLabels(labels).status());
  storage::MetricQuery metric;
  metric.name = "gpu_utilization";
  metric.from_ns = profile.from_ns;
  metric.to_ns = profile.to_ns;
  metric.step_ns = kSec;
  metric.context = context;
  out.emplace_back("SelectMetricSeries", store.SelectMetricSeries(metric).status());
  storage::GpuActivityQuery gpu;
  gpu.from_ns = profile.from_ns;
  gpu.to_ns = profile.to_ns;
  gpu.context = context;
  out.emplace_back("SelectGpuActivities", store.SelectGpuActivities(gpu).status());
  return out;
}

TEST(EmbeddedStoreDeadlineTest, AnExpiredDeadlineStopsEveryQuery) {
  ScratchDir dir;
  EmbeddedStoreOptions options = ManualOptions(dir.data());
  auto store = MustOpen(options);
  // Rows in a segment and in the head.
  BatchBuilder b("agent-1", 1);
  const uint32_t cpu = b.Cpu();
  const uint32_t set = b.LabelSet({{"node", "n1"}, {"gpu", "0"}});
  const uint32_t stack = b.SimpleStack({"main"});
  const uint32_t util = b.MetricType("gpu_utilization", "percent");
  for (int i = 0; i < 3; ++i) {
    b.Sample(kT0 + i * kSec, cpu, set, stack, 1);
    b.MetricPoint(kT0 + i * kSec, util, set, 50);
    b.GpuKernel(kT0 + i * kSec, 1000, set, "gemm");
    b.GpuCoverage(kT0 + i * kSec, set, 1, 1, kT0 + (i + 1) * kSec);
  }
  ASSERT_TRUE(store->Ingest(b.batch()).ok());
  ASSERT_TRUE(store->FlushNow().ok());
  b.batch().set_sequence(2);
  ASSERT_TRUE(store->Ingest(b.batch()).ok());

  // Without a deadline (and with one far away) every query answers.
  QueryContext later = QueryContext::WithTimeout(std::chrono::hours(1));
  for (QueryContext* context : {static_cast<QueryContext*>(nullptr), &later}) {
    for (const auto& [name, status] : QueryAll(*store, context)) EXPECT_TRUE(status.ok()) << name << ": " << status.ToString();
  }
  QueryContext expired(QueryContext::Clock::now() - std::chrono::seconds(1));
  for (const auto& [name, status] : QueryAll(*store, &expired)) {
    EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << name << ": " << status.ToString();
  }
  QueryContext cancelled;
  cancelled.Cancel();
  for (const auto& [name, status] : QueryAll(*store, &cancelled)) {
    EXPECT_EQ(status.code(), StatusCode::kCancelled) << name << ": " << status.ToString();
  }
}

}  // namespace
}  // namespace warpscope::embedded
