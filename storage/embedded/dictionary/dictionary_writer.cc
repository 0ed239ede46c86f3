#include "storage/embedded/dictionary/dictionary_writer.h"

#include <algorithm>
#include <string_view>
#include <tuple>

#include "storage/embedded/dictionary/content_fingerprint.h"
#include "storage/embedded/dictionary/content_key.h"
#include "storage/embedded/dictionary/dictionary_schema.h"

namespace warpscope::dictionary {

using warpscope::v1::IngestBatch;

StatusOr<std::unique_ptr<DictionaryWriter>> DictionaryWriter::Open(const std::string& path, const BatchLimits& limits,
                                                                   bool create) {
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  RETURN_IF_ERROR(ConfigureDurability(*db));
  RETURN_IF_ERROR(CreateOrCheckSchema(*db, create));
  ASSIGN_OR_RETURN(const uint64_t store_id, ReadStoreId(*db));
  std::unique_ptr<DictionaryWriter> writer(new DictionaryWriter(std::move(db), limits));
  writer->store_id_ = store_id;
  RETURN_IF_ERROR(writer->PrepareStatements());
  RETURN_IF_ERROR(writer->LoadCache());
  return writer;
}

Status DictionaryWriter::PrepareStatements() {
  struct {
    SqliteStatement* stmt;
    const char* sql;
  } const statements[] = {
      {&begin_, "BEGIN IMMEDIATE"},
      {&commit_, "COMMIT"},
      {&rollback_, "ROLLBACK"},
      {&insert_string_, "INSERT INTO strings(id, value) VALUES(?, ?)"},
      {&insert_mapping_, "INSERT INTO mappings(id, filename_id, build_id_id) VALUES(?, ?, ?)"},
      {&insert_function_, "INSERT INTO functions(id, name_id, system_name_id, filename_id) VALUES(?, ?, ?, ?)"},
      {&insert_location_, "INSERT INTO locations(id, mapping_id, address, kind, lines) VALUES(?, ?, ?, ?, ?)"},
      {&insert_stack_, "INSERT INTO stacks(id, location_ids) VALUES(?, ?)"},
      {&insert_label_set_, "INSERT INTO label_sets(id, labels) VALUES(?, ?)"},
      {&insert_label_index_, "INSERT INTO label_index(label_set_id, key_id, value_id) VALUES(?, ?, ?)"},
      {&insert_type_, "INSERT INTO profile_types(id, name_id, sample_unit_id, period_nanos) VALUES(?, ?, ?, ?)"},
      {&upsert_sequence_,
       "INSERT INTO agent_sequences(agent_id, last_sequence) VALUES(?, ?) "
       "ON CONFLICT(agent_id) DO UPDATE SET last_sequence = excluded.last_sequence"},
  };
  for (const auto& s : statements) {
    ASSIGN_OR_RETURN(*s.stmt, db_->Prepare(s.sql));
  }
  return Status::Ok();
}

namespace {

std::string Key(std::initializer_list<uint64_t> values) {
  std::string key;
  for (uint64_t v : values) PutVarint(&key, v);
  return key;
}

// Runs `sql` and calls `row(stmt)` for each result row.
template <typename RowFn>
Status ForEachRow(SqliteDb& db, const char* sql, RowFn row) {
  ASSIGN_OR_RETURN(SqliteStatement stmt, db.Prepare(sql));
  while (true) {
    ASSIGN_OR_RETURN(bool has_row, stmt.Step());
    if (!has_row) return Status::Ok();
    row(stmt);
  }
}

}  // namespace

Status DictionaryWriter::LoadCache() {
  auto u = [](const SqliteStatement& s, int i) { return static_cast<uint64_t>(s.ColumnInt(i)); };
  RETURN_IF_ERROR(ForEachRow(*db_, "SELECT id, value FROM strings",
                             [&](SqliteStatement& s) { strings_.Load(s.ColumnBlob(1), u(s, 0)); }));
  RETURN_IF_ERROR(ForEachRow(*db_, "SELECT id, filename_id, build_id_id FROM mappings", [&](SqliteStatement& s) {
    mappings_.Load(Key({u(s, 1), u(s, 2)}), u(s, 0));
  }));
  RETURN_IF_ERROR(
      ForEachRow(*db_, "SELECT id, name_id, system_name_id, filename_id FROM functions", [&](SqliteStatement& s) {
        functions_.Load(Key({u(s, 1), u(s, 2), u(s, 3)}), u(s, 0));
      }));
  RETURN_IF_ERROR(
      ForEachRow(*db_, "SELECT id, mapping_id, address, kind, lines FROM locations", [&](SqliteStatement& s) {
        std::string key = Key({u(s, 1), u(s, 2), u(s, 3)});
        key.append(s.ColumnBlob(4));
        locations_.Load(std::move(key), u(s, 0));
      }));
  RETURN_IF_ERROR(ForEachRow(*db_, "SELECT id, location_ids FROM stacks",
                             [&](SqliteStatement& s) { stacks_.Load(s.ColumnBlob(1), u(s, 0)); }));
  RETURN_IF_ERROR(ForEachRow(*db_, "SELECT id, labels FROM label_sets",
                             [&](SqliteStatement& s) { label_sets_.Load(s.ColumnBlob(1), u(s, 0)); }));
  RETURN_IF_ERROR(
      ForEachRow(*db_, "SELECT id, name_id, sample_unit_id, period_nanos FROM profile_types", [&](SqliteStatement& s) {
        types_.Load(Key({u(s, 1), u(s, 2), ZigZag(s.ColumnInt(3))}), u(s, 0));
      }));
  return ForEachRow(*db_, "SELECT agent_id, last_sequence FROM agent_sequences",
                    [&](SqliteStatement& s) { last_sequence_[std::string(s.ColumnBlob(0))] = u(s, 1); });
}

bool DictionaryWriter::SeenBefore(const std::string& agent_id, uint64_t sequence) const {
  auto it = last_sequence_.find(agent_id);
  return it != last_sequence_.end() && sequence <= it->second;
}

template <typename BindFn>
StatusOr<uint64_t> DictionaryWriter::Intern(ContentIds& ids, std::string_view key, SqliteStatement& insert, BindFn bind,
                                            uint64_t* new_rows) {
  if (uint64_t id = ids.Find(key); id != 0) return id;
  uint64_t id = ids.Add(key);
  insert.Reset();
  insert.BindInt(1, static_cast<int64_t>(id));
  bind(insert);
  RETURN_IF_ERROR(insert.StepDone());
  ++*new_rows;
  return id;
}

// One batch's indices resolved to global ids on demand (0: not yet), with
// every string's, mapping's, function's and location's fingerprint computed up
// front. Lives for one InternAll call.
struct DictionaryWriter::BatchResolution {
  explicit BatchResolution(const IngestBatch& b)
      : batch(b),
        string_ids(b.strings_size()),
        mapping_ids(b.mappings_size() + 1),
        function_ids(b.functions_size()),
        location_ids(b.locations_size()) {}
  const IngestBatch& batch;
  std::vector<uint64_t> string_ids, mapping_ids, function_ids, location_ids;  // mapping k + 1: batch mapping k
  std::vector<Fingerprint> location_fingerprints;
};

void DictionaryWriter::FingerprintLocations(BatchResolution* r) {
  const IngestBatch& batch = r->batch;
  std::vector<Fingerprint> strings(batch.strings_size());
  for (int i = 0; i < batch.strings_size(); ++i) strings[i] = FingerprintOf(batch.strings(i));
  FingerprintBuilder b('m');
  std::vector<Fingerprint> mappings(batch.mappings_size() + 1);
  mappings[0] = b.Finish();  // "no mapping"
  for (int i = 0; i < batch.mappings_size(); ++i) {
    b.Reset('m');
    b.Add(strings[batch.mappings(i).filename()]);
    b.Add(strings[batch.mappings(i).build_id()]);
    mappings[i + 1] = b.Finish();
  }
  std::vector<Fingerprint> functions(batch.functions_size());
  for (int i = 0; i < batch.functions_size(); ++i) {
    const auto& f = batch.functions(i);
    b.Reset('f');
    b.Add(strings[f.name()]);
    b.Add(strings[f.system_name()]);
    b.Add(strings[f.filename()]);
    functions[i] = b.Finish();
  }
  r->location_fingerprints.resize(batch.locations_size());
  for (int i = 0; i < batch.locations_size(); ++i) {
    const auto& loc = batch.locations(i);
    b.Reset('l');
    b.Add(mappings[loc.mapping()]);
    b.AddU64(loc.address());
    b.AddU64(static_cast<uint64_t>(loc.kind()));
    for (const auto& line : loc.lines()) {
      b.Add(functions[line.function()]);
      b.AddU64(static_cast<uint64_t>(line.line()));
    }
    r->location_fingerprints[i] = b.Finish();
  }
}

StatusOr<uint64_t> DictionaryWriter::StringId(BatchResolution* r, uint32_t i, uint64_t* new_rows) {
  if (r->string_ids[i] != 0) return r->string_ids[i];
  const std::string& value = r->batch.strings(i);
  ASSIGN_OR_RETURN(r->string_ids[i], Intern(
                                         strings_, value, insert_string_,
                                         [&](SqliteStatement& s) { s.BindBlob(2, value); }, new_rows));
  return r->string_ids[i];
}

StatusOr<uint64_t> DictionaryWriter::MappingId(BatchResolution* r, uint32_t index, uint64_t* new_rows) {
  if (index == 0 || r->mapping_ids[index] != 0) return r->mapping_ids[index];
  const auto& m = r->batch.mappings(static_cast<int>(index - 1));
  ASSIGN_OR_RETURN(uint64_t file, StringId(r, m.filename(), new_rows));
  ASSIGN_OR_RETURN(uint64_t build, StringId(r, m.build_id(), new_rows));
  key_ = Key({file, build});
  ASSIGN_OR_RETURN(r->mapping_ids[index], Intern(
                                              mappings_, key_, insert_mapping_,
                                              [&](SqliteStatement& s) {
                                                s.BindInt(2, static_cast<int64_t>(file));
                                                s.BindInt(3, static_cast<int64_t>(build));
                                              },
                                              new_rows));
  return r->mapping_ids[index];
}

StatusOr<uint64_t> DictionaryWriter::FunctionId(BatchResolution* r, uint32_t i, uint64_t* new_rows) {
  if (r->function_ids[i] != 0) return r->function_ids[i];
  const auto& f = r->batch.functions(static_cast<int>(i));
  ASSIGN_OR_RETURN(uint64_t name, StringId(r, f.name(), new_rows));
  ASSIGN_OR_RETURN(uint64_t system, StringId(r, f.system_name(), new_rows));
  ASSIGN_OR_RETURN(uint64_t file, StringId(r, f.filename(), new_rows));
  key_ = Key({name, system, file});
  ASSIGN_OR_RETURN(r->function_ids[i], Intern(
                                           functions_, key_, insert_function_,
                                           [&](SqliteStatement& s) {
                                             s.BindInt(2, static_cast<int64_t>(name));
                                             s.BindInt(3, static_cast<int64_t>(system));
                                             s.BindInt(4, static_cast<int64_t>(file));
                                           },
                                           new_rows));
  return r->function_ids[i];
}

StatusOr<uint64_t> DictionaryWriter::LocationId(BatchResolution* r, uint32_t i, uint64_t* new_rows) {
  if (r->location_ids[i] != 0) return r->location_ids[i];
  const auto& loc = r->batch.locations(static_cast<int>(i));
  std::string lines;
  for (const auto& line : loc.lines()) {
    ASSIGN_OR_RETURN(uint64_t function, FunctionId(r, line.function(), new_rows));
    PutVarint(&lines, function);
    PutVarint(&lines, ZigZag(line.line()));
  }
  ASSIGN_OR_RETURN(uint64_t mapping, MappingId(r, loc.mapping(), new_rows));
  key_ = Key({mapping, loc.address(), static_cast<uint64_t>(loc.kind())});
  key_ += lines;
  ASSIGN_OR_RETURN(r->location_ids[i], Intern(
                                           locations_, key_, insert_location_,
                                           [&](SqliteStatement& s) {
                                             s.BindInt(2, static_cast<int64_t>(mapping));
                                             s.BindInt(3, static_cast<int64_t>(loc.address()));
                                             s.BindInt(4, loc.kind());
                                             s.BindBlob(5, lines);
                                           },
                                           new_rows));
  return r->location_ids[i];
}

Status DictionaryWriter::InternAll(const IngestBatch& batch, bool record_sequence, InternedBatch* out) {
  uint64_t* new_rows = &out->new_rows;
  auto i64 = [](uint64_t v) { return static_cast<int64_t>(v); };
  BatchResolution r(batch);
  FingerprintLocations(&r);

  out->stack_ids.resize(batch.stacks_size());
  FingerprintBuilder b('s');
  for (int i = 0; i < batch.stacks_size(); ++i) {
    const auto& locations = batch.stacks(i).locations();
    b.Reset('s');
    for (uint32_t loc : locations) b.Add(r.location_fingerprints[loc]);
    const Fingerprint fingerprint = b.Finish();
    if (uint64_t id = stack_fingerprints_.Find(fingerprint); id != 0) {
      out->stack_ids[i] = id;
      continue;
    }
    // Not seen by fingerprint (new, or known before this process started):
    // the exact path, which also interns whatever frames are new.
    std::string stack_key;
    for (uint32_t loc : locations) {
      ASSIGN_OR_RETURN(uint64_t location, LocationId(&r, loc, new_rows));
      PutVarint(&stack_key, location);
    }
    ASSIGN_OR_RETURN(out->stack_ids[i],
                     Intern(
                         stacks_, stack_key, insert_stack_, [&](SqliteStatement& s) { s.BindBlob(2, stack_key); },
                         new_rows));
    stack_fingerprints_.Insert(fingerprint, out->stack_ids[i]);
  }
  out->label_set_ids.resize(batch.label_sets_size());
  // (name, key id, value id); sorted by name so equal sets encode equally.
  std::vector<std::tuple<std::string_view, uint64_t, uint64_t>> labels;
  for (int i = 0; i < batch.label_sets_size(); ++i) {
    labels.clear();
    for (const auto& l : batch.label_sets(i).labels()) {
      ASSIGN_OR_RETURN(uint64_t key_id, StringId(&r, l.key(), new_rows));
      ASSIGN_OR_RETURN(uint64_t value_id, StringId(&r, l.value(), new_rows));
      labels.emplace_back(batch.strings(l.key()), key_id, value_id);
    }
    std::sort(labels.begin(), labels.end());
    key_.clear();
    for (const auto& [name, key_id, value_id] : labels) {
      PutVarint(&key_, key_id);
      PutVarint(&key_, value_id);
    }
    uint64_t before = *new_rows;
    ASSIGN_OR_RETURN(out->label_set_ids[i],
                     Intern(label_sets_, key_, insert_label_set_, [&](SqliteStatement& s) { s.BindBlob(2, key_); }, new_rows));
    if (*new_rows == before) continue;  // known set: its index rows exist
    for (const auto& [name, key_id, value_id] : labels) {
      insert_label_index_.Reset();
      insert_label_index_.BindInt(1, i64(out->label_set_ids[i]));
      insert_label_index_.BindInt(2, i64(key_id));
      insert_label_index_.BindInt(3, i64(value_id));
      RETURN_IF_ERROR(insert_label_index_.StepDone());
      ++*new_rows;
    }
  }
  out->type_ids.resize(batch.types_size());
  for (int i = 0; i < batch.types_size(); ++i) {
    const auto& t = batch.types(i);
    ASSIGN_OR_RETURN(uint64_t name, StringId(&r, t.name(), new_rows));
    ASSIGN_OR_RETURN(uint64_t unit, StringId(&r, t.sample_unit(), new_rows));
    key_ = Key({name, unit, ZigZag(t.period_nanos())});
    ASSIGN_OR_RETURN(out->type_ids[i], Intern(types_, key_, insert_type_,
                                           [&](SqliteStatement& s) {
                                             s.BindInt(2, i64(name));
                                             s.BindInt(3, i64(unit));
                                             s.BindInt(4, t.period_nanos());
                                           },
                                           new_rows));
  }
  out->metric_type_ids.resize(batch.metric_types_size());
  for (int i = 0; i < batch.metric_types_size(); ++i) {
    const auto& m = batch.metric_types(i);
    ASSIGN_OR_RETURN(uint64_t name, StringId(&r, m.name(), new_rows));
    ASSIGN_OR_RETURN(uint64_t unit, StringId(&r, m.unit(), new_rows));
    key_ = Key({name, unit, ZigZag(kMetricTypePeriodNanos)});
    ASSIGN_OR_RETURN(out->metric_type_ids[i], Intern(types_, key_, insert_type_,
                                                  [&](SqliteStatement& s) {
                                                    s.BindInt(2, i64(name));
                                                    s.BindInt(3, i64(unit));
                                                    s.BindInt(4, kMetricTypePeriodNanos);
                                                  },
                                                  new_rows));
  }
  if (batch.gpu_activities_size() > 0) {
    out->string_ids.assign(batch.strings_size(), 0);
    for (const auto& a : batch.gpu_activities()) {
      for (uint32_t s : {a.name(), a.system_name()}) {
        if (out->string_ids[s] == 0) {
          ASSIGN_OR_RETURN(out->string_ids[s], StringId(&r, s, new_rows));
        }
      }
    }
  }
  if (!record_sequence) return Status::Ok();
  return UpsertSequence(batch.agent_id(), batch.sequence());
}

Status DictionaryWriter::UpsertSequence(const std::string& agent_id, uint64_t sequence) {
  // Never move an agent's record backwards (a late re-send of an old batch).
  auto it = last_sequence_.find(agent_id);
  if (it != last_sequence_.end()) sequence = std::max(sequence, it->second);
  upsert_sequence_.Reset();
  upsert_sequence_.BindBlob(1, agent_id);
  upsert_sequence_.BindInt(2, static_cast<int64_t>(sequence));
  return upsert_sequence_.StepDone();
}

Status DictionaryWriter::RecordAgentSequences(const std::vector<std::pair<std::string, uint64_t>>& sequences) {
  if (sequences.empty()) return Status::Ok();
  begin_.Reset();
  RETURN_IF_ERROR(begin_.StepDone());
  Status status;
  for (const auto& [agent_id, sequence] : sequences) {
    status = UpsertSequence(agent_id, sequence);
    if (!status.ok()) break;
  }
  if (status.ok()) {
    commit_.Reset();
    status = commit_.StepDone();
  }
  if (!status.ok()) {
    rollback_.Reset();
    (void)rollback_.StepDone();
    return status.WithContext("recording agent sequences");
  }
  for (const auto& [agent_id, sequence] : sequences) {
    uint64_t& last = last_sequence_[agent_id];
    last = std::max(last, sequence);
  }
  return Status::Ok();
}

std::vector<std::pair<std::string, uint64_t>> DictionaryWriter::AgentSequences() const {
  return {last_sequence_.begin(), last_sequence_.end()};
}

DictionaryMarks DictionaryWriter::Marks() const {
  return DictionaryMarks{.store_id = store_id_,
                         .max_series_id = label_sets_.max_id(),
                         .max_stack_id = stacks_.max_id(),
                         .max_string_id = strings_.max_id(),
                         .max_type_id = types_.max_id()};
}

void DictionaryWriter::CommitCache() {
  for (ContentIds* ids : {&strings_, &mappings_, &functions_, &locations_, &stacks_, &label_sets_, &types_}) {
    ids->Commit();
  }
}

void DictionaryWriter::RollbackCache() {
  for (ContentIds* ids : {&strings_, &mappings_, &functions_, &locations_, &stacks_, &label_sets_, &types_}) {
    ids->Rollback();
  }
  // It may hold ids just taken back; it is only a cache.
  stack_fingerprints_.Clear();
}

StatusOr<InternedBatch> DictionaryWriter::InternBatch(const IngestBatch& batch, bool record_sequence) {
  // Everything is checked before the transaction opens: a bad batch writes nothing.
  RETURN_IF_ERROR(ValidateBatch(batch, limits_));
  InternedBatch out;
  begin_.Reset();
  RETURN_IF_ERROR(begin_.StepDone());
  Status status = InternAll(batch, record_sequence, &out);
  if (status.ok()) {
    commit_.Reset();
    status = commit_.StepDone();
  }
  if (!status.ok()) {
    // A failed COMMIT may leave the transaction open; ROLLBACK then ends it
    // (and fails harmlessly when SQLite already rolled back on its own).
    rollback_.Reset();
    (void)rollback_.StepDone();
    RollbackCache();
    return status.WithContext("interning batch of " + batch.agent_id() + " seq " + std::to_string(batch.sequence()));
  }
  CommitCache();
  if (record_sequence) {
    uint64_t& last = last_sequence_[batch.agent_id()];
    last = std::max(last, batch.sequence());
  }
  return out;
}

}  // namespace warpscope::dictionary
