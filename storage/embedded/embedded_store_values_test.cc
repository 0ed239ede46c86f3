// Values at the edges of int64 and mixed sampling periods through the whole
// store: merges at flush and compaction, rollups and every query sum
// saturate instead of failing or wrapping, and an answer's unit comes from
// the types whose rows it actually sums.
#include <gtest/gtest.h>

#include <limits>

#include "storage/embedded/embedded_store_test_util.h"

namespace warpscope::embedded {
namespace {

using namespace testing;  // NOLINT
using storage::testing::BatchBuilder;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

void MustIngest(EmbeddedProfileStore& store, const v1::IngestBatch& batch) {
  StatusOr<storage::IngestResult> r = store.Ingest(batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE(r->duplicate);
}

// Samples of (node=n1, [main]) at the given times and values, of a cpu type
// without a period (so that count x period bounds nothing beyond the value).
v1::IngestBatch Samples(uint64_t sequence, const std::vector<std::pair<int64_t, int64_t>>& samples) {
  BatchBuilder b("agent-big", sequence);
  const uint32_t cpu = b.Type("cpu", "samples", 0);
  const uint32_t set = b.LabelSet({{"node", "n1"}});
  const uint32_t stack = b.SimpleStack({"main"});
  for (const auto& [time, value] : samples) b.Sample(time, cpu, set, stack, value);
  return b.batch();
}

storage::MergedProfile Profile(EmbeddedProfileStore& store, const std::string& selector, int64_t from, int64_t to) {
  storage::ProfileQuery q;
  q.type = "cpu";
  q.from_ns = from;
  q.to_ns = to;
  q.selector = *Selector::Parse(selector);
  StatusOr<storage::MergedProfile> p = store.SelectProfile(q);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? std::move(p).value() : storage::MergedProfile{};
}

// The sum of every point of every series (saturating, as the store sums),
// and whether any point was negative.
struct SeriesTotal {
  int64_t total = 0;
  bool negative = false;
};
SeriesTotal SeriesSum(EmbeddedProfileStore& store, const std::string& selector, int64_t from, int64_t to,
                      int64_t step) {
  storage::SeriesQuery q;
  q.profile.type = "cpu";
  q.profile.from_ns = from;
  q.profile.to_ns = to;
  q.profile.selector = *Selector::Parse(selector);
  q.step_ns = step;
  StatusOr<std::vector<storage::Series>> series = store.SelectSeries(q);
  EXPECT_TRUE(series.ok()) << series.status().ToString();
  SeriesTotal out;
  if (!series.ok()) return out;
  for (const storage::Series& s : *series) {
    for (const storage::SeriesPoint& p : s.points) {
      out.negative |= p.value < 0;
      out.total = (p.value > 0 && out.total > kMax - p.value) ? kMax : out.total + p.value;
    }
  }
  return out;
}

int64_t TimelineTotal(EmbeddedProfileStore& store, int64_t from, int64_t to) {
  storage::TimelineQuery q;
  q.profile.type = "cpu";
  q.profile.from_ns = from;
  q.profile.to_ns = to;
  StatusOr<storage::StackTimeline> t = store.SelectStackTimeline(q);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? t->profile.total : -1;
}

// Data already on disk (or legal large values under raised limits) must
// never stop a flush or a compaction, and answers stick at INT64_MAX.
TEST(EmbeddedStoreValuesTest, Int64MaxSamplesOfOneKeySaturateThroughFlushCompactionAndQueries) {
  ScratchDir dir;
  EmbeddedStoreOptions options = ManualOptions(dir.data());
  options.limits.max_sample_value = kMax;
  options.compaction.min_inputs = 2;
  options.min_rollup_input_rows = 1;
  options.min_rollup_reduction = 2;  // two times of one (series, stack): a rollup of one row
  auto store = MustOpen(options);
  const int64_t from = kT0, to = kT0 + 10 * kSec;
  auto expect_saturated = [&](const char* when) {
    SCOPED_TRACE(when);
    const storage::MergedProfile p = Profile(*store, "", from, to);
    EXPECT_EQ(p.total, kMax);
    ASSERT_EQ(p.stacks.size(), 1u);
    EXPECT_EQ(p.stacks[0].value, kMax);
    const SeriesTotal s = SeriesSum(*store, "", from, to, 10 * kSec);
    EXPECT_FALSE(s.negative);
    EXPECT_EQ(s.total, p.total);  // the profile and the series agree
    EXPECT_EQ(SeriesSum(*store, "", from, to, kSec).total, kMax);
    EXPECT_EQ(TimelineTotal(*store, from, to), kMax);
  };

  // Two samples of one key in one batch.
  MustIngest(*store, Samples(1, {{kT0, kMax}, {kT0, kMax}}));
  expect_saturated("in the head");
  ASSERT_TRUE(store->FlushNow().ok());
  expect_saturated("one batch flushed");

  // The same key in two more batches, each landing in its own flush, and a
  // second time of the key so that the rollup sums across time.
  MustIngest(*store, Samples(2, {{kT0, kMax}}));
  ASSERT_TRUE(store->FlushNow().ok());
  MustIngest(*store, Samples(3, {{kT0 + kSec, kMax}}));
  ASSERT_TRUE(store->FlushNow().ok());
  EXPECT_EQ(store->state().segments, 3u);
  expect_saturated("three segments");
  ASSERT_TRUE(store->CompactNow().ok());
  EXPECT_EQ(store->state().segments, 1u);
  EXPECT_EQ(store->state().rollup_files.size(), 1u);
  expect_saturated("compacted");
  EXPECT_GE(store->state().rollup_scans, 1u);

  store.reset();
  store = MustOpen(options);
  expect_saturated("reopened");
}

// Agent A samples cpu at 19 Hz, agent B at 99 Hz: counts of the two cannot
// be added, but an answer that only sums A's rows is in A's unit and period.
TEST(EmbeddedStoreValuesTest, UnitAndPeriodComeFromTheTypesThatContributeRows) {
  ScratchDir dir;
  auto store = MustOpen(ManualOptions(dir.data()));
  constexpr int64_t kPeriodA = 52'631'578, kPeriodB = 10'101'010;
  auto agent = [](const std::string& node, int64_t period, int64_t time, int64_t value) {
    BatchBuilder b("agent-" + node, 1);
    const uint32_t cpu = b.Type("cpu", "samples", period);
    b.Sample(time, cpu, b.LabelSet({{"node", node}}), b.SimpleStack({"work_" + node}), value);
    return b.batch();
  };
  MustIngest(*store, agent("a", kPeriodA, kT0, 10));
  MustIngest(*store, agent("b", kPeriodB, kT0 + 100 * kSec, 4));
  const int64_t from = kT0, to = kT0 + 200 * kSec;
  for (int flushed = 0; flushed < 2; ++flushed) {
    SCOPED_TRACE(flushed ? "flushed" : "in the head");
    storage::MergedProfile a = Profile(*store, "{node=\"a\"}", from, to);
    EXPECT_EQ(a.type.sample_unit, "samples");
    EXPECT_EQ(a.type.period_nanos, kPeriodA);
    EXPECT_EQ(a.total, 10);
    EXPECT_EQ(SeriesSum(*store, "{node=\"a\"}", from, to, 10 * kSec).total, 10);
    // Every series selected, but only A's rows in the range.
    storage::MergedProfile early = Profile(*store, "", from, kT0 + 50 * kSec);
    EXPECT_EQ(early.type.sample_unit, "samples");
    EXPECT_EQ(early.type.period_nanos, kPeriodA);
    EXPECT_EQ(early.total, 10);
    storage::MergedProfile b = Profile(*store, "{node=\"b\"}", from, to);
    EXPECT_EQ(b.type.sample_unit, "samples");
    EXPECT_EQ(b.type.period_nanos, kPeriodB);
    EXPECT_EQ(b.total, 4);
    // Both: nanoseconds of CPU, each row times its own period.
    storage::MergedProfile both = Profile(*store, "", from, to);
    EXPECT_EQ(both.type.sample_unit, "nanoseconds");
    EXPECT_EQ(both.type.period_nanos, 0);
    EXPECT_EQ(both.total, 10 * kPeriodA + 4 * kPeriodB);
    EXPECT_EQ(SeriesSum(*store, "", from, to, 10 * kSec).total, both.total);
    EXPECT_EQ(TimelineTotal(*store, from, to), both.total);
    ASSERT_TRUE(store->FlushNow().ok());
  }
}

}  // namespace
}  // namespace warpscope::embedded
