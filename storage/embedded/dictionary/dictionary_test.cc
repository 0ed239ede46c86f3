#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <thread>

#include "storage/embedded/dictionary/dictionary_schema.h"
#include "storage/embedded/dictionary/dictionary_store.h"
#include "storage/embedded/dictionary/dictionary_test_util.h"

namespace warpscope::dictionary {
namespace {

using testing::BatchBuilder;
using testing::ExecDirect;
using testing::OpenOrDie;
using testing::QueryDirect;
using testing::ScratchDir;

// A small batch with inlining, a kernel frame, a Python frame without mapping
// and two series.
struct SmallBatch {
  BatchBuilder b;
  uint32_t stack_a, stack_b, set_x, set_y, type;
};

SmallBatch MakeSmallBatch(uint64_t sequence = 1) {
  SmallBatch s{BatchBuilder("agent-1", sequence), 0, 0, 0, 0, 0};
  BatchBuilder& b = s.b;
  uint32_t libc = b.Mapping("/usr/lib/libc.so.6", "abc123");
  uint32_t app = b.Mapping("/opt/app/bin/server", "");
  uint32_t f_memcpy = b.Function("memcpy", "__memcpy_avx2", "");
  uint32_t f_inner = b.Function("Parse(std::string_view)", "_Z5ParseSt17basic_string_view", "src/parse.cc");
  uint32_t f_outer = b.Function("HandleRequest()", "_Z13HandleRequestv", "src/server.cc");
  uint32_t f_kernel = b.Function("do_syscall_64", "do_syscall_64", "");
  uint32_t f_py = b.Function("train_step", "train_step", "train.py");
  uint32_t l_memcpy = b.Location(libc, 0x9a000, v1::FRAME_KIND_NATIVE, {{f_memcpy, 0}});
  uint32_t l_inlined = b.Location(app, 0x4242, v1::FRAME_KIND_NATIVE, {{f_inner, 17}, {f_outer, 230}});
  uint32_t l_kernel = b.Location(0, 0xffffffff81000000ULL, v1::FRAME_KIND_KERNEL, {{f_kernel, 0}});
  uint32_t l_py = b.Location(0, 0, v1::FRAME_KIND_PYTHON, {{f_py, -1}});
  uint32_t l_bare = b.Location(libc, 0x1234, v1::FRAME_KIND_NATIVE, {});
  s.stack_a = b.Stack({l_kernel, l_memcpy, l_inlined});
  s.stack_b = b.Stack({l_py, l_bare, l_inlined});
  s.set_x = b.LabelSet({{"comm", "server"}, {"node", "n1"}, {"pid", "17"}});
  s.set_y = b.LabelSet({{"comm", "python3"}, {"node", "n1"}});
  s.type = b.Type("cpu", "samples", 10'000'000);
  b.Sample(1000, s.type, s.set_x, s.stack_a, 5);
  b.Sample(1000, s.type, s.set_y, s.stack_b, 2);
  const uint32_t power = b.MetricType("gpu_power", "watts");
  const uint32_t util = b.MetricType("gpu_utilization", "percent");
  b.MetricPoint(1000, power, s.set_x, 301.5);
  b.MetricPoint(1000, util, s.set_y, 97);
  return s;
}

DictionaryRowCounts Counts(DictionaryStore& store) {
  StatusOr<DictionaryRowCounts> counts = store.RowCounts();
  EXPECT_TRUE(counts.ok()) << counts.status().ToString();
  return counts.ok() ? *counts : DictionaryRowCounts{};
}

TEST(DictionaryTest, RoundTripResolvesNamesLinesKindsAndMappings) {
  ScratchDir dir;
  auto store = OpenOrDie(dir.db());
  ASSERT_NE(store, nullptr);
  SmallBatch s = MakeSmallBatch();
  StatusOr<InternedBatch> interned = store->InternBatch(s.b.batch());
  ASSERT_TRUE(interned.ok()) << interned.status().ToString();
  ASSERT_EQ(interned->stack_ids.size(), 2u);
  ASSERT_EQ(interned->label_set_ids.size(), 2u);
  ASSERT_EQ(interned->type_ids.size(), 1u);
  EXPECT_NE(interned->stack_ids[0], interned->stack_ids[1]);
  EXPECT_GT(interned->new_rows, 0u);

  StatusOr<ResolvedStack> a = store->ResolveStack(interned->stack_ids[s.stack_a]);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_EQ(a->frames.size(), 4u);  // kernel, memcpy, then the inlined location as two frames
  EXPECT_EQ(a->frames[0].kind, v1::FRAME_KIND_KERNEL);
  EXPECT_EQ(a->frames[0].function_name, "do_syscall_64");
  EXPECT_EQ(a->frames[0].address, 0xffffffff81000000ULL);
  EXPECT_EQ(a->frames[0].mapping_file, "");
  EXPECT_EQ(a->frames[1].function_name, "memcpy");
  EXPECT_EQ(a->frames[1].system_name, "__memcpy_avx2");
  EXPECT_EQ(a->frames[1].mapping_file, "/usr/lib/libc.so.6");
  EXPECT_EQ(a->frames[1].build_id, "abc123");
  EXPECT_EQ(a->frames[1].address, 0x9a000u);
  EXPECT_FALSE(a->frames[1].inlined);
  EXPECT_EQ(a->frames[2].function_name, "Parse(std::string_view)");
  EXPECT_EQ(a->frames[2].file, "src/parse.cc");
  EXPECT_EQ(a->frames[2].line, 17);
  EXPECT_TRUE(a->frames[2].inlined);
  EXPECT_EQ(a->frames[3].function_name, "HandleRequest()");
  EXPECT_EQ(a->frames[3].system_name, "_Z13HandleRequestv");
  EXPECT_EQ(a->frames[3].line, 230);
  EXPECT_FALSE(a->frames[3].inlined);
  EXPECT_EQ(a->frames[3].mapping_file, "/opt/app/bin/server");
  EXPECT_EQ(a->frames[3].build_id, "");
  EXPECT_EQ(a->frames[2].location_id, a->frames[3].location_id);

  StatusOr<std::vector<ResolvedStack>> both = store->ResolveStacks(interned->stack_ids);
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  ASSERT_EQ(both->size(), 2u);
  const ResolvedStack& b = (*both)[s.stack_b];
  ASSERT_EQ(b.frames.size(), 4u);
  EXPECT_EQ(b.frames[0].kind, v1::FRAME_KIND_PYTHON);
  EXPECT_EQ(b.frames[0].function_name, "train_step");
  EXPECT_EQ(b.frames[0].file, "train.py");
  EXPECT_EQ(b.frames[0].line, -1);
  EXPECT_EQ(b.frames[1].function_name, "");  // a location without lines
  EXPECT_EQ(b.frames[1].address, 0x1234u);
  EXPECT_EQ(b.frames[1].mapping_file, "/usr/lib/libc.so.6");
  EXPECT_EQ(b.frames[3].function_name, "HandleRequest()");

  StatusOr<Labels> x = store->LabelSet(interned->label_set_ids[s.set_x]);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_EQ(*x, (Labels{{"comm", "server"}, {"node", "n1"}, {"pid", "17"}}));
  StatusOr<ProfileTypeInfo> type = store->ProfileType(interned->type_ids[s.type]);
  ASSERT_TRUE(type.ok()) << type.status().ToString();
  EXPECT_EQ(type->name, "cpu");
  EXPECT_EQ(type->sample_unit, "samples");
  EXPECT_EQ(type->period_nanos, 10'000'000);

  // Rows refer only to ids the dictionary handed out: a missing one is data
  // loss (the dictionary is behind the data), never "not found".
  EXPECT_EQ(store->ResolveStack(999).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(store->LabelSet(999).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(store->ProfileType(999).status().code(), StatusCode::kNotFound);  // how SeriesCatalog finds new types
}

TEST(DictionaryTest, SameContentGetsSameIdsAcrossBatchesAndIndexOrders) {
  ScratchDir dir;
  auto store = OpenOrDie(dir.db());
  ASSERT_NE(store, nullptr);
  SmallBatch first = MakeSmallBatch(1);
  StatusOr<InternedBatch> one = store->InternBatch(first.b.batch());
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  DictionaryRowCounts after_first = Counts(*store);

  // The same content, built in another order and with labels unsorted: the
  // batch's indices differ, the global ids must not.
  BatchBuilder b("agent-2", 7);
  b.Str("padding that shifts every index");
  uint32_t py_f = b.Function("train_step", "train_step", "train.py");
  uint32_t py = b.Location(0, 0, v1::FRAME_KIND_PYTHON, {{py_f, -1}});
  uint32_t libc = b.Mapping("/usr/lib/libc.so.6", "abc123");
  uint32_t app = b.Mapping("/opt/app/bin/server", "");
  uint32_t outer = b.Function("HandleRequest()", "_Z13HandleRequestv", "src/server.cc");
  uint32_t inner = b.Function("Parse(std::string_view)", "_Z5ParseSt17basic_string_view", "src/parse.cc");
  uint32_t inlined = b.Location(app, 0x4242, v1::FRAME_KIND_NATIVE, {{inner, 17}, {outer, 230}});
  uint32_t bare = b.Location(libc, 0x1234, v1::FRAME_KIND_NATIVE, {});
  uint32_t stack_b = b.Stack({py, bare, inlined});
  uint32_t set_y = b.LabelSet({{"node", "n1"}, {"comm", "python3"}});
  uint32_t type = b.Type("cpu", "samples", 10'000'000);
  StatusOr<InternedBatch> two = store->InternBatch(b.batch());
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->stack_ids[stack_b], one->stack_ids[first.stack_b]);
  EXPECT_EQ(two->label_set_ids[set_y], one->label_set_ids[first.set_y]);
  EXPECT_EQ(two->type_ids[type], one->type_ids[first.type]);

  DictionaryRowCounts after_second = Counts(*store);
  EXPECT_EQ(after_second.stacks, after_first.stacks);
  EXPECT_EQ(after_second.locations, after_first.locations);
  EXPECT_EQ(after_second.functions, after_first.functions);
  EXPECT_EQ(after_second.label_sets, after_first.label_sets);
  // The padding string is new but nothing refers to it: strings are stored
  // as parts of what uses them (stacks are recognized by fingerprint first).
  EXPECT_EQ(after_second.strings, after_first.strings);
  EXPECT_EQ(two->new_rows, 0u);

  // Re-interning the first batch writes no dictionary row at all.
  first.b.batch().set_sequence(2);
  StatusOr<InternedBatch> again = store->InternBatch(first.b.batch());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->new_rows, 0u);
  EXPECT_EQ(again->stack_ids, one->stack_ids);
  EXPECT_EQ(again->label_set_ids, one->label_set_ids);
}

TEST(DictionaryTest, IdsAreDenseAndStableAcrossReopen) {
  ScratchDir dir;
  std::vector<uint64_t> ids;
  {
    auto store = OpenOrDie(dir.db());
    ASSERT_NE(store, nullptr);
    StatusOr<InternedBatch> interned = store->InternBatch(testing::RealisticBatch("a", 1, 100, 10, 5));
    ASSERT_TRUE(interned.ok()) << interned.status().ToString();
    ids = interned->stack_ids;
    std::vector<uint64_t> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    EXPECT_EQ(sorted.front(), 1u);
    EXPECT_EQ(sorted.back(), sorted.size());
  }
  auto store = OpenOrDie(dir.db());
  ASSERT_NE(store, nullptr);
  StatusOr<InternedBatch> again = store->InternBatch(testing::RealisticBatch("a", 2, 100, 10, 5));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->stack_ids, ids);
  EXPECT_EQ(again->new_rows, 0u);  // the cache was rebuilt from the database
  StatusOr<InternedBatch> fresh = store->InternBatch(testing::RealisticBatch("b", 1, 100, 10, 5));
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(*std::min_element(fresh->stack_ids.begin(), fresh->stack_ids.end()),
            *std::max_element(ids.begin(), ids.end()) + 1);
}

struct BadBatchCase {
  const char* name;
  std::function<void(v1::IngestBatch&)> corrupt;
  const char* expected_field;
};

TEST(DictionaryTest, EveryValidationErrorStoresNothing) {
  const std::vector<BadBatchCase> cases = {
      {"schema", [](v1::IngestBatch& b) { b.set_schema_version(2); }, "schema_version"},
      {"agent", [](v1::IngestBatch& b) { b.clear_agent_id(); }, "agent_id"},
      {"long string", [](v1::IngestBatch& b) { b.add_strings(std::string(4097, 'x')); }, "strings["},
      {"mapping filename", [](v1::IngestBatch& b) { b.mutable_mappings(1)->set_filename(10'000); },
       "mappings[1].filename"},
      {"mapping build id", [](v1::IngestBatch& b) { b.mutable_mappings(0)->set_build_id(10'000); },
       "mappings[0].build_id"},
      {"function name", [](v1::IngestBatch& b) { b.mutable_functions(2)->set_name(10'000); }, "functions[2].name"},
      {"function file", [](v1::IngestBatch& b) { b.mutable_functions(0)->set_filename(10'000); },
       "functions[0].filename"},
      {"location mapping", [](v1::IngestBatch& b) { b.mutable_locations(1)->set_mapping(3); }, "locations[1].mapping"},
      {"location kind", [](v1::IngestBatch& b) { b.mutable_locations(0)->set_kind(static_cast<v1::FrameKind>(9)); },
       "locations[0].kind"},
      {"line function", [](v1::IngestBatch& b) { b.mutable_locations(1)->mutable_lines(1)->set_function(99); },
       "locations[1].lines[1].function"},
      {"stack location", [](v1::IngestBatch& b) { b.mutable_stacks(1)->set_locations(2, 5); },
       "stacks[1].locations[2]"},
      {"label key", [](v1::IngestBatch& b) { b.mutable_label_sets(1)->mutable_labels(0)->set_key(10'000); },
       "label_sets[1].labels[0].key"},
      {"label value", [](v1::IngestBatch& b) { b.mutable_label_sets(0)->mutable_labels(2)->set_value(10'000); },
       "label_sets[0].labels[2].value"},
      {"duplicate key",
       [](v1::IngestBatch& b) {
         auto* l = b.mutable_label_sets(0)->add_labels();
         l->set_key(b.label_sets(0).labels(0).key());
         l->set_value(0);
       },
       "label_sets[0].labels[3].key"},
      {"too many labels",
       [](v1::IngestBatch& b) {
         for (int i = 0; i < 63; ++i) {
           b.add_strings("k" + std::to_string(i));
           auto* l = b.mutable_label_sets(1)->add_labels();
           l->set_key(b.strings_size() - 1);
         }
       },
       "label_sets[1].labels"},
      {"type name", [](v1::IngestBatch& b) { b.mutable_types(0)->set_sample_unit(10'000); }, "types[0].sample_unit"},
      {"sample stack", [](v1::IngestBatch& b) { b.mutable_samples(1)->set_stack(2); }, "samples[1].stack"},
      {"sample series", [](v1::IngestBatch& b) { b.mutable_samples(0)->set_label_set(5); }, "samples[0].label_set"},
      {"counter", [](v1::IngestBatch& b) { b.add_counters()->set_name(10'000); }, "counters[0].name"},
      {"negative period", [](v1::IngestBatch& b) { b.mutable_types(0)->set_period_nanos(-1); },
       "types[0].period_nanos"},
      {"metric name index", [](v1::IngestBatch& b) { b.mutable_metric_types(1)->set_name(10'000); },
       "metric_types[1].name"},
      {"metric unit index", [](v1::IngestBatch& b) { b.mutable_metric_types(0)->set_unit(10'000); },
       "metric_types[0].unit"},
      {"empty metric name", [](v1::IngestBatch& b) { b.mutable_metric_types(1)->set_name(0); },
       "metric_types[1].name: empty"},
      {"too many metric types",
       [](v1::IngestBatch& b) {
         for (int i = 0; i < 1024; ++i) *b.add_metric_types() = b.metric_types(0);
       },
       "metric_types: 1026 types, limit 1024"},
      {"point metric", [](v1::IngestBatch& b) { b.mutable_metric_points(1)->set_metric(2); },
       "metric_points[1].metric"},
      {"point series", [](v1::IngestBatch& b) { b.mutable_metric_points(0)->set_label_set(2); },
       "metric_points[0].label_set"},
      {"NaN", [](v1::IngestBatch& b) { b.mutable_metric_points(1)->set_value(std::nan("")); },
       "metric_points[1].value: NaN"},
      {"infinity", [](v1::IngestBatch& b) { b.mutable_metric_points(0)->set_value(-HUGE_VAL); },
       "metric_points[0].value: -inf"},
  };
  ScratchDir dir;
  auto store = OpenOrDie(dir.db());
  ASSERT_NE(store, nullptr);
  // A good batch from another agent first, so "nothing" means "no new row".
  ASSERT_TRUE(store->InternBatch(testing::RealisticBatch("other", 1, 10, 5, 2)).ok());
  const DictionaryRowCounts before = Counts(*store);
  for (const BadBatchCase& c : cases) {
    SmallBatch s = MakeSmallBatch(5);
    // The bad field is last in the batch: everything before it would be interned first.
    s.b.batch().add_strings("a string no other batch has");
    c.corrupt(s.b.batch());
    StatusOr<InternedBatch> result = store->InternBatch(s.b.batch());
    ASSERT_FALSE(result.ok()) << c.name;
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(result.status().message().find(c.expected_field), std::string::npos)
        << c.name << ": " << result.status().message();
    const DictionaryRowCounts after = Counts(*store);
    EXPECT_EQ(after.total(), before.total()) << c.name;
    EXPECT_FALSE(*store->SeenBefore("agent-1", 5)) << c.name;
  }
  // The untouched batch still goes in with the same ids and rows as in a store
  // that never saw the refused ones: nothing leaked into the cache.
  SmallBatch good = MakeSmallBatch(5);
  StatusOr<InternedBatch> ok = store->InternBatch(good.b.batch());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ScratchDir clean_dir;
  auto clean = OpenOrDie(clean_dir.db());
  ASSERT_NE(clean, nullptr);
  ASSERT_TRUE(clean->InternBatch(testing::RealisticBatch("other", 1, 10, 5, 2)).ok());
  StatusOr<InternedBatch> clean_ok = clean->InternBatch(good.b.batch());
  ASSERT_TRUE(clean_ok.ok());
  EXPECT_EQ(ok->stack_ids, clean_ok->stack_ids);
  EXPECT_EQ(ok->label_set_ids, clean_ok->label_set_ids);
  EXPECT_EQ(Counts(*store).total(), Counts(*clean).total());
}

TEST(DictionaryTest, SequenceRecordSurvivesReopen) {
  ScratchDir dir;
  {
    auto store = OpenOrDie(dir.db());
    ASSERT_NE(store, nullptr);
    EXPECT_FALSE(*store->SeenBefore("agent-1", 1));
    ASSERT_TRUE(store->InternBatch(MakeSmallBatch(41).b.batch()).ok());
    ASSERT_TRUE(store->InternBatch(MakeSmallBatch(42).b.batch()).ok());
    // A late re-send of an older batch never moves the record back.
    ASSERT_TRUE(store->InternBatch(MakeSmallBatch(40).b.batch()).ok());
    EXPECT_TRUE(*store->SeenBefore("agent-1", 42));
  }
  auto store = OpenOrDie(dir.db());
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(*store->SeenBefore("agent-1", 42));
  EXPECT_TRUE(*store->SeenBefore("agent-1", 3));
  EXPECT_FALSE(*store->SeenBefore("agent-1", 43));
  EXPECT_FALSE(*store->SeenBefore("agent-2", 1));
  EXPECT_EQ(Counts(*store).agent_sequences, 1u);
}

// The embedded ProfileStore interns without recording the sequence and
// records it itself once the rows are durable in its WAL.
TEST(DictionaryTest, SequenceRecordedSeparatelyWhenAsked) {
  ScratchDir dir;
  {
    auto store = OpenOrDie(dir.db());
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->InternBatch(MakeSmallBatch(7).b.batch(), {.record_sequence = false}).ok());
    EXPECT_FALSE(*store->SeenBefore("agent-1", 7));
    EXPECT_TRUE(store->AgentSequences().empty());
    ASSERT_TRUE(store->RecordAgentSequences({{"agent-1", 7}, {"agent-2", 3}}).ok());
    ASSERT_TRUE(store->RecordAgentSequences({{"agent-1", 5}}).ok());  // never lowers
    EXPECT_TRUE(*store->SeenBefore("agent-1", 7));
    EXPECT_FALSE(*store->SeenBefore("agent-1", 8));
  }
  auto store = OpenOrDie(dir.db());
  ASSERT_NE(store, nullptr);
  auto sequences = store->AgentSequences();
  std::sort(sequences.begin(), sequences.end());
  EXPECT_EQ(sequences, (std::vector<std::pair<std::string, uint64_t>>{{"agent-1", 7}, {"agent-2", 3}}));
  EXPECT_EQ(Counts(*store).agent_sequences, 2u);
}

TEST(DictionaryTest, LabelIndexAnswersMatchersNamesAndValues) {
  ScratchDir dir;
  auto store = OpenOrDie(dir.db());
  ASSERT_NE(store, nullptr);
  BatchBuilder b;
  uint32_t s1 = b.LabelSet({{"comm", "server"}, {"node", "n1"}});
  uint32_t s2 = b.LabelSet({{"comm", "python3"}, {"node", "n1"}, {"pod", "p"}});
  uint32_t s3 = b.LabelSet({{"comm", "server"}, {"node", "n2"}});
  uint32_t s1_again = b.LabelSet({{"node", "n1"}, {"comm", "server"}});  // unsorted, same set
  StatusOr<InternedBatch> interned = store->InternBatch(b.batch());
  ASSERT_TRUE(interned.ok()) << interned.status().ToString();
  const auto& ids = interned->label_set_ids;
  EXPECT_EQ(ids[s1], ids[s1_again]);
  auto sorted = [](std::vector<uint64_t> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(*store->SeriesMatching({{"comm", "server"}}), sorted({ids[s1], ids[s3]}));
  EXPECT_EQ(*store->SeriesMatching({{"node", "n1"}}), sorted({ids[s1], ids[s2]}));
  EXPECT_EQ(*store->SeriesMatching({{"comm", "server"}, {"node", "n1"}}), std::vector<uint64_t>{ids[s1]});
  EXPECT_EQ(*store->SeriesMatching({{"comm", "server"}, {"node", "n3"}}), std::vector<uint64_t>{});
  EXPECT_EQ(*store->SeriesMatching({{"nosuch", "x"}}), std::vector<uint64_t>{});
  EXPECT_EQ(*store->SeriesMatching({{"n1", "node"}}), std::vector<uint64_t>{});  // names and values are not mixed
  EXPECT_EQ(*store->SeriesMatching({}), sorted({ids[s1], ids[s2], ids[s3]}));
  EXPECT_EQ(*store->LabelNames(), (std::vector<std::string>{"comm", "node", "pod"}));
  EXPECT_EQ(*store->LabelValues("comm"), (std::vector<std::string>{"python3", "server"}));
  EXPECT_EQ(*store->LabelValues("node"), (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(*store->LabelValues("nosuch"), std::vector<std::string>{});
}

// Metric types live in profile_types (period kMetricTypePeriodNanos), in the
// type id space, never confused with a profile type of the same name and unit.
TEST(DictionaryTest, MetricTypesShareTheTypeIdSpace) {
  ScratchDir dir;
  std::vector<uint64_t> first_ids;
  {
    auto store = OpenOrDie(dir.db());
    ASSERT_NE(store, nullptr);
    BatchBuilder b("agent-m", 1);
    const uint32_t cpu = b.Type("cpu", "samples", 10'000'000);
    const uint32_t cpu_metric = b.MetricType("cpu", "samples");
    const uint32_t power = b.MetricType("gpu_power", "watts");
    const uint32_t power_again = b.MetricType("gpu_power", "watts");
    const uint32_t set = b.LabelSet({{"gpu", "0"}, {"node", "n1"}});
    b.MetricPoint(1000, power, set, 1.5);
    StatusOr<InternedBatch> ids = store->InternBatch(b.batch());
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    ASSERT_EQ(ids->metric_type_ids.size(), 3u);
    EXPECT_NE(ids->metric_type_ids[cpu_metric], ids->type_ids[cpu]);
    EXPECT_NE(ids->metric_type_ids[cpu_metric], ids->metric_type_ids[power]);
    EXPECT_EQ(ids->metric_type_ids[power], ids->metric_type_ids[power_again]);
    StatusOr<ProfileTypeInfo> info = store->ProfileType(ids->metric_type_ids[power]);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->name, "gpu_power");
    EXPECT_EQ(info->sample_unit, "watts");
    EXPECT_EQ(info->period_nanos, kMetricTypePeriodNanos);
    EXPECT_EQ(store->ProfileType(ids->type_ids[cpu])->period_nanos, 10'000'000);
    first_ids = {ids->type_ids[cpu], ids->metric_type_ids[cpu_metric], ids->metric_type_ids[power]};
  }
  auto store = OpenOrDie(dir.db());
  ASSERT_NE(store, nullptr);
  BatchBuilder b("agent-m", 2);
  const uint32_t power = b.MetricType("gpu_power", "watts");
  const uint32_t cpu_metric = b.MetricType("cpu", "samples");
  const uint32_t cpu = b.Type("cpu", "samples", 10'000'000);
  StatusOr<InternedBatch> ids = store->InternBatch(b.batch());
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ((std::vector<uint64_t>{ids->type_ids[cpu], ids->metric_type_ids[cpu_metric], ids->metric_type_ids[power]}),
            first_ids);
  EXPECT_EQ(ids->new_rows, 0u);  // all known, from the database
}

// Rule 7: a version-1 file (before metric types) opens, keeps its data and is
// raised to the current version.
TEST(DictionaryTest, OpensVersionOneFilesAndMigratesThem) {
  ScratchDir dir;
  InternedBatch before;
  {
    auto store = OpenOrDie(dir.db());
    ASSERT_NE(store, nullptr);
    SmallBatch s = MakeSmallBatch(3);
    s.b.batch().clear_metric_types();
    s.b.batch().clear_metric_points();
    before = *store->InternBatch(s.b.batch());
  }
  ExecDirect(dir.db(), "UPDATE meta SET value = 1 WHERE key = 'schema_version'");
  ASSERT_EQ(QueryDirect(dir.db(), "SELECT value FROM meta WHERE key = 'schema_version'"), 1);
  {
    auto store = OpenOrDie(dir.db());
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(*store->SeenBefore("agent-1", 3));
    StatusOr<InternedBatch> again = store->InternBatch(MakeSmallBatch(4).b.batch());
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(again->stack_ids, before.stack_ids);
    EXPECT_EQ(again->type_ids, before.type_ids);
    EXPECT_EQ(again->metric_type_ids.size(), 2u);
    EXPECT_EQ(store->ProfileType(again->metric_type_ids[0])->period_nanos, kMetricTypePeriodNanos);
  }
  EXPECT_EQ(QueryDirect(dir.db(), "SELECT value FROM meta WHERE key = 'schema_version'"), kDictionarySchemaVersion);
}

TEST(DictionaryTest, RefusesNewerSchemaVersionAndForeignDatabases) {
  ScratchDir dir;
  { ASSERT_NE(OpenOrDie(dir.db()), nullptr); }
  ExecDirect(dir.db(), "UPDATE meta SET value = " + std::to_string(kDictionarySchemaVersion + 1) +
                           " WHERE key = 'schema_version'");
  StatusOr<std::unique_ptr<DictionaryStore>> newer = DictionaryStore::Open(dir.db());
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(newer.status().message().find("newer"), std::string::npos) << newer.status().message();

  ScratchDir other;
  ExecDirect(other.db(), "CREATE TABLE unrelated(x)");
  StatusOr<std::unique_ptr<DictionaryStore>> foreign = DictionaryStore::Open(other.db());
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.status().code(), StatusCode::kFailedPrecondition);
}

TEST(DictionaryTest, ReadersRunBesideTheWriter) {
  ScratchDir dir;
  auto store = OpenOrDie(dir.db());
  ASSERT_NE(store, nullptr);
  StatusOr<InternedBatch> first = store->InternBatch(testing::RealisticBatch("r0", 1, 50, 10, 5));
  ASSERT_TRUE(first.ok());
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 1; i < 20; ++i) {
      EXPECT_TRUE(store->InternBatch(testing::RealisticBatch("r" + std::to_string(i), 1, 50, 10, 5)).ok());
    }
    done = true;
  });
  int reads = 0;
  while (!done || reads == 0) {
    StatusOr<std::vector<ResolvedStack>> stacks = store->ResolveStacks(first->stack_ids);
    ASSERT_TRUE(stacks.ok()) << stacks.status().ToString();
    EXPECT_EQ((*stacks)[0].frames.size(), 10u);
    ++reads;
  }
  writer.join();
  EXPECT_EQ(Counts(*store).label_sets, 100u);
}

}  // namespace
}  // namespace warpscope::dictionary
