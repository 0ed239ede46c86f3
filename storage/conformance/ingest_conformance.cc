// Conformance: ingest, idempotency, validation, durability, concurrency.
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "storage/conformance/store_conformance.h"

namespace warpscope::storage::conformance {

using testing::BatchBuilder;
using testing::kSec;
using testing::kT0;
using testing::OneSample;

void StoreConformanceTest::SetUp() {
  std::string tmpl = ::testing::TempDir() + "store_conformance.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  dir_ = tmpl;
  store_ = GetParam().open(dir_);
  ASSERT_NE(store_, nullptr);
}

void StoreConformanceTest::TearDown() {
  store_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void StoreConformanceTest::Reopen() {
  if (GetParam().reopen) {
    store_ = GetParam().reopen(std::move(store_), dir_);
  } else {
    store_.reset();
    store_ = GetParam().open(dir_);
  }
  ASSERT_NE(store_, nullptr);
}

void StoreConformanceTest::OpenAt(int64_t now_ns, int64_t retention_ns) {
  store_.reset();
  store_ = GetParam().open_at(dir_, now_ns, retention_ns);
  ASSERT_NE(store_, nullptr);
}

void StoreConformanceTest::OpenWithCubinLimits(const CubinLimits& limits) {
  store_.reset();
  store_ = GetParam().open_with_cubin_limits(dir_, limits);
  ASSERT_NE(store_, nullptr);
}

std::vector<SeriesPoint> StoreConformanceTest::SeriesPoints(const std::string& selector, int64_t from_ns,
                                                            int64_t to_ns, int64_t step_ns, const std::string& type,
                                                            ProfileTypeInfo* answer_type) {
  SeriesQuery q;
  q.answer_type = answer_type;
  q.profile.type = type;
  q.profile.from_ns = from_ns;
  q.profile.to_ns = to_ns;
  q.step_ns = step_ns;
  StatusOr<Selector> sel = Selector::Parse(selector);
  EXPECT_TRUE(sel.ok()) << sel.status().ToString();
  if (sel.ok()) q.profile.selector = *sel;
  StatusOr<std::vector<Series>> series = store_->SelectSeries(q);
  EXPECT_TRUE(series.ok()) << series.status().ToString();
  if (!series.ok() || series->empty()) return {};
  EXPECT_EQ(series->size(), 1u);
  return series->front().points;
}

void StoreConformanceTest::MustIngest(const v1::IngestBatch& batch) {
  StatusOr<IngestResult> r = store_->Ingest(batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE(r->duplicate) << batch.agent_id() << " seq " << batch.sequence();
  ASSERT_EQ(r->samples, static_cast<uint64_t>(batch.samples_size()));
  ASSERT_EQ(r->metric_points, static_cast<uint64_t>(batch.metric_points_size()));
  ASSERT_EQ(r->gpu_activities, static_cast<uint64_t>(batch.gpu_activities_size()));
}

MergedProfile StoreConformanceTest::Profile(const std::string& selector, int64_t from_ns, int64_t to_ns,
                                            const std::string& type) {
  ProfileQuery q;
  q.type = type;
  q.from_ns = from_ns;
  q.to_ns = to_ns;
  StatusOr<Selector> sel = Selector::Parse(selector);
  EXPECT_TRUE(sel.ok()) << sel.status().ToString();
  if (sel.ok()) q.selector = *sel;
  StatusOr<MergedProfile> p = store_->SelectProfile(q);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? std::move(p).value() : MergedProfile{};
}

std::vector<MetricSeries> StoreConformanceTest::Metric(const std::string& name, const std::string& selector,
                                                       int64_t from_ns, int64_t to_ns, int64_t step_ns,
                                                       std::vector<std::string> group_by) {
  MetricQuery q;
  q.name = name;
  q.from_ns = from_ns;
  q.to_ns = to_ns;
  q.step_ns = step_ns;
  q.group_by = std::move(group_by);
  StatusOr<Selector> sel = Selector::Parse(selector);
  EXPECT_TRUE(sel.ok()) << sel.status().ToString();
  if (sel.ok()) q.selector = *sel;
  StatusOr<std::vector<MetricSeries>> series = store_->SelectMetricSeries(q);
  EXPECT_TRUE(series.ok()) << name << ": " << series.status().ToString();
  return series.ok() ? std::move(series).value() : std::vector<MetricSeries>{};
}

std::map<std::string, int64_t> StoreConformanceTest::ByLeaf(const MergedProfile& profile) {
  std::map<std::string, int64_t> out;
  for (const StackValue& s : profile.stacks) {
    out[s.frames.empty() ? "" : profile.frame(s.frames[0]).function_name] += s.value;
  }
  return out;
}

namespace {

constexpr int64_t kHour = 3600 * kSec;

TEST_P(StoreConformanceTest, RoundTripKeepsValuesAndEveryFrameField) {
  BatchBuilder b("agent-rt", 1);
  uint32_t libc = b.Mapping("/lib/libc.so.6", "deadbeef");
  uint32_t f_inner = b.Function("inner()", "_Z5innerv", "inner.h");
  uint32_t f_outer = b.Function("outer()", "_Z5outerv", "outer.cc");
  uint32_t f_kernel = b.Function("do_syscall_64", "do_syscall_64", "");
  uint32_t f_py = b.Function("handle", "handle", "app.py");
  // An inlined location: inner() inlined into outer(), innermost first.
  uint32_t inl = b.Location(libc, 0x4000, v1::FRAME_KIND_NATIVE, {{f_inner, 7}, {f_outer, 42}});
  uint32_t kern = b.Location(0, 0xffffffff81000000ull, v1::FRAME_KIND_KERNEL, {{f_kernel, 0}});
  uint32_t py = b.Location(0, 0, v1::FRAME_KIND_PYTHON, {{f_py, 12}});
  uint32_t bare = b.Location(libc, 0x9999, v1::FRAME_KIND_NATIVE, {});
  uint32_t s1 = b.Stack({kern, inl, py});
  uint32_t s2 = b.Stack({bare});
  uint32_t cpu = b.Cpu();
  uint32_t set = b.LabelSet({{"comm", "app"}, {"node", "n1"}});
  b.Sample(kT0, cpu, set, s1, 5);
  b.Sample(kT0 + 10 * kSec, cpu, set, s1, 3);
  b.Sample(kT0, cpu, set, s2, 2);
  MustIngest(b.batch());

  MergedProfile p = Profile("", kT0, kT0 + kHour);
  EXPECT_EQ(p.type.name, "cpu");
  EXPECT_EQ(p.type.sample_unit, "samples");
  EXPECT_EQ(p.type.period_nanos, 10'000'000);
  EXPECT_EQ(p.total, 10);
  EXPECT_EQ(p.series, 1u);
  ASSERT_EQ(p.stacks.size(), 2u);
  const StackValue& a = p.stacks[0].value == 8 ? p.stacks[0] : p.stacks[1];
  const StackValue& c = p.stacks[0].value == 8 ? p.stacks[1] : p.stacks[0];
  EXPECT_EQ(a.value, 8);
  EXPECT_EQ(c.value, 2);
  // kernel, inner (inlined), outer, handle: the inlined location gives two frames.
  ASSERT_EQ(a.frames.size(), 4u);
  const ResolvedFrame& k = p.frame(a.frames[0]);
  EXPECT_EQ(k.function_name, "do_syscall_64");
  EXPECT_EQ(k.kind, v1::FRAME_KIND_KERNEL);
  EXPECT_EQ(k.address, 0xffffffff81000000ull);
  EXPECT_EQ(k.mapping_file, "");
  EXPECT_FALSE(k.inlined);
  const ResolvedFrame& in = p.frame(a.frames[1]);
  EXPECT_EQ(in.function_name, "inner()");
  EXPECT_EQ(in.system_name, "_Z5innerv");
  EXPECT_EQ(in.file, "inner.h");
  EXPECT_EQ(in.line, 7);
  EXPECT_TRUE(in.inlined);
  EXPECT_EQ(in.mapping_file, "/lib/libc.so.6");
  EXPECT_EQ(in.build_id, "deadbeef");
  EXPECT_EQ(in.address, 0x4000u);
  const ResolvedFrame& out = p.frame(a.frames[2]);
  EXPECT_EQ(out.function_name, "outer()");
  EXPECT_EQ(out.line, 42);
  EXPECT_FALSE(out.inlined);
  EXPECT_EQ(out.location_id, in.location_id);
  EXPECT_EQ(a.frames[2], a.frames[1] + 1);  // a location's lines are consecutive in the frame table
  const ResolvedFrame& pyf = p.frame(a.frames[3]);
  EXPECT_EQ(pyf.function_name, "handle");
  EXPECT_EQ(pyf.file, "app.py");
  EXPECT_EQ(pyf.kind, v1::FRAME_KIND_PYTHON);
  ASSERT_EQ(c.frames.size(), 1u);  // a location without lines: one frame, no function
  EXPECT_EQ(p.frame(c.frames[0]).function_name, "");
  EXPECT_EQ(p.frame(c.frames[0]).address, 0x9999u);
  EXPECT_EQ(p.frame(c.frames[0]).mapping_file, "/lib/libc.so.6");
}

TEST_P(StoreConformanceTest, FrameTableHoldsEachLocationOnce) {
  BatchBuilder b("a", 1);
  const uint32_t cpu = b.Cpu();
  const uint32_t set = b.LabelSet({{"node", "n1"}});
  b.Sample(kT0, cpu, set, b.SimpleStack({"leaf_x", "mid", "main"}), 3);
  b.Sample(kT0, cpu, set, b.SimpleStack({"leaf_y", "mid", "main"}), 4);
  b.Sample(kT0, cpu, set, b.SimpleStack({"main"}), 5);
  MustIngest(b.batch());
  MergedProfile p = Profile("", kT0, kT0 + kSec);
  ASSERT_EQ(p.stacks.size(), 3u);
  // Four distinct frames, each once, each used; stacks share their entries.
  ASSERT_EQ(p.frames.size(), 4u);
  std::map<std::string, uint32_t> index_of;
  for (uint32_t i = 0; i < p.frames.size(); ++i) index_of[p.frames[i].function_name] = i;
  EXPECT_EQ(index_of.size(), 4u);
  std::map<int64_t, std::vector<uint32_t>> by_value;
  for (const StackValue& s : p.stacks) {
    for (uint32_t f : s.frames) ASSERT_LT(f, p.frames.size());
    by_value[s.value] = s.frames;
  }
  EXPECT_EQ(by_value[3], (std::vector<uint32_t>{index_of["leaf_x"], index_of["mid"], index_of["main"]}));
  EXPECT_EQ(by_value[4], (std::vector<uint32_t>{index_of["leaf_y"], index_of["mid"], index_of["main"]}));
  EXPECT_EQ(by_value[5], (std::vector<uint32_t>{index_of["main"]}));
  EXPECT_EQ(p.frames[index_of["mid"]].system_name, "_Zmid");
  EXPECT_EQ(p.frames[index_of["mid"]].mapping_file, "/bin/app");
}

TEST_P(StoreConformanceTest, SameContentFromTwoAgentsMergesIntoOneStack) {
  MustIngest(OneSample("a", 1, kT0, 4, "n1", "work"));
  MustIngest(OneSample("b", 1, kT0, 6, "n2", "work"));
  MergedProfile p = Profile("", kT0, kT0 + kSec);
  ASSERT_EQ(p.stacks.size(), 1u);
  EXPECT_EQ(p.stacks[0].value, 10);
  EXPECT_EQ(p.series, 2u);
}

TEST_P(StoreConformanceTest, DuplicateBatchIsAcknowledgedNotStoredAgain) {
  MustIngest(OneSample("a", 5, kT0, 7));
  for (uint64_t seq : {5, 4, 1}) {  // a re-send, and older ones
    StatusOr<IngestResult> again = store().Ingest(OneSample("a", seq, kT0, 7));
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_TRUE(again->duplicate) << seq;
    EXPECT_EQ(again->samples, 0u);
  }
  EXPECT_EQ(Profile("", kT0, kT0 + kSec).total, 7);
  MustIngest(OneSample("a", 6, kT0, 1));
  MustIngest(OneSample("b", 5, kT0, 1));  // sequences are per agent
  EXPECT_EQ(Profile("", kT0, kT0 + kSec).total, 9);
  EXPECT_EQ(store().stats().duplicate_batches, 3u);
  EXPECT_EQ(store().stats().ingested_batches, 3u);
}

TEST_P(StoreConformanceTest, DuplicateCheckSurvivesReopen) {
  MustIngest(OneSample("a", 1, kT0, 7));
  MustIngest(OneSample("a", 2, kT0, 1));
  Reopen();
  StatusOr<IngestResult> again = store().Ingest(OneSample("a", 2, kT0, 1));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->duplicate);
  Reopen();
  again = store().Ingest(OneSample("a", 1, kT0, 7));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->duplicate);
  EXPECT_EQ(Profile("", kT0, kT0 + kSec).total, 8);
  MustIngest(OneSample("a", 3, kT0, 1));
  EXPECT_EQ(Profile("", kT0, kT0 + kSec).total, 9);
}

TEST_P(StoreConformanceTest, DataSurvivesReopen) {
  for (int i = 0; i < 6; ++i) {
    MustIngest(testing::NodeBatch("n" + std::to_string(i % 3), 1 + i / 3, kT0 + (i / 3) * 10 * kSec, 40));
  }
  MergedProfile before = Profile("", kT0, kT0 + kHour);
  EXPECT_EQ(before.total, 6 * (8 * (1 + 2 + 3 + 4 + 5)));
  Reopen();
  MergedProfile after = Profile("", kT0, kT0 + kHour);
  EXPECT_EQ(after.total, before.total);
  EXPECT_EQ(after.stacks.size(), before.stacks.size());
  EXPECT_EQ(ByLeaf(after), ByLeaf(before));
  Reopen();  // twice: nothing doubles over repeated recoveries
  EXPECT_EQ(Profile("", kT0, kT0 + kHour).total, before.total);
}

struct BadCase {
  const char* name;
  std::function<void(v1::IngestBatch&, const StoreBackend&)> corrupt;
  const char* expected_text;
};

TEST_P(StoreConformanceTest, InvalidBatchesAreRejectedAndStoreNothing) {
  const std::vector<BadCase> cases = {
      {"schema", [](v1::IngestBatch& b, const StoreBackend&) { b.set_schema_version(7); }, "schema_version 7"},
      {"stack index", [](v1::IngestBatch& b, const StoreBackend&) { b.mutable_samples(0)->set_stack(99); }, "samples[0]"},
      {"location index",
       [](v1::IngestBatch& b, const StoreBackend&) { b.mutable_stacks(0)->add_locations(1234); }, "stacks[0]"},
      {"label set index",
       [](v1::IngestBatch& b, const StoreBackend&) { b.mutable_samples(0)->set_label_set(5); }, "label_set"},
      {"too many labels",
       [](v1::IngestBatch& b, const StoreBackend& be) {
         auto* set = b.mutable_label_sets(0);
         set->clear_labels();
         for (size_t i = 0; i <= be.max_labels_per_set; ++i) {
           b.add_strings("k" + std::to_string(i));
           auto* l = set->add_labels();
           l->set_key(b.strings_size() - 1);
           l->set_value(0);
         }
       },
       "labels"},
      {"long string",
       [](v1::IngestBatch& b, const StoreBackend& be) { b.add_strings(std::string(be.max_string_bytes + 1, 'x')); },
       "strings["},
      {"empty agent", [](v1::IngestBatch& b, const StoreBackend&) { b.set_agent_id(""); }, "agent_id"},
      // Values and periods the store could not sum or scale.
      {"zero value", [](v1::IngestBatch& b, const StoreBackend&) { b.mutable_samples(0)->set_value(0); },
       "samples[0].value: 0 is outside [1, "},
      {"negative value", [](v1::IngestBatch& b, const StoreBackend&) { b.mutable_samples(0)->set_value(-7); },
       "samples[0].value: -7"},
      {"huge value",
       [](v1::IngestBatch& b, const StoreBackend&) { b.mutable_samples(0)->set_value(INT64_MAX); },
       "samples[0].value: 9223372036854775807 is outside"},
      {"huge period",
       [](v1::IngestBatch& b, const StoreBackend&) { b.mutable_types(0)->set_period_nanos(int64_t{1} << 62); },
       "types[0].period_nanos: 4611686018427387904 is outside"},
      {"tiny period", [](v1::IngestBatch& b, const StoreBackend&) { b.mutable_types(0)->set_period_nanos(999); },
       "types[0].period_nanos: 999"},
      {"count x period too large",
       [](v1::IngestBatch& b, const StoreBackend&) { b.mutable_samples(0)->set_value(int64_t{1} << 40); },
       "samples[0].value: 1099511627776 samples of period 10000000 ns are more than"},
  };
  for (const BadCase& c : cases) {
    v1::IngestBatch batch = OneSample("agent-bad", 1, kT0, 5, "bad-node", "bad_fn");
    c.corrupt(batch, GetParam());
    StatusOr<IngestResult> r = store().Ingest(batch);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(r.status().message().find(c.expected_text), std::string::npos) << c.name << ": " << r.status().message();
  }
  EXPECT_EQ(Profile("", kT0, kT0 + kSec).total, 0);
  StatusOr<std::vector<std::string>> names = store().LabelNames();
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(names->empty());
  EXPECT_EQ(store().stats().rejected_batches, cases.size());
  // The refused (agent, sequence) is not remembered: the fixed batch goes in.
  MustIngest(OneSample("agent-bad", 1, kT0, 5, "bad-node", "bad_fn"));
  EXPECT_EQ(Profile("", kT0, kT0 + kSec).total, 5);
}

TEST_P(StoreConformanceTest, ConcurrentIngestsAllLandOnce) {
  constexpr int kThreads = 8, kBatches = 15;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 1; i <= kBatches; ++i) {
        StatusOr<IngestResult> r = store().Ingest(
            OneSample("agent-" + std::to_string(t), i, kT0 + i * kSec, t + 1, "n" + std::to_string(t), "f" + std::to_string(i % 3)));
        if (!r.ok() || r->duplicate) ++failures;
      }
    });
  }
  // Two threads racing the same re-sent batch: exactly one stores it.
  std::atomic<int> stored{0}, duplicates{0};
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int i = 1; i <= kBatches; ++i) {
        StatusOr<IngestResult> r = store().Ingest(OneSample("racer", i, kT0 + i * kSec, 100, "racer", "race"));
        if (!r.ok()) {
          ++failures;
        } else {
          ++(r->duplicate ? duplicates : stored);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(stored.load(), kBatches);
  EXPECT_EQ(duplicates.load(), kBatches);
  int64_t expected = 0;
  for (int t = 0; t < kThreads; ++t) expected += (t + 1) * kBatches;
  EXPECT_EQ(Profile("{node!=\"racer\"}", kT0, kT0 + kHour).total, expected);
  EXPECT_EQ(Profile("{node=\"racer\"}", kT0, kT0 + kHour).total, 100 * kBatches);
  Reopen();
  EXPECT_EQ(Profile("", kT0, kT0 + kHour).total, expected + 100 * kBatches);
}

TEST_P(StoreConformanceTest, EmptyBatchIsAcceptedAndCountsAsStored) {
  BatchBuilder b("quiet", 3);
  StatusOr<IngestResult> r = store().Ingest(b.batch());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->duplicate);
  EXPECT_EQ(r->samples, 0u);
  r = store().Ingest(b.batch());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->duplicate);
}

}  // namespace
}  // namespace warpscope::storage::conformance
