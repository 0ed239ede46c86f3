// The ingest cases of the fuzz (ingest_fuzz_cases.h): valid batches from
// fixed pools, their semantic and byte mutations, and raw HTTP requests
// (queries: ingest_fuzz_queries.cc).
#include "tests/integration/ingest_fuzz_cases.h"

#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tests/integration/batch_factory.h"

namespace warpscope::testing::fuzz {
namespace {

using warpscope::v1::IngestBatch;
using Labels = std::vector<std::pair<std::string, std::string>>;

constexpr int64_t kSec = 1'000'000'000;

// ---------------------------------------------------------------------------
// Pools: what valid batches are made of, fixed for every seed, so that after
// the warm-up the store has seen most of it (a flat RSS means no leak).
struct Pools {
  std::vector<std::string> stacks;  // BatchFactory syntax, root first
  std::vector<Labels> processes;
  std::vector<std::string> kernels;
  std::vector<std::pair<std::string, std::string>> metrics;  // name, unit
  std::vector<std::string> odd_strings;

  static const Pools& Get() {
    static const Pools* pools = new Pools(Make());
    return *pools;
  }

 private:
  static Pools Make() {
    Pools p;
    const std::vector<std::string> frames = {
        "_start@app",  "main@app",      "Pipeline.run@app", "Pipeline.step@app", "hash@libc.so.6",
        "memcpy@libc.so.6", "std::vector<int>::push_back@app", "(anonymous namespace)::spin@app",
        "py:<module>@train.py:1", "py:step@train.py:10", "py:forward@model.py:42", "k:do_syscall_64",
        "k:__x64_sys_read", "k:schedule", "worker@db", "scan@db", "0x7f001234", "operator new@libstdc++.so.6"};
    CaseRng r(12345, 0);
    for (int i = 0; i < 200; ++i) {
      std::string s = r.Chance(0.5) ? "_start@app;main@app" : "main@app";
      const uint64_t depth = 1 + r.Below(8);
      for (uint64_t d = 0; d < depth; ++d) s += ";" + r.Pick(frames);
      p.stacks.push_back(s);
    }
    const std::vector<std::string> comms = {"app", "python3", "db", "worker"};
    for (int node = 0; node < 4; ++node) {
      for (int pid = 100; pid < 116; ++pid) {
        for (int thread = 0; thread < 2; ++thread) {
          Labels l = {{"node", "n" + std::to_string(node)}, {"pid", std::to_string(pid)},
                      {"comm", comms[pid % comms.size()]}, {"exe", "/usr/bin/" + comms[pid % comms.size()]},
                      {"thread", "t" + std::to_string(thread)}};
          if (pid % 5 == 0) l.push_back({"container_id", "c" + std::to_string(pid)});
          p.processes.push_back(l);
        }
      }
    }
    p.kernels = {"gemm", "softmax", "layer_norm", "void at::native::vectorized<float>", "nccl_allreduce", ""};
    p.metrics = {{"gpu_utilization", "percent"}, {"gpu_memory_used", "bytes"}, {"gpu_power", "watts"},
                 {"gpu_temperature", "celsius"}, {"gpu_energy", "joules"}, {"gpu_power", "milliwatts"}};
    const std::string e_acute = "\xc3\xa9";
    p.odd_strings = {
        "", std::string(4096, 'a'), std::string(4097, 'b'), std::string(100'000, 'c'), std::string(1 << 20, 'd'),
        std::string(4094, 'e') + e_acute,  // 4096 bytes, ending in a 2-byte character
        std::string(4095, 'f') + e_acute,  // 4097 bytes
        "\xff\xfe", "\xc0\x80" /* overlong NUL */, "\xed\xa0\x80" /* lone surrogate */, "\xe2\x82" /* cut */,
        "\xf4\x90\x80\x80" /* above U+10FFFF */, std::string("nul\0inside", 10), "\x01\x02\x1b[31m\x7f",
        "\xf0\x9f\x94\xa5 fire", "\xe2\x80\xaeright-to-left", "{node=\"x\"}", "%s%n%x", "../../etc/passwd", "a;b;c",
        "line\nbreak\r\n", "quote\"back\\slash", " ", "_[k]"};
    return p;
  }
};

// Extreme integers, in every field a mutation touches.
const std::vector<int64_t> kExtremeInts = {
    0, -1, 1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), int64_t{1} << 62,
    -(int64_t{1} << 62), int64_t{1} << 50, (int64_t{1} << 50) + 1, std::numeric_limits<int32_t>::max(),
    int64_t{1} << 32, 999, 1000, 3600 * kSec, 3600 * kSec + 1, 24 * 3600 * kSec + 1};

int64_t ExtremeTime(CaseRng& r, int64_t now_ns) {
  switch (r.Below(6)) {
    case 0: return now_ns + 10 * 60 * kSec;        // past the accepted clock skew
    case 1: return now_ns - 15 * 24 * 3600 * kSec;  // older than the default retention
    case 2: return now_ns + 200LL * 365 * 24 * 3600 * kSec;
    case 3: return now_ns + static_cast<int64_t>(r.Below(1000));  // not on a second
    default: return r.Pick(kExtremeInts);
  }
}

// An index for a table of `size` entries: mostly just past the end, sometimes
// the last valid one.
uint32_t OddIndex(CaseRng& r, uint32_t size) {
  const uint32_t choices[] = {size, size + 1, size + 7, 99'999, 1'000'000'000, 1u << 31, UINT32_MAX, size - 1};
  const uint32_t i = static_cast<uint32_t>(r.Below(size > 0 ? 8 : 7));
  return choices[i];
}

// A batch the server must take: 1-12 samples, and sometimes metric points,
// GPU activities with their coverage, and counters.
IngestBatch ValidBatch(CaseRng& r, const std::string& agent, uint64_t sequence, int64_t now_ns) {
  const Pools& p = Pools::Get();
  const int64_t now_s = now_ns / kSec * kSec;
  BatchFactory f(agent, sequence, now_s - 10 * kSec, now_s);
  const uint64_t samples = 1 + r.Below(12);
  for (uint64_t i = 0; i < samples; ++i) {
    const int64_t value = r.Chance(0.9) ? 1 + r.Below(100) : 1 + r.Below(100'000);
    f.Add(r.Pick(p.stacks), r.Pick(p.processes), value, now_s - static_cast<int64_t>(r.Below(3000)) * kSec,
          r.Chance(0.85) ? "cpu" : "gpu_time");
  }
  if (r.Chance(0.3)) {
    for (uint64_t i = 0, n = 1 + r.Below(6); i < n; ++i) {
      const auto& [name, unit] = r.Pick(p.metrics);
      Labels gpu = {{"node", "n" + std::to_string(r.Below(4))}, {"gpu", std::to_string(r.Below(2))},
                    {"uuid", "GPU-" + std::to_string(r.Below(8))}};
      f.AddMetric(name, unit, gpu, static_cast<double>(r.Below(10'000)) / 100.0,
                  now_s - static_cast<int64_t>(r.Below(600)) * kSec);
    }
  }
  if (r.Chance(0.25)) {
    const Labels& process = r.Pick(p.processes);
    const int64_t second = now_s - static_cast<int64_t>(r.Below(600)) * kSec;
    const uint64_t n = 1 + r.Below(6);
    for (uint64_t i = 0; i < n; ++i) {
      auto& a = f.AddGpuKernel(r.Pick(p.kernels), process, second + static_cast<int64_t>(r.Below(kSec)),
                               1 + static_cast<int64_t>(r.Below(1'000'000)), r.Below(2), r.Below(4), r.Next() % 100000);
      if (r.Chance(0.2)) {
        a.set_kind(r.Chance(0.5) ? warpscope::v1::GPU_ACTIVITY_MEMCPY : warpscope::v1::GPU_ACTIVITY_MEMSET);
        a.set_name(0);
        a.set_system_name(0);
        a.set_bytes(r.Below(1 << 30));
        a.set_copy_kind(1);
      } else {
        a.set_grid_x(1 + r.Below(1024));
        a.set_block_x(32 * (1 + r.Below(32)));
      }
    }
    f.AddGpuCoverage(process, second, n + r.Below(3), n, second + kSec);
  }
  if (r.Chance(0.2)) f.AddCounter(r.Chance(0.5) ? "drop_counts_map_full" : "spool_dropped_batches", r.Below(1000));
  return f.batch();
}

// ---------------------------------------------------------------------------
// Semantic mutations: the batch still parses; its content is what is wrong.

void MutateIndex(CaseRng& r, IngestBatch& b, std::string& what) {
  struct Slot {
    std::string name;
    uint32_t size;
    std::function<void(uint32_t)> set;
  };
  std::vector<Slot> slots;
  auto pick = [&](int n) { return static_cast<int>(r.Below(static_cast<uint64_t>(n))); };
  const uint32_t strings = b.strings_size();
  if (b.stacks_size() > 0) {
    auto* s = b.mutable_stacks(pick(b.stacks_size()));
    if (s->locations_size() > 0) {
      const int j = pick(s->locations_size());
      slots.push_back({"stacks[].locations[]", static_cast<uint32_t>(b.locations_size()),
                       [s, j](uint32_t v) { s->set_locations(j, v); }});
    }
  }
  if (b.locations_size() > 0) {
    auto* l = b.mutable_locations(pick(b.locations_size()));
    slots.push_back({"locations[].mapping", static_cast<uint32_t>(b.mappings_size() + 1),
                     [l](uint32_t v) { l->set_mapping(v); }});
    if (l->lines_size() > 0) {
      auto* line = l->mutable_lines(pick(l->lines_size()));
      slots.push_back({"locations[].lines[].function", static_cast<uint32_t>(b.functions_size()),
                       [line](uint32_t v) { line->set_function(v); }});
    }
  }
  if (b.functions_size() > 0) {
    auto* f = b.mutable_functions(pick(b.functions_size()));
    slots.push_back({"functions[].name", strings, [f](uint32_t v) { f->set_name(v); }});
    slots.push_back({"functions[].system_name", strings, [f](uint32_t v) { f->set_system_name(v); }});
    slots.push_back({"functions[].filename", strings, [f](uint32_t v) { f->set_filename(v); }});
  }
  if (b.mappings_size() > 0) {
    auto* m = b.mutable_mappings(pick(b.mappings_size()));
    slots.push_back({"mappings[].filename", strings, [m](uint32_t v) { m->set_filename(v); }});
    slots.push_back({"mappings[].build_id", strings, [m](uint32_t v) { m->set_build_id(v); }});
  }
  if (b.label_sets_size() > 0) {
    auto* set = b.mutable_label_sets(pick(b.label_sets_size()));
    if (set->labels_size() > 0) {
      auto* l = set->mutable_labels(pick(set->labels_size()));
      slots.push_back({"label_sets[].labels[].key", strings, [l](uint32_t v) { l->set_key(v); }});
      slots.push_back({"label_sets[].labels[].value", strings, [l](uint32_t v) { l->set_value(v); }});
    }
  }
  if (b.types_size() > 0) {
    auto* t = b.mutable_types(pick(b.types_size()));
    slots.push_back({"types[].name", strings, [t](uint32_t v) { t->set_name(v); }});
    slots.push_back({"types[].sample_unit", strings, [t](uint32_t v) { t->set_sample_unit(v); }});
  }
  if (b.samples_size() > 0) {
    auto* s = b.mutable_samples(pick(b.samples_size()));
    slots.push_back({"samples[].type", static_cast<uint32_t>(b.types_size()), [s](uint32_t v) { s->set_type(v); }});
    slots.push_back({"samples[].label_set", static_cast<uint32_t>(b.label_sets_size()),
                     [s](uint32_t v) { s->set_label_set(v); }});
    slots.push_back({"samples[].stack", static_cast<uint32_t>(b.stacks_size()), [s](uint32_t v) { s->set_stack(v); }});
  }
  if (b.metric_types_size() > 0) {
    auto* m = b.mutable_metric_types(pick(b.metric_types_size()));
    slots.push_back({"metric_types[].name", strings, [m](uint32_t v) { m->set_name(v); }});
    slots.push_back({"metric_types[].unit", strings, [m](uint32_t v) { m->set_unit(v); }});
  }
  if (b.metric_points_size() > 0) {
    auto* m = b.mutable_metric_points(pick(b.metric_points_size()));
    slots.push_back({"metric_points[].metric", static_cast<uint32_t>(b.metric_types_size()),
                     [m](uint32_t v) { m->set_metric(v); }});
    slots.push_back({"metric_points[].label_set", static_cast<uint32_t>(b.label_sets_size()),
                     [m](uint32_t v) { m->set_label_set(v); }});
  }
  if (b.gpu_activities_size() > 0) {
    auto* a = b.mutable_gpu_activities(pick(b.gpu_activities_size()));
    slots.push_back({"gpu_activities[].label_set", static_cast<uint32_t>(b.label_sets_size()),
                     [a](uint32_t v) { a->set_label_set(v); }});
    slots.push_back({"gpu_activities[].name", strings, [a](uint32_t v) { a->set_name(v); }});
    slots.push_back({"gpu_activities[].system_name", strings, [a](uint32_t v) { a->set_system_name(v); }});
    slots.push_back({"gpu_activities[].stack", static_cast<uint32_t>(b.stacks_size() + 1),
                     [a](uint32_t v) { a->set_stack(v); }});
  }
  if (b.gpu_trace_coverage_size() > 0) {
    auto* c = b.mutable_gpu_trace_coverage(pick(b.gpu_trace_coverage_size()));
    slots.push_back({"gpu_trace_coverage[].label_set", static_cast<uint32_t>(b.label_sets_size()),
                     [c](uint32_t v) { c->set_label_set(v); }});
  }
  if (b.counters_size() > 0) {
    auto* c = b.mutable_counters(pick(b.counters_size()));
    slots.push_back({"counters[].name", strings, [c](uint32_t v) { c->set_name(v); }});
  }
  if (slots.empty()) return;
  const Slot& slot = slots[r.Below(slots.size())];
  const uint32_t v = OddIndex(r, slot.size);
  slot.set(v);
  what += slot.name + "=" + std::to_string(v) + " (of " + std::to_string(slot.size) + ") ";
}

// Many samples of one (time, series, stack), at a value the server may take:
// their sum is past INT64_MAX, in one batch and across batches, so flush,
// compaction and queries all merge past it.
void AddOverflowRun(CaseRng& r, IngestBatch& b, int64_t now_ns, std::string& what) {
  BatchFactory f(b.agent_id(), b.sequence(), b.start_unix_nanos(), b.end_unix_nanos());
  const std::vector<int64_t> values = {int64_t{1} << 50, int64_t{1} << 50, int64_t{1} << 49,
                                       std::numeric_limits<int64_t>::max(), int64_t{1} << 62};
  const std::vector<int64_t> counts = {2, 16, 4097, 8192, 9000};
  const int64_t value = r.Pick(values), count = r.Pick(counts);
  // One second per 10 minutes, so batches of a run land on the same key.
  const int64_t t = now_ns / (600 * kSec) * (600 * kSec);
  for (int64_t i = 0; i < count; ++i) {
    f.Add("main@app;overflow_probe@app", {{"node", "overflow"}, {"pid", "1"}}, value, t);
  }
  b = f.batch();
  what += "overflow run: " + std::to_string(count) + " samples of " + std::to_string(value) + " on one key ";
}

void MutateSemantic(CaseRng& r, IngestBatch& b, int64_t now_ns, uint64_t index, std::string& what) {
  const Pools& p = Pools::Get();
  auto pick = [&](int n) { return static_cast<int>(r.Below(static_cast<uint64_t>(n))); };
  auto extreme = [&] { return r.Pick(kExtremeInts); };
  switch (r.Below(17)) {
    case 0:
    case 1:
      MutateIndex(r, b, what);
      break;
    case 2: {  // sample values
      const int64_t v = extreme();
      const bool all = r.Chance(0.3);
      for (int i = 0; i < b.samples_size(); ++i) {
        if (all || i == 0) b.mutable_samples(i)->set_value(v);
      }
      what += std::string(all ? "every " : "first ") + "samples[].value=" + std::to_string(v) + " ";
      break;
    }
    case 3: {  // periods
      if (b.types_size() == 0) break;
      const int64_t v = extreme();
      b.mutable_types(pick(b.types_size()))->set_period_nanos(v);
      what += "types[].period_nanos=" + std::to_string(v) + " ";
      break;
    }
    case 4: {  // times, in every table that has them
      const int64_t t = ExtremeTime(r, now_ns);
      switch (r.Below(6)) {
        case 0: if (b.samples_size()) b.mutable_samples(pick(b.samples_size()))->set_time_unix_nanos(t); break;
        case 1: b.set_start_unix_nanos(t); break;
        case 2: b.set_end_unix_nanos(t); break;
        case 3: if (b.metric_points_size()) b.mutable_metric_points(0)->set_time_unix_nanos(t); break;
        case 4: if (b.gpu_activities_size()) b.mutable_gpu_activities(0)->set_start_unix_nanos(t); break;
        default:
          if (b.gpu_trace_coverage_size()) b.mutable_gpu_trace_coverage(0)->set_second_unix_nanos(t);
          break;
      }
      what += "a time=" + std::to_string(t) + " ";
      break;
    }
    case 5: {  // sequences: on agents of their own, as a sequence of 2^64-1 ends an agent
      const uint64_t seqs[] = {0, 1, UINT64_MAX, UINT64_MAX - 1, uint64_t{1} << 63, uint64_t{1} << 62};
      const uint64_t s = seqs[r.Below(6)];
      b.set_agent_id("fuzz-burn-" + std::to_string(index % 4));
      b.set_sequence(s);
      what += "sequence=" + std::to_string(s) + " ";
      break;
    }
    case 6: {  // frame and activity kinds
      const int kinds[] = {3, 4, 77, -1, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()};
      const int k = kinds[r.Below(6)];
      if (r.Chance(0.7) && b.locations_size() > 0) {
        b.mutable_locations(pick(b.locations_size()))->set_kind(static_cast<warpscope::v1::FrameKind>(k));
        what += "locations[].kind=" + std::to_string(k) + " ";
      } else if (b.gpu_activities_size() > 0) {
        b.mutable_gpu_activities(0)->set_kind(static_cast<warpscope::v1::GpuActivityKind>(k));
        what += "gpu_activities[].kind=" + std::to_string(k) + " ";
      }
      break;
    }
    case 7: {  // strings: long, invalid UTF-8, control characters
      const size_t k = r.Below(p.odd_strings.size());
      if (r.Chance(0.15)) {
        b.set_agent_id(p.odd_strings[k]);
        what += "agent_id=odd_strings[" + std::to_string(k) + "] ";
      } else if (b.strings_size() > 1) {
        const int i = 1 + pick(b.strings_size() - 1);
        b.set_strings(i, p.odd_strings[k]);
        what += "strings[" + std::to_string(i) + "]=odd_strings[" + std::to_string(k) + "] ";
      }
      break;
    }
    case 8: {  // metric values
      const double values[] = {std::nan(""), std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity(), -0.0, std::numeric_limits<double>::max(),
                               std::numeric_limits<double>::denorm_min(), -1e308};
      const double v = values[r.Below(7)];
      if (b.metric_points_size() == 0) {
        b.add_strings("gpu_utilization");
        b.add_strings("percent");
        auto* m = b.add_metric_types();
        m->set_name(b.strings_size() - 2);
        m->set_unit(b.strings_size() - 1);
        auto* point = b.add_metric_points();
        point->set_time_unix_nanos(now_ns / kSec * kSec);
        point->set_metric(b.metric_types_size() - 1);
        point->set_label_set(0);
        point->set_value(v);
      } else {
        b.mutable_metric_points(pick(b.metric_points_size()))->set_value(v);
      }
      char text[32];
      std::snprintf(text, sizeof(text), "%g", v);
      what += std::string("metric value=") + text + " ";
      break;
    }
    case 9: {  // GPU activity rows with extreme fields
      auto* a = b.add_gpu_activities();
      a->set_start_unix_nanos(r.Chance(0.5) ? now_ns : ExtremeTime(r, now_ns));
      a->set_duration_nanos(r.Chance(0.3) ? 1 + static_cast<int64_t>(r.Below(1000)) : extreme());
      a->set_label_set(b.label_sets_size() > 0 ? 0 : OddIndex(r, 0));
      a->set_kind(static_cast<warpscope::v1::GpuActivityKind>(r.Below(4)));
      a->set_name(r.Chance(0.8) ? 0 : OddIndex(r, b.strings_size()));
      a->set_device(r.Chance(0.5) ? 0 : UINT32_MAX);
      a->set_stream(static_cast<uint32_t>(r.Next()));
      a->set_correlation_id(r.Chance(0.5) ? UINT64_MAX : 0);
      a->set_graph_id(r.Next());
      a->set_grid_x(r.Chance(0.5) ? 0 : UINT32_MAX);
      a->set_block_x(r.Chance(0.5) ? 0 : UINT32_MAX);
      a->set_bytes(r.Chance(0.5) ? UINT64_MAX : 0);
      a->set_stack(r.Chance(0.5) ? 0 : OddIndex(r, b.stacks_size() + 1));
      what += "gpu activity start=" + std::to_string(a->start_unix_nanos()) +
              " duration=" + std::to_string(a->duration_nanos()) + " kind=" + std::to_string(a->kind()) + " ";
      break;
    }
    case 10: {  // coverage rows
      auto* c = b.add_gpu_trace_coverage();
      c->set_label_set(0);
      c->set_second_unix_nanos(r.Chance(0.5) ? now_ns / kSec * kSec : ExtremeTime(r, now_ns));
      const uint64_t recorded[] = {0, 1, 1000, UINT64_MAX};
      c->set_recorded(recorded[r.Below(4)]);
      const uint64_t sent[] = {0, c->recorded(), c->recorded() + 1, UINT64_MAX};
      c->set_sent(sent[r.Below(4)]);
      c->set_complete_until_unix_nanos(r.Chance(0.5) ? c->second_unix_nanos() + kSec : extreme());
      what += "coverage recorded=" + std::to_string(c->recorded()) + " sent=" + std::to_string(c->sent()) +
              " second=" + std::to_string(c->second_unix_nanos()) + " ";
      break;
    }
    case 11: {  // label sets: duplicate keys, empty keys, too many, unsorted
      if (b.label_sets_size() == 0) break;
      auto* set = b.mutable_label_sets(pick(b.label_sets_size()));
      switch (r.Below(5)) {
        case 0:
          if (set->labels_size() > 0) {
            auto* l = set->add_labels();
            *l = set->labels(0);
            what += "label set repeats a key index ";
          }
          break;
        case 1:
          if (set->labels_size() > 0 && set->labels(0).key() < static_cast<uint32_t>(b.strings_size())) {
            // the same key text under a second string index
            b.add_strings(b.strings(set->labels(0).key()));
            auto* l = set->add_labels();
            l->set_key(b.strings_size() - 1);
            l->set_value(set->labels(0).value());
            what += "label set repeats a key under another string index ";
          }
          break;
        case 2:
          set->add_labels()->set_key(0);
          what += "label with an empty key ";
          break;
        case 3: {
          const int n = r.Chance(0.5) ? 64 : 65;
          set->clear_labels();
          for (int i = 0; i < n; ++i) {
            b.add_strings("k" + std::to_string(i));
            auto* l = set->add_labels();
            l->set_key(b.strings_size() - 1);
            l->set_value(b.strings_size() - 1);
          }
          what += "label set of " + std::to_string(n) + " labels ";
          break;
        }
        default:
          if (set->labels_size() > 1) {
            set->mutable_labels()->SwapElements(0, set->labels_size() - 1);
            what += "labels unsorted ";
          }
          break;
      }
      break;
    }
    case 12: {  // stack shapes: at and past the depth limit, empty; locations without or with many lines
      if (b.locations_size() == 0 || b.samples_size() == 0) break;
      switch (r.Below(3)) {
        case 0: {
          const int depth = r.Chance(0.5) ? 1024 : 1025;
          auto* s = b.add_stacks();
          for (int i = 0; i < depth; ++i) s->add_locations(0);
          b.mutable_samples(0)->set_stack(b.stacks_size() - 1);
          what += "stack of depth " + std::to_string(depth) + " ";
          break;
        }
        case 1:
          b.add_stacks();
          b.mutable_samples(0)->set_stack(b.stacks_size() - 1);
          what += "empty stack ";
          break;
        default: {
          auto* l = b.mutable_locations(0);
          const int lines = static_cast<int>(r.Below(3)) * 32 + (r.Chance(0.5) ? 0 : 1);  // 0, 1, 32..65
          l->clear_lines();
          for (int i = 0; i < lines; ++i) l->add_lines()->set_function(0);
          what += "location with " + std::to_string(lines) + " lines ";
          break;
        }
      }
      break;
    }
    case 13: {
      const uint32_t v[] = {0, 2, UINT32_MAX};
      b.set_schema_version(v[r.Below(3)]);
      what += "schema_version=" + std::to_string(b.schema_version()) + " ";
      break;
    }
    case 14: {  // metric types: an empty name, or more than a batch may carry
      if (r.Chance(0.5)) {
        auto* m = b.add_metric_types();
        m->set_name(0);
        what += "metric type with an empty name ";
      } else {
        const int n = r.Chance(0.5) ? 1024 : 1025;
        for (int i = b.metric_types_size(); i < n; ++i) {
          b.add_strings("m" + std::to_string(i % 1100));
          b.add_metric_types()->set_name(b.strings_size() - 1);
        }
        what += std::to_string(n) + " metric types ";
      }
      break;
    }
    case 15:
      // Rarely: one run holds up to 9000 rows, and the head keeps them until
      // the next flush; more would make the head, not a leak, set the RSS.
      if (r.Chance(0.15)) {
        AddOverflowRun(r, b, now_ns, what);
        break;
      }
      [[fallthrough]];
    default: {  // other integers: lines, addresses, counters, launch sizes
      const int64_t v = extreme();
      if (b.locations_size() > 0) {
        auto* l = b.mutable_locations(pick(b.locations_size()));
        l->set_address(static_cast<uint64_t>(v));
        if (l->lines_size() > 0) l->mutable_lines(0)->set_line(v);
      }
      if (b.counters_size() > 0) b.mutable_counters(0)->set_value(static_cast<uint64_t>(v));
      what += "address/line/counter=" + std::to_string(v) + " ";
      break;
    }
  }
}

// ---------------------------------------------------------------------------
// Byte mutations of the protobuf and of the zstd frame.

std::string Varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s += static_cast<char>(v | 0x80);
    v >>= 7;
  }
  s += static_cast<char>(v);
  return s;
}

std::string Zstd(const std::string& in, int level, bool checksum, bool content_size) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum ? 1 : 0);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
  std::string out(ZSTD_compressBound(in.size()), '\0');
  const size_t n = ZSTD_compress2(c, out.data(), out.size(), in.data(), in.size());
  ZSTD_freeCCtx(c);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

// 70 MiB of zeros in a few KB: past the server's 64 MiB decompressed cap.
const std::string& ZstdBomb() {
  static const std::string* bomb = new std::string(Zstd(std::string(70u << 20, '\0'), 1, false, false));
  return *bomb;
}

// One random edit of `s`; `other` is a second message to splice from.
void EditBytes(CaseRng& r, std::string& s, const std::string& other, std::string& what) {
  const size_t pos = s.empty() ? 0 : r.Below(s.size() + 1);
  switch (r.Below(10)) {
    case 0:
    case 1:
      if (!s.empty()) {
        const size_t i = r.Below(s.size());
        s[i] = static_cast<char>(s[i] ^ (1 << r.Below(8)));
        what += "flip@" + std::to_string(i) + " ";
      }
      break;
    case 2:
      if (!s.empty()) {
        const unsigned char bytes[] = {0x00, 0xff, 0x80, 0x7f};
        const size_t i = r.Below(s.size());
        s[i] = static_cast<char>(bytes[r.Below(4)]);
        what += "set@" + std::to_string(i) + " ";
      }
      break;
    case 3:
      s.resize(pos);
      what += "cut@" + std::to_string(pos) + " ";
      break;
    case 4: {
      const size_t n = std::min<size_t>(1 + r.Below(64), s.size() - pos);
      s.erase(pos, n);
      what += "erase@" + std::to_string(pos) + "+" + std::to_string(n) + " ";
      break;
    }
    case 5: {
      std::string junk;
      for (uint64_t i = 0, n = 1 + r.Below(16); i < n; ++i) junk += static_cast<char>(r.Next());
      s.insert(pos, junk);
      what += "insert@" + std::to_string(pos) + "+" + std::to_string(junk.size()) + " ";
      break;
    }
    case 6: {  // a field header with an extreme length or value
      const uint64_t field = 1 + r.Below(20), wire = r.Below(8);
      const uint64_t values[] = {0, 1, 127, 128, 1ull << 31, 1ull << 32, UINT64_MAX, 1ull << 62};
      s.insert(pos, Varint(field << 3 | wire) + Varint(values[r.Below(8)]));
      what += "field " + std::to_string(field) + "/" + std::to_string(wire) + "@" + std::to_string(pos) + " ";
      break;
    }
    case 7: {
      const size_t from = other.empty() ? 0 : r.Below(other.size());
      s = s.substr(0, pos) + other.substr(from);
      what += "splice@" + std::to_string(pos) + "<-" + std::to_string(from) + " ";
      break;
    }
    case 8: {
      const size_t n = std::min<size_t>(1 + r.Below(256), s.size() - pos);
      const size_t to = r.Below(s.size() + 1);
      s.insert(to, s.substr(pos, n));
      what += "dup@" + std::to_string(pos) + "+" + std::to_string(n) + "->" + std::to_string(to) + " ";
      break;
    }
    default:
      if (r.Chance(0.5)) {
        s += other;  // protobuf merges concatenated messages
        what += "concat ";
      } else {
        s += Varint(127 << 3 | 2) + Varint(5) + "extra";  // an unknown field
        what += "unknown field 127 ";
      }
      break;
  }
}

// ---------------------------------------------------------------------------
// One case: what to send, in a form that can be written to a file.

// Sequences grow with the case index, and with the phase, so each agent's
// batches arrive in increasing order and are stored, not duplicates.
uint64_t SequenceFor(int phase, uint64_t index) { return (uint64_t(phase) + 1) << 40 | (index + 1); }

FuzzCase MakeSemantic(CaseRng& r, int phase, uint64_t index, int64_t now_ns) {
  FuzzCase c;
  c.kind = Kind::kSemantic;
  IngestBatch b = ValidBatch(r, "fuzz-agent-" + std::to_string(index % 8), SequenceFor(phase, index), now_ns);
  // One batch in eight goes unmutated: queries need stored data.
  const uint64_t mutations = r.Chance(0.125) ? 0 : 1 + r.Below(3);
  for (uint64_t i = 0; i < mutations; ++i) MutateSemantic(r, b, now_ns, index, c.what);
  if (mutations == 0) c.what = "valid batch ";
  c.body = Zstd(b.SerializeAsString(), 1, false, true);
  return c;
}

FuzzCase MakeBytes(CaseRng& r, int phase, uint64_t index, int64_t now_ns) {
  FuzzCase c;
  c.kind = Kind::kBytes;
  const std::string agent = "fuzz-bytes-" + std::to_string(index % 4);
  IngestBatch b = ValidBatch(r, agent, SequenceFor(phase, index), now_ns);
  if (r.Chance(0.2)) MutateSemantic(r, b, now_ns, index, c.what);
  const std::string proto = b.SerializeAsString();
  const std::string other = ValidBatch(r, agent, SequenceFor(phase, index), now_ns).SerializeAsString();
  const int levels[] = {-5, 1, 3, 19};
  const int level = levels[r.Below(4)];
  const bool checksum = r.Chance(0.3), content_size = r.Chance(0.8);
  if (r.Chance(0.6)) {  // the protobuf
    std::string s = proto;
    c.what += "proto: ";
    for (uint64_t i = 0, n = 1 + r.Below(3); i < n; ++i) EditBytes(r, s, other, c.what);
    if (r.Chance(0.1)) {
      c.body = s;
      c.content_encoding = "";
      c.what += "(uncompressed)";
    } else {
      c.body = Zstd(s, level, checksum, content_size);
    }
    return c;
  }
  std::string frame = Zstd(proto, level, checksum, content_size);
  c.what += "zstd (level " + std::to_string(level) + (checksum ? ", checksum" : "") +
            (content_size ? "" : ", no content size") + "): ";
  switch (r.Below(8)) {
    case 0: {  // two frames: the server must take both (the batches merge)
      frame += Zstd(other, 1, false, true);
      c.what += "two frames ";
      break;
    }
    case 1: {  // a skippable frame first (magic 0x184D2A50)
      std::string skip = "\x50\x2a\x4d\x18";
      const uint32_t n = static_cast<uint32_t>(r.Below(64));
      skip += std::string(reinterpret_cast<const char*>(&n), 4) + std::string(n, 's');
      frame = skip + frame;
      c.what += "skippable frame first ";
      break;
    }
    case 2:
      frame += std::string(1 + r.Below(16), static_cast<char>(r.Next()));
      c.what += "garbage after the frame ";
      break;
    case 3:
      if (r.Chance(0.05)) {  // rarely: the decompression cap
        frame = ZstdBomb();
        c.what += "bomb (70 MiB) ";
        break;
      }
      [[fallthrough]];
    default: {
      const std::string other_frame = Zstd(other, 1, false, true);
      for (uint64_t i = 0, n = 1 + r.Below(3); i < n; ++i) EditBytes(r, frame, other_frame, c.what);
      break;
    }
  }
  c.body = frame;
  return c;
}

// A raw request to /api/v1/ingest with one oddity in its framing or headers.
FuzzCase MakeRaw(CaseRng& r, int phase, uint64_t index, int64_t now_ns) {
  FuzzCase c;
  c.kind = Kind::kRaw;
  const std::string body =
      Zstd(ValidBatch(r, "fuzz-raw-" + std::to_string(index % 4), SequenceFor(phase, index), now_ns).SerializeAsString(),
           1, false, true);
  std::string line = "POST /api/v1/ingest HTTP/1.1";
  std::vector<std::pair<std::string, std::string>> headers = {
      {"Host", "127.0.0.1"}, {"Authorization", std::string("Bearer ") + kFuzzToken},
      {"Content-Type", "application/x-protobuf"}, {"Content-Encoding", "zstd"},
      {"Content-Length", std::to_string(body.size())}, {"Connection", "close"}};
  auto set = [&](const std::string& k, const std::string& v) {
    for (auto& h : headers) {
      if (h.first == k) {
        h.second = v;
        return;
      }
    }
    headers.push_back({k, v});
  };
  auto drop = [&](const std::string& k) {
    std::erase_if(headers, [&](const auto& h) { return h.first == k; });
  };
  std::string payload = body;
  std::string extra_lines;
  // Now and then the client half-closes right after a request (the sender
  // otherwise does so only when the server stays silent: ingest_fuzz_test.cc).
  c.shut_wr = r.Chance(0.1);
  auto chunked = [&](const std::string& size_line, bool terminate) {
    drop("Content-Length");
    set("Transfer-Encoding", "chunked");
    payload = size_line + "\r\n" + body + "\r\n" + (terminate ? "0\r\n\r\n" : "");
  };
  auto pick = [&](const std::vector<std::string>& v) { return r.Pick(v); };
  switch (r.Below(15)) {
    case 0: {
      const size_t less = 1 + r.Below(std::min<size_t>(body.size(), 64));
      set("Content-Length", std::to_string(body.size() - less));
      c.what = "Content-Length " + std::to_string(less) + " short";
      break;
    }
    case 1:
      set("Content-Length", std::to_string(body.size() + 1 + r.Below(100)));
      c.what = "Content-Length past the body";
      break;
    case 2: {
      const std::string v = pick({"-5", "abc", "1e3", " 12", "+12", "0x10", "18446744073709551616",
                                  "99999999999999999999", "12, 12", "", "100000000000000000"});
      set("Content-Length", v);
      c.what = "Content-Length \"" + v + "\"";
      break;
    }
    case 3:
      headers.push_back({"Content-Length", r.Chance(0.5) ? std::to_string(body.size()) : "7"});
      c.what = "two Content-Length headers";
      break;
    case 4: {
      const std::string size = pick({"", "ffffffffffffffff", "-1", "zz", "0x10", "1;ext=1", "100000000"});
      char hex[32];
      snprintf(hex, sizeof(hex), "%zx", body.size());
      const bool valid = size.empty();
      chunked(valid ? std::string(hex) : size, r.Chance(0.8));
      c.what = valid ? "chunked" : "chunk size \"" + size + "\"";
      break;
    }
    case 5: {
      char hex[32];
      snprintf(hex, sizeof(hex), "%zx", body.size());
      chunked(hex, true);
      headers.push_back({"Content-Length", std::to_string(body.size())});
      c.what = "Content-Length and Transfer-Encoding";
      break;
    }
    case 6: {
      const std::string te = pick({"gzip", "chunked, gzip", "identity", "CHUNKED", "chunked;q=1"});
      set("Transfer-Encoding", te);
      c.what = "Transfer-Encoding \"" + te + "\"";
      break;
    }
    case 7: {
      const std::string ct = pick({"", "text/plain", "application/x-protobufFOO", "application/x-protobuf; charset=utf-8",
                                   "APPLICATION/X-PROTOBUF", "application/octet-stream", "application/json",
                                   "application/x-protobuf, text/plain", "*/*"});
      if (ct.empty()) drop("Content-Type"); else set("Content-Type", ct);
      c.what = "Content-Type \"" + ct + "\"";
      break;
    }
    case 8: {
      const std::string ce = pick({"", "gzip", "br", "zstd, gzip", "ZSTD", "identity", " zstd", "zstd ", "x-zstd"});
      if (ce.empty()) drop("Content-Encoding"); else set("Content-Encoding", ce);
      c.what = "Content-Encoding \"" + ce + "\"";
      break;
    }
    case 9:
      switch (r.Below(6)) {
        case 0: extra_lines = "NoColonHere\r\n"; c.what = "header without colon"; break;
        case 1: extra_lines = "X-Folded: a\r\n continued\r\n"; c.what = "folded header"; break;
        case 2: extra_lines = "X-Long: " + std::string(8000, 'l') + "\r\n"; c.what = "8 KB header"; break;
        case 3:
          for (int i = 0; i < 300; ++i) extra_lines += "X-" + std::to_string(i) + ": v\r\n";
          c.what = "300 headers";
          break;
        case 4: extra_lines = std::string("X-Nul: a\0b\r\n", 12); c.what = "NUL in a header"; break;
        default: extra_lines = "X-Bare-LF: 1\n"; c.what = "bare LF"; break;
      }
      break;
    case 10: {
      line = pick({"GET /api/v1/ingest HTTP/1.1", "PUT /api/v1/ingest HTTP/1.1", "post /api/v1/ingest HTTP/1.1",
                   "POST /api/v1/ingest HTTP/1.0", "POST /api/v1/ingest HTTP/2.0", "POST /api/v1/ingest HTTP/9.9",
                   "POST http://127.0.0.1/api/v1/ingest HTTP/1.1", "POST /api/v1/ingest?x=%zz HTTP/1.1",
                   "POST /api/v1/ingest#frag HTTP/1.1", "POST /api/v1/ingest/ HTTP/1.1", "POST //api/v1/ingest HTTP/1.1",
                   "POST /api/v1/%69ngest HTTP/1.1", "POST  /api/v1/ingest  HTTP/1.1", "POST /api/v1/ingest",
                   "DELETE /api/v1/status HTTP/1.1", "OPTIONS * HTTP/1.1"});
      c.what = "request line \"" + line + "\"";
      break;
    }
    case 11:
      headers.push_back({"Expect", "100-continue"});
      c.what = "Expect: 100-continue";
      break;
    case 12: {
      const std::string auth = pick({"", std::string("Bearer ") + kFuzzToken + "x", std::string("bearer ") + kFuzzToken,
                                     std::string("Bearer  ") + kFuzzToken, "Basic Zm9vOmJhcg==", kFuzzToken});
      if (auth.empty()) drop("Authorization"); else set("Authorization", auth);
      c.what = "Authorization \"" + auth + "\"";
      break;
    }
    case 13: {  // two requests on one connection
      drop("Connection");
      std::string first = line + "\r\n";
      for (const auto& [k, v] : headers) first += k + ": " + v + "\r\n";
      extra_lines.clear();
      c.raw = first + "\r\n" + body;
      c.what = "two pipelined requests";
      break;
    }
    default: {
      const bool empty = r.Chance(0.5);
      payload = empty ? "" : std::string(1 + r.Below(200), static_cast<char>(r.Next()));
      set("Content-Length", std::to_string(payload.size()));
      c.what = empty ? "empty body" : "garbage body";
      break;
    }
  }
  if (c.shut_wr) c.what += " (then half-close)";
  std::string head = line + "\r\n";
  for (const auto& [k, v] : headers) head += k + ": " + v + "\r\n";
  c.raw += head + extra_lines + "\r\n" + payload;
  return c;
}

}  // namespace

FuzzCase MakeCase(uint64_t seed, int phase, uint64_t index, int64_t now_ns, const std::string& only_kinds) {
  for (uint64_t attempt = 0;; ++attempt) {
    CaseRng r(seed, index + (attempt << 48));
    const uint64_t roll = r.Below(100);
    const Kind kind = roll < 32 ? Kind::kSemantic : roll < 60 ? Kind::kBytes : roll < 65 ? Kind::kRaw : Kind::kQuery;
    if (!only_kinds.empty() && only_kinds.find(KindName(kind)) == std::string::npos) continue;
    switch (kind) {
      case Kind::kSemantic: return MakeSemantic(r, phase, index, now_ns);
      case Kind::kBytes: return MakeBytes(r, phase, index, now_ns);
      case Kind::kRaw: return MakeRaw(r, phase, index, now_ns);
      case Kind::kQuery: return MakeQueryCase(r, now_ns);
    }
  }
}

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kSemantic: return "semantic";
    case Kind::kBytes: return "bytes";
    case Kind::kRaw: return "raw-http";
    case Kind::kQuery: return "query";
  }
  return "?";
}

}  // namespace warpscope::testing::fuzz
