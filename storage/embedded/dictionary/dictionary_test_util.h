// Helpers shared by the dictionary tests: scratch directories and a builder
// for IngestBatch messages. Single-threaded.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "proto/warpscope/v1/ingest.pb.h"
#include "storage/embedded/dictionary/dictionary_store.h"
#include "tests/support/scratch_dir.h"

namespace warpscope::dictionary::testing {

class ScratchDir : public warpscope::testing::ScratchDir {
 public:
  ScratchDir() : warpscope::testing::ScratchDir("dictionary_test") {}
  std::string db() const { return Path("dictionary.sqlite"); }
};

// Runs one SQL statement on the file directly, behind the store's back.
inline void ExecDirect(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// Column 0 of the first row of `sql`, run on the file directly.
inline int64_t QueryDirect(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  int64_t value = -1;
  if (sqlite3_step(stmt) == SQLITE_ROW) value = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

inline std::unique_ptr<DictionaryStore> OpenOrDie(const std::string& path) {
  StatusOr<std::unique_ptr<DictionaryStore>> store = DictionaryStore::Open(path);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

// Builds a batch the way an agent does: every string once, index 0 = "".
class BatchBuilder {
 public:
  explicit BatchBuilder(std::string agent_id = "agent-1", uint64_t sequence = 1) {
    batch_.set_schema_version(1);
    batch_.set_agent_id(std::move(agent_id));
    batch_.set_sequence(sequence);
    Str("");
  }
  uint32_t Str(const std::string& s) {
    auto [it, inserted] = strings_.try_emplace(s, batch_.strings_size());
    if (inserted) batch_.add_strings(s);
    return it->second;
  }
  // Returns the 1-based mapping index locations use.
  uint32_t Mapping(const std::string& file, const std::string& build_id) {
    auto* m = batch_.add_mappings();
    m->set_filename(Str(file));
    m->set_build_id(Str(build_id));
    return batch_.mappings_size();
  }
  uint32_t Function(const std::string& name, const std::string& system_name, const std::string& file) {
    auto* f = batch_.add_functions();
    f->set_name(Str(name));
    f->set_system_name(Str(system_name));
    f->set_filename(Str(file));
    return batch_.functions_size() - 1;
  }
  // lines: (function index, line), innermost first.
  uint32_t Location(uint32_t mapping, uint64_t address, v1::FrameKind kind,
                    const std::vector<std::pair<uint32_t, int64_t>>& lines) {
    auto* l = batch_.add_locations();
    l->set_mapping(mapping);
    l->set_address(address);
    l->set_kind(kind);
    for (const auto& [function, line] : lines) {
      auto* ln = l->add_lines();
      ln->set_function(function);
      ln->set_line(line);
    }
    return batch_.locations_size() - 1;
  }
  uint32_t Stack(const std::vector<uint32_t>& locations) {
    auto* s = batch_.add_stacks();
    for (uint32_t l : locations) s->add_locations(l);
    return batch_.stacks_size() - 1;
  }
  uint32_t LabelSet(const std::vector<std::pair<std::string, std::string>>& labels) {
    auto* set = batch_.add_label_sets();
    for (const auto& [k, v] : labels) {
      auto* l = set->add_labels();
      l->set_key(Str(k));
      l->set_value(Str(v));
    }
    return batch_.label_sets_size() - 1;
  }
  uint32_t Type(const std::string& name, const std::string& unit, int64_t period) {
    auto* t = batch_.add_types();
    t->set_name(Str(name));
    t->set_sample_unit(Str(unit));
    t->set_period_nanos(period);
    return batch_.types_size() - 1;
  }
  void Sample(int64_t time, uint32_t type, uint32_t label_set, uint32_t stack, int64_t value) {
    auto* s = batch_.add_samples();
    s->set_time_unix_nanos(time);
    s->set_type(type);
    s->set_label_set(label_set);
    s->set_stack(stack);
    s->set_value(value);
  }
  uint32_t MetricType(const std::string& name, const std::string& unit) {
    auto* m = batch_.add_metric_types();
    m->set_name(Str(name));
    m->set_unit(Str(unit));
    return batch_.metric_types_size() - 1;
  }
  void MetricPoint(int64_t time, uint32_t metric, uint32_t label_set, double value) {
    auto* p = batch_.add_metric_points();
    p->set_time_unix_nanos(time);
    p->set_metric(metric);
    p->set_label_set(label_set);
    p->set_value(value);
  }
  v1::IngestBatch& batch() { return batch_; }

 private:
  v1::IngestBatch batch_;
  std::map<std::string, uint32_t> strings_;
};

// A batch shaped like a busy node's 10 s upload: `stacks` stacks of `depth`
// frames drawn from a pool of 3000 locations (30 binaries), `label_sets`
// series, one sample per (stack, series) pair chosen round robin. `tag` is
// part of every function name and address, so batches with different tags
// share no content and batches with the same tag share all of it.
inline v1::IngestBatch RealisticBatch(const std::string& tag, uint64_t sequence, int stacks = 1000, int depth = 30,
                                      int label_sets = 50) {
  BatchBuilder b("agent-" + tag, sequence);
  std::mt19937_64 rng(42);
  std::vector<uint32_t> mappings;
  for (int m = 0; m < 30; ++m) {
    mappings.push_back(
        b.Mapping("/usr/lib/lib" + std::to_string(m) + "_" + tag + ".so", "b1d" + tag + std::to_string(m)));
  }
  const int kLocations = 3000;
  std::vector<uint32_t> locations;
  for (int i = 0; i < kLocations; ++i) {
    std::string name = "ns::Class" + std::to_string(i % 97) + "::Method" + std::to_string(i) + "_" + tag;
    uint32_t f = b.Function(name + "()", "_ZN" + name, "src/file" + std::to_string(i % 211) + ".cc");
    locations.push_back(b.Location(mappings[i % mappings.size()],
                                   0x1000 + i * 16 + std::hash<std::string>{}(tag) % 4096, v1::FRAME_KIND_NATIVE,
                                   {{f, 10 + i % 500}}));
  }
  for (int s = 0; s < stacks; ++s) {
    std::vector<uint32_t> frames;
    for (int d = 0; d < depth; ++d) frames.push_back(locations[rng() % kLocations]);
    b.Stack(frames);
  }
  uint32_t cpu = b.Type("cpu", "samples", 10'000'000);
  for (int l = 0; l < label_sets; ++l) {
    b.LabelSet({{"comm", "proc" + std::to_string(l % 10)},
                {"container_id", "c" + std::to_string(l) + tag},
                {"node", "node-" + tag},
                {"pid", std::to_string(1000 + l)}});
  }
  for (int s = 0; s < stacks; ++s) b.Sample(1'700'000'000'000'000'000, cpu, s % label_sets, s, 1 + s % 7);
  return b.batch();
}

}  // namespace warpscope::dictionary::testing
