// What queries cost on a realistic hour: 20 nodes x 500 stacks (depth 20,
// 2 processes each) every 10 s = 3.6M rows in one compacted segment, the
// shape an hour has once compaction has run. Prints the numbers that
// docs/design/server.md quotes; the bounds only catch gross regressions.
#include <chrono>
#include <cstdio>

#include "storage/embedded/embedded_store_test_util.h"

namespace warpscope::embedded {
namespace {

using namespace testing;  // NOLINT
using storage::testing::NodeBatch;

constexpr int kNodes = 20, kStacks = 500, kDepth = 20, kSteps = 360;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(EmbeddedStoreSpeedTest, HourOfTwentyNodesQueriesWellUnderASecond) {
  ScratchDir dir;
  EmbeddedStoreOptions options = ManualOptions(dir.data());
  std::vector<SampleRow> step_rows;
  {
    auto store = MustOpen(options);
    auto start = std::chrono::steady_clock::now();
    for (int n = 0; n < kNodes; ++n) {
      ASSERT_TRUE(store->Ingest(NodeBatch("node" + std::to_string(n), 1, kT0, kStacks, kDepth)).ok());
    }
    const double new_content = SecondsSince(start) / kNodes;
    start = std::chrono::steady_clock::now();
    for (int n = 0; n < kNodes; ++n) {
      ASSERT_TRUE(store->Ingest(NodeBatch("node" + std::to_string(n), 2, kT0, kStacks, kDepth)).ok());
    }
    const double known_content = SecondsSince(start) / kNodes;
    std::printf("ingest, one node's 10 s batch (%d stacks x depth %d): %.1f ms all new, %.1f ms all known\n", kStacks,
                kDepth, new_content * 1e3, known_content * 1e3);
    ASSERT_TRUE(store->FlushNow().ok());
    ASSERT_EQ(store->state().segment_files.size(), 1u);
    // One step's rows in global ids, read back from the flushed segment.
    StatusOr<std::unique_ptr<SegmentReader>> reader =
        SegmentReader::Open(dir.data() + "/segments/" + store->state().segment_files[0]);
    ASSERT_TRUE(reader.ok());
    ASSERT_TRUE((*reader)->Scan(INT64_MIN, INT64_MAX, nullptr, 1, [&](const SampleRow& r) {
      step_rows.push_back(r);
    }).ok());
  }
  ASSERT_EQ(step_rows.size(), static_cast<size_t>(kNodes * kStacks));  // both batches summed per (series, stack)
  // Replace the flushed segment by the whole hour under the same WAL range.
  std::vector<SampleRow> hour;
  hour.reserve(step_rows.size() * kSteps);
  for (int k = 0; k < kSteps; ++k) {
    for (SampleRow r : step_rows) {
      r.time_ns = kT0 + k * 10 * kSec;
      r.value /= 2;
      hour.push_back(r);
    }
  }
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(WriteSegment(dir.data() + "/segments/" + SegmentFileName(1, 2 * kNodes), std::move(hour)).ok());
  std::printf("writing the hour's segment (%d rows): %.2f s\n", kNodes * kStacks * kSteps, SecondsSince(start));

  auto store = MustOpen(options);
  const int64_t kHour = 3600 * kSec;
  auto timed = [&](const char* what, auto fn) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    const double cold = SecondsSince(t0);
    t0 = std::chrono::steady_clock::now();
    fn();
    const double warm = SecondsSince(t0);
    std::printf("%-52s %7.1f ms first, %7.1f ms again (stacks cached)\n", what, cold * 1e3, warm * 1e3);
    EXPECT_LT(warm, 3.0) << what;
  };
  storage::ProfileQuery all;
  all.from_ns = kT0;
  all.to_ns = kT0 + kHour;
  timed("profile, 1 h, all 20 nodes (10k stacks)", [&] {
    StatusOr<storage::MergedProfile> p = store->SelectProfile(all);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->stacks.size(), static_cast<size_t>(kNodes * kStacks));
    EXPECT_EQ(p->series, static_cast<uint64_t>(kNodes * 2));
  });
  storage::ProfileQuery one = all;
  one.selector = *Selector::Parse("{node=\"node7\"}");
  timed("profile, 1 h, one node", [&] {
    StatusOr<storage::MergedProfile> p = store->SelectProfile(one);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->stacks.size(), static_cast<size_t>(kStacks));
  });
  storage::ProfileQuery regex = all;
  regex.selector = *Selector::Parse("{node=~\"node1.*\", comm!=\"proc0\"}");
  timed("profile, 1 h, regex over nodes, one process each", [&] { ASSERT_TRUE(store->SelectProfile(regex).ok()); });
  storage::ProfileQuery recent = all;
  recent.from_ns = kT0 + kHour - 300 * kSec;
  timed("profile, last 5 min, all nodes", [&] { ASSERT_TRUE(store->SelectProfile(recent).ok()); });
  storage::SeriesQuery series;
  series.profile = all;
  series.step_ns = 60 * kSec;
  series.group_by = {"node"};
  timed("series, 1 h, step 1 min, by node", [&] {
    StatusOr<std::vector<storage::Series>> s = store->SelectSeries(series);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->size(), static_cast<size_t>(kNodes));
  });
  storage::SeriesLabelsQuery targets;
  targets.from_ns = kT0;
  targets.to_ns = kT0 + kHour;
  timed("series labels (targets), 1 h", [&] {
    StatusOr<std::vector<storage::Labels>> l = store->SelectSeriesLabels(targets);
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->size(), static_cast<size_t>(kNodes * 2));
  });
}

}  // namespace
}  // namespace warpscope::embedded
