// Conformance: selectors, time ranges, series, labels and types.
#include "storage/conformance/store_conformance.h"

namespace warpscope::storage::conformance {
namespace {

using testing::BatchBuilder;
using testing::kSec;
using testing::kT0;
using testing::OneSample;

constexpr int64_t kHour = 3600 * kSec;

// Four series with distinct values, so every selector answer is a unique sum:
//   {comm=x, node=a}: 1   {comm=y, node=a}: 2   {comm=x, node=b}: 4   {node=c}: 8
class SelectorFixture {
 public:
  static v1::IngestBatch Batch() {
    BatchBuilder b("agent-sel", 1);
    uint32_t cpu = b.Cpu();
    uint32_t stack = b.SimpleStack({"main"});
    b.Sample(kT0, cpu, b.LabelSet({{"comm", "x"}, {"node", "a"}}), stack, 1);
    b.Sample(kT0, cpu, b.LabelSet({{"comm", "y"}, {"node", "a"}}), stack, 2);
    b.Sample(kT0, cpu, b.LabelSet({{"comm", "x"}, {"node", "b"}}), stack, 4);
    b.Sample(kT0, cpu, b.LabelSet({{"node", "c"}}), stack, 8);
    return b.batch();
  }
};

TEST_P(StoreConformanceTest, SelectorsIncludingEmptyMatchingCases) {
  MustIngest(SelectorFixture::Batch());
  const std::vector<std::pair<std::string, int64_t>> cases = {
      {"", 15},
      {"{}", 15},
      {"{node=\"a\"}", 3},
      {"{node=\"a\", comm=\"y\"}", 2},
      {"{node!=\"a\"}", 12},
      {"{comm=~\"x|y\"}", 7},
      {"{comm=~\"x.*\"}", 5},
      {"{comm=~\"\"}", 8},         // only the series without comm
      {"{comm=\"\"}", 8},
      {"{comm!=\"\"}", 7},
      {"{comm!~\"x\"}", 10},       // y and the one without comm
      {"{comm!=\"x\"}", 10},
      {"{node=~\"a|c\"}", 11},
      {"{nosuch=\"\"}", 15},       // an absent label reads as ""
      {"{nosuch=\"v\"}", 0},
      {"{nosuch!=\"v\"}", 15},
      {"{node=\"a\", nosuch=\"\"}", 3},
      {"{node=\"zzz\"}", 0},
      {"{comm=~\"(?i)X\"}", 5},
  };
  for (const auto& [selector, total] : cases) {
    MergedProfile p = Profile(selector, kT0, kT0 + kSec);
    EXPECT_EQ(p.total, total) << selector;
  }
  EXPECT_EQ(Profile("{node=\"a\"}", kT0, kT0 + kSec).series, 2u);
}

TEST_P(StoreConformanceTest, TimeRangeIsHalfOpen) {
  BatchBuilder b("agent-t", 1);
  uint32_t cpu = b.Cpu();
  uint32_t set = b.LabelSet({{"node", "n"}});
  uint32_t stack = b.SimpleStack({"main"});
  b.Sample(kT0, cpu, set, stack, 1);
  b.Sample(kT0 + 10 * kSec, cpu, set, stack, 2);
  b.Sample(kT0 + 20 * kSec, cpu, set, stack, 4);
  MustIngest(b.batch());
  EXPECT_EQ(Profile("", kT0, kT0 + 20 * kSec).total, 3);
  EXPECT_EQ(Profile("", kT0, kT0 + 20 * kSec + 1).total, 7);
  EXPECT_EQ(Profile("", kT0 + 1, kT0 + 10 * kSec).total, 0);
  EXPECT_EQ(Profile("", kT0 + 10 * kSec, kT0 + 10 * kSec + 1).total, 2);
  EXPECT_EQ(Profile("", kT0 - kHour, kT0).total, 0);
  EXPECT_EQ(Profile("", kT0 + 10 * kSec, kT0 + 10 * kSec).total, 0);  // empty range
  EXPECT_EQ(Profile("", kT0 + 30 * kSec, kT0).total, 0);              // inverted range
}

TEST_P(StoreConformanceTest, ProfileTypesAreSeparate) {
  BatchBuilder b("agent-types", 1);
  uint32_t cpu = b.Cpu();
  uint32_t gpu = b.Type("gpu_time", "nanoseconds", 0);
  uint32_t set = b.LabelSet({{"node", "n"}});
  b.Sample(kT0, cpu, set, b.SimpleStack({"cpu_fn"}), 3);
  b.Sample(kT0, gpu, set, b.SimpleStack({"kernel_launch"}), 5000);
  MustIngest(b.batch());
  MergedProfile c = Profile("", kT0, kT0 + kSec, "cpu");
  EXPECT_EQ(c.total, 3);
  EXPECT_EQ(ByLeaf(c), (std::map<std::string, int64_t>{{"cpu_fn", 3}}));
  MergedProfile g = Profile("", kT0, kT0 + kSec, "gpu_time");
  EXPECT_EQ(g.total, 5000);
  EXPECT_EQ(g.type.sample_unit, "nanoseconds");
  MergedProfile none = Profile("", kT0, kT0 + kSec, "memory");
  EXPECT_EQ(none.type.name, "");
  EXPECT_EQ(none.total, 0);
  EXPECT_TRUE(none.stacks.empty());
  StatusOr<std::vector<ProfileTypeInfo>> types = store().ProfileTypes();
  ASSERT_TRUE(types.ok());
  ASSERT_EQ(types->size(), 2u);
  EXPECT_EQ((*types)[0].name, "cpu");
  EXPECT_EQ((*types)[0].period_nanos, 10'000'000);
  EXPECT_EQ((*types)[1].name, "gpu_time");
}

// Agents sampling at other frequencies send the same type name with other
// periods: their counts do not add up, their CPU times do.
TEST_P(StoreConformanceTest, OneTypeNameWithOtherPeriodsAddsUpInNanoseconds) {
  BatchBuilder b("agent-periods", 1);
  const uint32_t at100hz = b.Type("cpu", "samples", 10'000'000);
  const uint32_t at20hz = b.Type("cpu", "samples", 50'000'000);
  const uint32_t set = b.LabelSet({{"node", "n"}});
  b.Sample(kT0, at100hz, set, b.SimpleStack({"fast_fn"}), 10);
  b.Sample(kT0, at20hz, set, b.SimpleStack({"slow_fn"}), 2);
  MustIngest(b.batch());
  MergedProfile p = Profile("", kT0, kT0 + kSec, "cpu");
  EXPECT_EQ(p.type.name, "cpu");
  EXPECT_EQ(p.type.sample_unit, "nanoseconds");
  EXPECT_EQ(p.total, 200'000'000);
  EXPECT_EQ(ByLeaf(p), (std::map<std::string, int64_t>{{"fast_fn", 100'000'000}, {"slow_fn", 100'000'000}}));
  SeriesQuery q;
  q.profile.from_ns = kT0;
  q.profile.to_ns = kT0 + kSec;
  q.step_ns = kSec;
  StatusOr<std::vector<Series>> series = store().SelectSeries(q);
  ASSERT_TRUE(series.ok()) << series.status().message();
  ASSERT_EQ(series->size(), 1u);
  EXPECT_EQ((*series)[0].points, (std::vector<SeriesPoint>{{kT0, 200'000'000}}));
}

StatusOr<std::vector<Series>> RunSeries(ProfileStore& store, const std::string& selector, int64_t from, int64_t to,
                                        int64_t step, std::vector<std::string> group_by) {
  SeriesQuery q;
  q.profile.from_ns = from;
  q.profile.to_ns = to;
  q.profile.selector = *Selector::Parse(selector);
  q.step_ns = step;
  q.group_by = std::move(group_by);
  return store.SelectSeries(q);
}

TEST_P(StoreConformanceTest, SeriesStepsAndGroupBy) {
  // node a: 1 at t0, 2 at t0+10s, 4 at t0+25s; node b: 8 at t0+10s; no node: 16 at t0+5s.
  BatchBuilder b("agent-series", 1);
  uint32_t cpu = b.Cpu();
  uint32_t a = b.LabelSet({{"comm", "p"}, {"node", "a"}});
  uint32_t bb = b.LabelSet({{"comm", "p"}, {"node", "b"}});
  uint32_t none = b.LabelSet({{"comm", "q"}});
  uint32_t stack = b.SimpleStack({"main"});
  b.Sample(kT0, cpu, a, stack, 1);
  b.Sample(kT0 + 10 * kSec, cpu, a, stack, 2);
  b.Sample(kT0 + 25 * kSec, cpu, a, stack, 4);
  b.Sample(kT0 + 10 * kSec, cpu, bb, stack, 8);
  b.Sample(kT0 + 5 * kSec, cpu, none, stack, 16);
  MustIngest(b.batch());

  StatusOr<std::vector<Series>> all = RunSeries(store(), "", kT0, kT0 + 30 * kSec, 10 * kSec, {});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_TRUE((*all)[0].labels.empty());
  EXPECT_EQ((*all)[0].points, (std::vector<SeriesPoint>{{kT0, 17}, {kT0 + 10 * kSec, 10}, {kT0 + 20 * kSec, 4}}));

  StatusOr<std::vector<Series>> by_node = RunSeries(store(), "", kT0, kT0 + 30 * kSec, 10 * kSec, {"node"});
  ASSERT_TRUE(by_node.ok());
  ASSERT_EQ(by_node->size(), 3u);
  // Sorted by labels: node="" (the series without it), then a, then b.
  EXPECT_EQ((*by_node)[0].labels, (Labels{{"node", ""}}));
  EXPECT_EQ((*by_node)[0].points, (std::vector<SeriesPoint>{{kT0, 16}}));
  EXPECT_EQ((*by_node)[1].labels, (Labels{{"node", "a"}}));
  EXPECT_EQ((*by_node)[1].points, (std::vector<SeriesPoint>{{kT0, 1}, {kT0 + 10 * kSec, 2}, {kT0 + 20 * kSec, 4}}));
  EXPECT_EQ((*by_node)[2].labels, (Labels{{"node", "b"}}));
  EXPECT_EQ((*by_node)[2].points, (std::vector<SeriesPoint>{{kT0 + 10 * kSec, 8}}));

  // Steps start at `from`, not at a multiple of step; the range end is exclusive.
  StatusOr<std::vector<Series>> shifted =
      RunSeries(store(), "{node=\"a\"}", kT0 + 5 * kSec, kT0 + 25 * kSec, 10 * kSec, {"comm", "node"});
  ASSERT_TRUE(shifted.ok());
  ASSERT_EQ(shifted->size(), 1u);
  EXPECT_EQ((*shifted)[0].labels, (Labels{{"comm", "p"}, {"node", "a"}}));
  EXPECT_EQ((*shifted)[0].points, (std::vector<SeriesPoint>{{kT0 + 5 * kSec, 2}}));

  StatusOr<std::vector<Series>> bad = RunSeries(store(), "", kT0, kT0 + kSec, 0, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

// The flame chart's answer: per lane (group_by), per stored time, per stack.
TEST_P(StoreConformanceTest, StackTimelinePerLaneTimeAndStack) {
  BatchBuilder b("agent-timeline", 1);
  uint32_t cpu = b.Cpu();
  uint32_t main_thread = b.LabelSet({{"comm", "app"}, {"node", "a"}, {"pid", "7"}, {"thread", "main"}});
  uint32_t worker = b.LabelSet({{"comm", "app"}, {"node", "a"}, {"pid", "7"}, {"thread", "worker"}});
  uint32_t other_node = b.LabelSet({{"comm", "app"}, {"node", "b"}, {"pid", "7"}, {"thread", "worker"}});
  uint32_t load = b.SimpleStack({"load", "main"});
  uint32_t step = b.SimpleStack({"step", "main"});
  b.Sample(kT0, cpu, main_thread, load, 3);
  b.Sample(kT0, cpu, main_thread, step, 1);
  b.Sample(kT0 + kSec, cpu, main_thread, step, 5);
  b.Sample(kT0 + kSec, cpu, worker, load, 2);
  b.Sample(kT0 + 2 * kSec, cpu, other_node, load, 4);  // same lane as worker when grouping by thread only
  b.Sample(kT0 + 3 * kSec, cpu, worker, step, 9);       // outside the range below
  MustIngest(b.batch());
  // A second batch adds to a point of the first.
  BatchBuilder b2("agent-timeline", 2);
  b2.Sample(kT0, b2.Cpu(), b2.LabelSet({{"comm", "app"}, {"node", "a"}, {"pid", "7"}, {"thread", "main"}}),
            b2.SimpleStack({"load", "main"}), 10);
  MustIngest(b2.batch());

  TimelineQuery q;
  q.profile.from_ns = kT0;
  q.profile.to_ns = kT0 + 3 * kSec;
  q.group_by = {"thread", "pid"};
  StatusOr<StackTimeline> t = store().SelectStackTimeline(q);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->lanes.size(), 2u);
  EXPECT_EQ(t->lanes[0], (Labels{{"pid", "7"}, {"thread", "main"}}));
  EXPECT_EQ(t->lanes[1], (Labels{{"pid", "7"}, {"thread", "worker"}}));
  EXPECT_EQ(t->profile.total, 13 + 1 + 5 + 2 + 4);
  EXPECT_EQ(t->profile.type.name, "cpu");
  // Points as (lane, time, leaf function, value), in the answer's order.
  std::vector<std::tuple<uint32_t, int64_t, std::string, int64_t>> got;
  for (const TimelinePoint& p : t->points) {
    ASSERT_LT(p.stack, t->profile.stacks.size());
    const StackValue& stack = t->profile.stacks[p.stack];
    got.emplace_back(p.lane, p.time_ns, t->profile.frame(stack.frames.front()).function_name, p.value);
  }
  std::vector<std::tuple<uint32_t, int64_t, std::string, int64_t>> want = {
      {0, kT0, "load", 13}, {0, kT0, "step", 1}, {0, kT0 + kSec, "step", 5},
      {1, kT0 + kSec, "load", 2}, {1, kT0 + 2 * kSec, "load", 4}};
  // Within one (lane, time), points are sorted by stack index, which is the
  // backend's; compare that part as a set.
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
  for (size_t i = 1; i < t->points.size(); ++i) {
    const TimelinePoint& a = t->points[i - 1];
    const TimelinePoint& c = t->points[i];
    EXPECT_TRUE(std::tie(a.lane, a.time_ns, a.stack) < std::tie(c.lane, c.time_ns, c.stack)) << "point " << i;
  }
  // Each stack's value is its sum over the points.
  std::map<std::string, int64_t> by_leaf = ByLeaf(t->profile);
  EXPECT_EQ(by_leaf, (std::map<std::string, int64_t>{{"load", 19}, {"step", 6}}));

  // A selector and no group_by: one lane.
  q.group_by = {};
  q.profile.selector = Selector::Parse("{node=\"b\"}").value();
  t = store().SelectStackTimeline(q);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->lanes.size(), 1u);
  EXPECT_TRUE(t->lanes[0].empty());
  ASSERT_EQ(t->points.size(), 1u);
  EXPECT_EQ(t->points[0].value, 4);

  // Past max_points: an error that says what to do, not a partial answer.
  q.profile.selector = Selector();
  q.group_by = {"thread"};
  q.max_points = 3;
  t = store().SelectStackTimeline(q);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("shorter range"), std::string::npos) << t.status().message();

  // Nothing there: an empty answer.
  q.max_points = 100;
  q.profile.from_ns = kT0 + kHour;
  q.profile.to_ns = kT0 + 2 * kHour;
  t = store().SelectStackTimeline(q);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->points.empty());
  EXPECT_TRUE(t->lanes.empty());
  EXPECT_EQ(t->profile.total, 0);
}

TEST_P(StoreConformanceTest, LabelNamesValuesAndSeriesLabels) {
  MustIngest(SelectorFixture::Batch());
  BatchBuilder b("agent-late", 1);
  uint32_t gpu = b.Type("gpu_time", "nanoseconds", 0);
  b.Sample(kT0 + kHour, gpu, b.LabelSet({{"node", "d"}, {"pod", "web"}}), b.SimpleStack({"k"}), 1);
  MustIngest(b.batch());

  StatusOr<std::vector<std::string>> names = store().LabelNames();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"comm", "node", "pod"}));
  StatusOr<std::vector<std::string>> nodes = store().LabelValues("node");
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(*nodes, (std::vector<std::string>{"a", "b", "c", "d"}));
  StatusOr<std::vector<std::string>> nothing = store().LabelValues("nosuch");
  ASSERT_TRUE(nothing.ok());
  EXPECT_TRUE(nothing->empty());

  SeriesLabelsQuery q;
  q.from_ns = kT0;
  q.to_ns = kT0 + kSec;
  StatusOr<std::vector<Labels>> first = store().SelectSeriesLabels(q);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, (std::vector<Labels>{{{"comm", "x"}, {"node", "a"}},
                                         {{"comm", "x"}, {"node", "b"}},
                                         {{"comm", "y"}, {"node", "a"}},
                                         {{"node", "c"}}}));
  q.selector = *Selector::Parse("{comm=\"x\"}");
  StatusOr<std::vector<Labels>> x = store().SelectSeriesLabels(q);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->size(), 2u);
  // Only series with samples in the range; a type narrows.
  q.selector = Selector();
  q.from_ns = kT0 + 1;
  q.to_ns = kT0 + 2 * kHour;
  StatusOr<std::vector<Labels>> late = store().SelectSeriesLabels(q);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(*late, (std::vector<Labels>{{{"node", "d"}, {"pod", "web"}}}));
  q.type = "cpu";
  late = store().SelectSeriesLabels(q);
  ASSERT_TRUE(late.ok());
  EXPECT_TRUE(late->empty());
}

TEST_P(StoreConformanceTest, ReadsSeeWritesImmediately) {
  for (int i = 1; i <= 5; ++i) {
    MustIngest(OneSample("a", i, kT0 + i * kSec, i));
    EXPECT_EQ(Profile("", kT0, kT0 + kHour).total, i * (i + 1) / 2);
  }
}

}  // namespace
}  // namespace warpscope::storage::conformance
