// Conformance: metrics (IngestBatch.metric_points, GPU metrics from NVML):
// downsampling into steps, group_by, selectors, exact values, durability,
// validation, and their separation from profile types.
#include <cmath>
#include <limits>

#include "storage/conformance/store_conformance.h"

namespace warpscope::storage::conformance {
namespace {

using testing::BatchBuilder;
using testing::kSec;
using testing::kT0;

constexpr int64_t kHour = 3600 * kSec;

Labels Gpu(const std::string& node, const std::string& gpu) {
  return {{"gpu", gpu},
          {"gpu_name", "NVIDIA H200"},
          {"node", node},
          {"pci_bus_id", "00000000:1" + gpu + ":00.0"},
          {"uuid", "GPU-" + node + gpu}};
}

// gpu_utilization (percent) of three GPUs, and one gpu_power (watts) point:
//   node a gpu 0: 10 @0s, 30 @5s, 50 @10s, 70 @25s
//   node a gpu 1: 20 @0s, 40 @10s
//   node b gpu 0: 90 @5s, 100 @30s
v1::IngestBatch GpuBatch(uint64_t sequence = 1) {
  BatchBuilder b("agent-gpu", sequence);
  const uint32_t util = b.MetricType("gpu_utilization", "percent");
  const uint32_t power = b.MetricType("gpu_power", "watts");
  const uint32_t a0 = b.LabelSet(Gpu("a", "0"));
  const uint32_t a1 = b.LabelSet(Gpu("a", "1"));
  const uint32_t b0 = b.LabelSet(Gpu("b", "0"));
  b.MetricPoint(kT0, util, a0, 10);
  b.MetricPoint(kT0 + 5 * kSec, util, a0, 30);
  b.MetricPoint(kT0 + 10 * kSec, util, a0, 50);
  b.MetricPoint(kT0 + 25 * kSec, util, a0, 70);
  b.MetricPoint(kT0, util, a1, 20);
  b.MetricPoint(kT0 + 10 * kSec, util, a1, 40);
  b.MetricPoint(kT0 + 5 * kSec, util, b0, 90);
  b.MetricPoint(kT0 + 30 * kSec, util, b0, 100);
  b.MetricPoint(kT0, power, a0, 301.25);
  return b.batch();
}

MetricStep Step(int64_t time_ns, double min, double max, double sum, uint64_t count) {
  return MetricStep{.time_ns = time_ns, .min = min, .max = max, .sum = sum, .count = count};
}

TEST_P(StoreConformanceTest, MetricStepsMinMaxSumCountAndGroupBy) {
  MustIngest(GpuBatch());
  EXPECT_EQ(store().stats().metric_points, 9u);
  EXPECT_EQ(store().stats().samples, 0u);

  // Everything in one group; [t0, t0+30s) leaves out the point at 30 s.
  std::vector<MetricSeries> all = Metric("gpu_utilization", "", kT0, kT0 + 30 * kSec, 10 * kSec);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].labels.empty());
  EXPECT_EQ(all[0].points, (std::vector<MetricStep>{Step(kT0, 10, 90, 150, 4), Step(kT0 + 10 * kSec, 40, 50, 90, 2),
                                                    Step(kT0 + 20 * kSec, 70, 70, 70, 1)}));

  std::vector<MetricSeries> by_gpu = Metric("gpu_utilization", "", kT0, kT0 + 30 * kSec, 10 * kSec, {"gpu"});
  ASSERT_EQ(by_gpu.size(), 2u);
  EXPECT_EQ(by_gpu[0].labels, (Labels{{"gpu", "0"}}));
  EXPECT_EQ(by_gpu[0].points, (std::vector<MetricStep>{Step(kT0, 10, 90, 130, 3), Step(kT0 + 10 * kSec, 50, 50, 50, 1),
                                                       Step(kT0 + 20 * kSec, 70, 70, 70, 1)}));
  EXPECT_EQ(by_gpu[1].labels, (Labels{{"gpu", "1"}}));
  EXPECT_EQ(by_gpu[1].points,
            (std::vector<MetricStep>{Step(kT0, 20, 20, 20, 1), Step(kT0 + 10 * kSec, 40, 40, 40, 1)}));

  // Two labels (given in any order): series sorted by their labels.
  std::vector<MetricSeries> by_node_gpu =
      Metric("gpu_utilization", "", kT0, kT0 + kHour, 60 * kSec, {"node", "gpu", "node"});
  ASSERT_EQ(by_node_gpu.size(), 3u);
  EXPECT_EQ(by_node_gpu[0].labels, (Labels{{"gpu", "0"}, {"node", "a"}}));
  EXPECT_EQ(by_node_gpu[0].points, (std::vector<MetricStep>{Step(kT0, 10, 70, 160, 4)}));
  EXPECT_EQ(by_node_gpu[1].labels, (Labels{{"gpu", "0"}, {"node", "b"}}));
  EXPECT_EQ(by_node_gpu[1].points, (std::vector<MetricStep>{Step(kT0, 90, 100, 190, 2)}));
  EXPECT_EQ(by_node_gpu[2].labels, (Labels{{"gpu", "1"}, {"node", "a"}}));
  EXPECT_EQ(by_node_gpu[2].points, (std::vector<MetricStep>{Step(kT0, 20, 40, 60, 2)}));

  // A label no series has groups everything under "".
  std::vector<MetricSeries> absent = Metric("gpu_utilization", "", kT0, kT0 + kHour, kHour, {"pid"});
  ASSERT_EQ(absent.size(), 1u);
  EXPECT_EQ(absent[0].labels, (Labels{{"pid", ""}}));
  EXPECT_EQ(absent[0].points, (std::vector<MetricStep>{Step(kT0, 10, 100, 410, 8)}));

  // Steps start at `from`; empty steps are left out; `to` is exclusive.
  std::vector<MetricSeries> shifted = Metric("gpu_utilization", "", kT0 + 5 * kSec, kT0 + 25 * kSec, 10 * kSec);
  ASSERT_EQ(shifted.size(), 1u);
  EXPECT_EQ(shifted[0].points, (std::vector<MetricStep>{Step(kT0 + 5 * kSec, 30, 90, 210, 4)}));
  std::vector<MetricSeries> edge = Metric("gpu_utilization", "", kT0 + 30 * kSec, kT0 + 30 * kSec + 1, kSec);
  ASSERT_EQ(edge.size(), 1u);
  EXPECT_EQ(edge[0].points, (std::vector<MetricStep>{Step(kT0 + 30 * kSec, 100, 100, 100, 1)}));
  EXPECT_TRUE(Metric("gpu_utilization", "", kT0 - kHour, kT0, kSec * 60).empty());
  EXPECT_TRUE(Metric("gpu_utilization", "", kT0 + 10 * kSec, kT0 + 10 * kSec, kSec).empty());  // empty range

  // Other names: their own points, or nothing.
  std::vector<MetricSeries> power = Metric("gpu_power", "", kT0, kT0 + kHour, kHour, {"gpu"});
  ASSERT_EQ(power.size(), 1u);
  EXPECT_EQ(power[0].points, (std::vector<MetricStep>{Step(kT0, 301.25, 301.25, 301.25, 1)}));
  EXPECT_TRUE(Metric("gpu_temperature", "", kT0, kT0 + kHour, kHour).empty());
}

TEST_P(StoreConformanceTest, MetricSelectors) {
  MustIngest(GpuBatch());
  auto counts = [&](const std::string& selector) {
    std::vector<MetricSeries> s = Metric("gpu_utilization", selector, kT0, kT0 + kHour, kHour);
    return s.empty() ? uint64_t{0} : s[0].points.at(0).count;
  };
  EXPECT_EQ(counts(""), 8u);
  EXPECT_EQ(counts("{node=\"a\"}"), 6u);
  EXPECT_EQ(counts("{node=\"a\", gpu=\"1\"}"), 2u);
  EXPECT_EQ(counts("{gpu=\"0\"}"), 6u);
  EXPECT_EQ(counts("{node!=\"a\"}"), 2u);
  EXPECT_EQ(counts("{uuid=~\"GPU-a.*\"}"), 6u);
  EXPECT_EQ(counts("{gpu_name=\"NVIDIA H200\"}"), 8u);
  EXPECT_EQ(counts("{pid=\"\"}"), 8u);
  EXPECT_EQ(counts("{pid=\"7\"}"), 0u);
  EXPECT_EQ(counts("{node=\"zzz\"}"), 0u);
  std::vector<MetricSeries> b = Metric("gpu_utilization", "{node=\"b\"}", kT0, kT0 + kHour, 10 * kSec, {"uuid"});
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].labels, (Labels{{"uuid", "GPU-b0"}}));
  EXPECT_EQ(b[0].points, (std::vector<MetricStep>{Step(kT0, 90, 90, 90, 1), Step(kT0 + 30 * kSec, 100, 100, 100, 1)}));
}

// A point's value comes back exactly: fractions, negatives, tiny and huge
// magnitudes (bytes, joules), not just what fits a fixed-point scale.
TEST_P(StoreConformanceTest, MetricValuesComeBackExactly) {
  const std::vector<double> values = {123.456, -3.25, 1e-9, 0.1, 1.5e15, 141'000'000'000.0, 9007199254740993.0,
                                      1e300, -0.0, std::numeric_limits<double>::denorm_min(), 1.0 / 3};
  BatchBuilder b("agent-exact", 1);
  const uint32_t m = b.MetricType("gpu_energy", "joules");
  const uint32_t set = b.LabelSet(Gpu("a", "0"));
  for (size_t i = 0; i < values.size(); ++i) b.MetricPoint(kT0 + static_cast<int64_t>(i) * kSec, m, set, values[i]);
  MustIngest(b.batch());
  std::vector<MetricSeries> s = Metric("gpu_energy", "", kT0, kT0 + kHour, kSec);
  ASSERT_EQ(s.size(), 1u);
  ASSERT_EQ(s[0].points.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const MetricStep& p = s[0].points[i];
    EXPECT_EQ(p.time_ns, kT0 + static_cast<int64_t>(i) * kSec);
    EXPECT_EQ(p.min, values[i]) << i;
    EXPECT_EQ(p.max, values[i]) << i;
    EXPECT_EQ(p.sum, values[i]) << i;
    EXPECT_EQ(p.count, 1u);
  }
}

// Points of one series at one time are all kept: equal ones count twice,
// different ones keep their own min and max; nothing is ever summed into one
// bigger value (a gauge stays a gauge through flushes, compactions, reopens).
TEST_P(StoreConformanceTest, SameTimeMetricPointsAreNeverMergedIntoOne) {
  BatchBuilder first("agent-same", 1);
  const uint32_t util = first.MetricType("gpu_utilization", "percent");
  const uint32_t g0 = first.LabelSet(Gpu("a", "0"));
  const uint32_t g1 = first.LabelSet(Gpu("a", "1"));
  first.MetricPoint(kT0, util, g0, 50);  // two series, one time, one value
  first.MetricPoint(kT0, util, g1, 50);
  first.MetricPoint(kT0 + kSec, util, g0, 40);  // one series, one time, two values (two batches)
  first.MetricPoint(kT0 + 2 * kSec, util, g0, 7);  // one series, one time, one value twice
  MustIngest(first.batch());
  BatchBuilder second("agent-same", 2);
  const uint32_t util2 = second.MetricType("gpu_utilization", "percent");
  const uint32_t g0_2 = second.LabelSet(Gpu("a", "0"));
  second.MetricPoint(kT0 + kSec, util2, g0_2, 60);
  second.MetricPoint(kT0 + 2 * kSec, util2, g0_2, 7);
  MustIngest(second.batch());

  auto check = [&](const char* when) {
    SCOPED_TRACE(when);
    std::vector<MetricSeries> by_gpu = Metric("gpu_utilization", "", kT0, kT0 + kHour, kSec, {"gpu"});
    ASSERT_EQ(by_gpu.size(), 2u);
    EXPECT_EQ(by_gpu[0].points, (std::vector<MetricStep>{Step(kT0, 50, 50, 50, 1), Step(kT0 + kSec, 40, 60, 100, 2),
                                                         Step(kT0 + 2 * kSec, 7, 7, 14, 2)}));
    EXPECT_EQ(by_gpu[1].points, (std::vector<MetricStep>{Step(kT0, 50, 50, 50, 1)}));
    std::vector<MetricSeries> all = Metric("gpu_utilization", "", kT0, kT0 + kSec, kSec);
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].points, (std::vector<MetricStep>{Step(kT0, 50, 50, 100, 2)}));
  };
  check("ingested");
  Reopen();
  check("reopened");
  Reopen();
  check("reopened twice");
}

TEST_P(StoreConformanceTest, MetricsSurviveReopen) {
  // Several batches, so a backend that flushes and compacts has done so.
  for (uint64_t seq = 1; seq <= 6; ++seq) {
    BatchBuilder b("agent-durable", seq);
    const uint32_t util = b.MetricType("gpu_utilization", "percent");
    const uint32_t mem = b.MetricType("gpu_memory_used", "bytes");
    for (int gpu = 0; gpu < 2; ++gpu) {
      const uint32_t set = b.LabelSet(Gpu("a", std::to_string(gpu)));
      for (int s = 0; s < 10; ++s) {
        const int64_t t = kT0 + (static_cast<int64_t>(seq - 1) * 10 + s) * kSec;
        b.MetricPoint(t, util, set, static_cast<double>((seq * 10 + s + gpu) % 101));
        b.MetricPoint(t, mem, set, 1e9 * static_cast<double>(seq) + gpu + 0.5);
      }
    }
    MustIngest(b.batch());
  }
  const std::vector<MetricSeries> util = Metric("gpu_utilization", "", kT0, kT0 + kHour, 15 * kSec, {"gpu"});
  const std::vector<MetricSeries> mem = Metric("gpu_memory_used", "", kT0, kT0 + kHour, 60 * kSec, {"gpu", "node"});
  ASSERT_EQ(util.size(), 2u);
  ASSERT_EQ(util[0].points.size(), 4u);  // 60 s of points in 15 s steps
  ASSERT_EQ(mem.size(), 2u);
  ASSERT_EQ(mem[1].points.size(), 1u);
  EXPECT_EQ(mem[1].points[0], Step(kT0, 1e9 + 1.5, 6e9 + 1.5, 10 * 21e9 + 60 * 1.5, 60));
  uint64_t total = 0;
  for (const MetricSeries& s : util) {
    for (const MetricStep& p : s.points) total += p.count;
  }
  EXPECT_EQ(total, 120u);
  for (const char* when : {"reopened", "reopened twice"}) {
    SCOPED_TRACE(when);
    Reopen();
    EXPECT_EQ(Metric("gpu_utilization", "", kT0, kT0 + kHour, 15 * kSec, {"gpu"}), util);
    EXPECT_EQ(Metric("gpu_memory_used", "", kT0, kT0 + kHour, 60 * kSec, {"gpu", "node"}), mem);
  }
  StatusOr<IngestResult> again = store().Ingest([] {
    BatchBuilder b("agent-durable", 6);  // a re-send of the last batch
    b.MetricPoint(kT0, b.MetricType("gpu_utilization", "percent"), b.LabelSet(Gpu("a", "0")), 1);
    return b.batch();
  }());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->duplicate);
  EXPECT_EQ(again->metric_points, 0u);
  EXPECT_EQ(Metric("gpu_utilization", "", kT0, kT0 + kHour, 15 * kSec, {"gpu"}), util);
}

// Metric series never show up as profile data, even a metric named like a
// profile type; the label queries (targets) do list them.
TEST_P(StoreConformanceTest, MetricsStayApartFromProfileTypes) {
  BatchBuilder b("agent-mixed", 1);
  const uint32_t cpu = b.Cpu();
  const uint32_t proc = b.LabelSet({{"comm", "train"}, {"node", "a"}, {"pid", "7"}});
  b.Sample(kT0, cpu, proc, b.SimpleStack({"step", "main"}), 5);
  const uint32_t fake_cpu = b.MetricType("cpu", "samples");
  const uint32_t util = b.MetricType("gpu_process_sm_utilization", "percent");
  b.MetricPoint(kT0, fake_cpu, proc, 1000);
  b.MetricPoint(kT0, util, proc, 80);
  MustIngest(b.batch());
  BatchBuilder metrics_only("agent-gpu", 1);
  const uint32_t power = metrics_only.MetricType("gpu_power", "watts");
  metrics_only.MetricPoint(kT0 + 2 * kSec, power, metrics_only.LabelSet(Gpu("a", "0")), 250);
  MustIngest(metrics_only.batch());

  StatusOr<std::vector<ProfileTypeInfo>> types = store().ProfileTypes();
  ASSERT_TRUE(types.ok());
  ASSERT_EQ(types->size(), 1u);
  EXPECT_EQ((*types)[0].name, "cpu");
  EXPECT_EQ((*types)[0].period_nanos, 10'000'000);
  MergedProfile p = Profile("", kT0, kT0 + kHour);
  EXPECT_EQ(p.total, 5);
  EXPECT_EQ(p.series, 1u);
  EXPECT_EQ(Profile("", kT0, kT0 + kHour, "").total, 5);
  EXPECT_EQ(Profile("", kT0, kT0 + kHour, "gpu_power").type.name, "");
  EXPECT_EQ(Profile("", kT0, kT0 + kHour, "gpu_power").total, 0);
  SeriesQuery sq;
  sq.profile.from_ns = kT0;
  sq.profile.to_ns = kT0 + kHour;
  sq.step_ns = kHour;
  StatusOr<std::vector<Series>> series = store().SelectSeries(sq);
  ASSERT_TRUE(series.ok());
  ASSERT_EQ(series->size(), 1u);
  EXPECT_EQ((*series)[0].points, (std::vector<SeriesPoint>{{kT0, 5}}));
  sq.profile.type = "gpu_power";
  series = store().SelectSeries(sq);
  ASSERT_TRUE(series.ok());
  EXPECT_TRUE(series->empty());
  TimelineQuery tq;
  tq.profile.from_ns = kT0;
  tq.profile.to_ns = kT0 + kHour;
  StatusOr<StackTimeline> timeline = store().SelectStackTimeline(tq);
  ASSERT_TRUE(timeline.ok());
  EXPECT_EQ(timeline->profile.total, 5);
  EXPECT_EQ(timeline->points.size(), 1u);

  // And profile samples never show up as metric points.
  std::vector<MetricSeries> fake = Metric("cpu", "", kT0, kT0 + kHour, kHour);
  ASSERT_EQ(fake.size(), 1u);
  EXPECT_EQ(fake[0].points, (std::vector<MetricStep>{Step(kT0, 1000, 1000, 1000, 1)}));

  StatusOr<std::vector<MetricInfo>> names = store().MetricNames();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<MetricInfo>{
                        {"cpu", "samples"}, {"gpu_power", "watts"}, {"gpu_process_sm_utilization", "percent"}}));

  // Targets: every profile type and metric when no type is given, so a GPU
  // with only metrics is listed; a profile type narrows to its samples.
  SeriesLabelsQuery lq;
  lq.from_ns = kT0;
  lq.to_ns = kT0 + kHour;
  StatusOr<std::vector<Labels>> sets = store().SelectSeriesLabels(lq);
  ASSERT_TRUE(sets.ok());
  EXPECT_EQ(*sets, (std::vector<Labels>{{{"comm", "train"}, {"node", "a"}, {"pid", "7"}}, Gpu("a", "0")}));
  lq.from_ns = kT0 + kSec;
  sets = store().SelectSeriesLabels(lq);
  ASSERT_TRUE(sets.ok());
  EXPECT_EQ(*sets, (std::vector<Labels>{Gpu("a", "0")}));
  lq.from_ns = kT0;
  lq.type = "cpu";
  sets = store().SelectSeriesLabels(lq);
  ASSERT_TRUE(sets.ok());
  EXPECT_EQ(*sets, (std::vector<Labels>{{{"comm", "train"}, {"node", "a"}, {"pid", "7"}}}));
  StatusOr<std::vector<std::string>> label_names = store().LabelNames();
  ASSERT_TRUE(label_names.ok());
  EXPECT_EQ(*label_names,
            (std::vector<std::string>{"comm", "gpu", "gpu_name", "node", "pci_bus_id", "pid", "uuid"}));

  Reopen();
  EXPECT_EQ(store().ProfileTypes()->size(), 1u);
  EXPECT_EQ(store().MetricNames()->size(), 3u);
  EXPECT_EQ(Profile("", kT0, kT0 + kHour).total, 5);
}

TEST_P(StoreConformanceTest, InvalidMetricBatchesAreRejectedAndStoreNothing) {
  struct Case {
    const char* name;
    std::function<void(v1::IngestBatch&, const StoreBackend&)> corrupt;
    const char* expected_text;
  };
  const std::vector<Case> cases = {
      {"metric index", [](v1::IngestBatch& b, const StoreBackend&) { b.mutable_metric_points(1)->set_metric(2); },
       "metric_points[1].metric"},
      {"label set index",
       [](v1::IngestBatch& b, const StoreBackend&) { b.mutable_metric_points(0)->set_label_set(9); },
       "metric_points[0].label_set"},
      {"name index", [](v1::IngestBatch& b, const StoreBackend&) { b.mutable_metric_types(0)->set_name(999); },
       "metric_types[0].name"},
      {"unit index", [](v1::IngestBatch& b, const StoreBackend&) { b.mutable_metric_types(1)->set_unit(999); },
       "metric_types[1].unit"},
      {"empty name", [](v1::IngestBatch& b, const StoreBackend&) { b.mutable_metric_types(1)->set_name(0); },
       "metric_types[1].name"},
      {"NaN",
       [](v1::IngestBatch& b, const StoreBackend&) {
         b.mutable_metric_points(1)->set_value(std::numeric_limits<double>::quiet_NaN());
       },
       "metric_points[1].value"},
      {"infinity",
       [](v1::IngestBatch& b, const StoreBackend&) {
         b.mutable_metric_points(0)->set_value(std::numeric_limits<double>::infinity());
       },
       "metric_points[0].value"},
      {"minus infinity",
       [](v1::IngestBatch& b, const StoreBackend&) {
         b.mutable_metric_points(1)->set_value(-std::numeric_limits<double>::infinity());
       },
       "metric_points[1].value"},
      {"too many metric types",
       [](v1::IngestBatch& b, const StoreBackend& be) {
         while (static_cast<size_t>(b.metric_types_size()) <= be.max_metric_types) {
           *b.add_metric_types() = b.metric_types(0);
         }
       },
       "metric_types"},
      {"long name",
       [](v1::IngestBatch& b, const StoreBackend& be) {
         b.add_strings(std::string(be.max_string_bytes + 1, 'm'));
         b.mutable_metric_types(0)->set_name(b.strings_size() - 1);
       },
       "strings["},
  };
  auto good = [] {
    // Samples and metric points: a bad point must keep the samples out too.
    BatchBuilder b("agent-bad", 1);
    b.Sample(kT0, b.Cpu(), b.LabelSet({{"node", "bad-node"}}), b.SimpleStack({"bad_fn"}), 5);
    const uint32_t util = b.MetricType("gpu_utilization", "percent");
    const uint32_t power = b.MetricType("gpu_power", "watts");
    const uint32_t set = b.LabelSet(Gpu("bad-node", "0"));
    b.MetricPoint(kT0, util, set, 50);
    b.MetricPoint(kT0, power, set, 300);
    return b.batch();
  };
  for (const Case& c : cases) {
    v1::IngestBatch batch = good();
    c.corrupt(batch, GetParam());
    StatusOr<IngestResult> r = store().Ingest(batch);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(r.status().message().find(c.expected_text), std::string::npos) << c.name << ": " << r.status().message();
  }
  EXPECT_EQ(store().stats().rejected_batches, cases.size());
  EXPECT_EQ(store().stats().metric_points, 0u);
  EXPECT_TRUE(store().MetricNames()->empty());
  EXPECT_TRUE(store().LabelNames()->empty());
  EXPECT_EQ(Profile("", kT0, kT0 + kSec).total, 0);
  EXPECT_TRUE(Metric("gpu_utilization", "", kT0, kT0 + kHour, kHour).empty());
  // Nothing remembered: the good batch goes in whole.
  MustIngest(good());
  EXPECT_EQ(Profile("", kT0, kT0 + kSec).total, 5);
  std::vector<MetricSeries> util = Metric("gpu_utilization", "", kT0, kT0 + kHour, kHour);
  ASSERT_EQ(util.size(), 1u);
  EXPECT_EQ(util[0].points, (std::vector<MetricStep>{Step(kT0, 50, 50, 50, 1)}));
}

TEST_P(StoreConformanceTest, MetricQueryLimits) {
  MustIngest(GpuBatch());
  auto code = [&](MetricQuery q) {
    StatusOr<std::vector<MetricSeries>> r = store().SelectMetricSeries(q);
    return r.ok() ? StatusCode::kOk : r.status().code();
  };
  MetricQuery q;
  q.name = "gpu_utilization";
  q.from_ns = kT0;
  q.to_ns = kT0 + kHour;
  q.step_ns = 0;
  EXPECT_EQ(code(q), StatusCode::kInvalidArgument);
  q.step_ns = -kSec;
  EXPECT_EQ(code(q), StatusCode::kInvalidArgument);
  q.step_ns = kSec / 10;  // 36,000 steps: past SelectSeries' limit too
  EXPECT_EQ(code(q), StatusCode::kInvalidArgument);
  q.step_ns = kSec;
  EXPECT_EQ(code(q), StatusCode::kOk);
  q.name = "";
  EXPECT_EQ(code(q), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace warpscope::storage::conformance
