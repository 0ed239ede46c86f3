#include "storage/embedded/dictionary/dictionary_writer.h"

#include <algorithm>
#include <string_view>
#include <tuple>

#include "storage/embedded/dictionary/content_key.h"
#include "storage/embedded/dictionary/dictionary_schema.h"

namespace warpscope::dictionary {

using warpscope::v1::IngestBatch;

uint64_t ContentIds::Add(const std::string& key) {
  uint64_t id = next_id_++;
  ids_.emplace(key, id);
  staged_.push_back(key);
  return id;
}

void ContentIds::Load(std::string key, uint64_t id) {
  ids_.emplace(std::move(key), id);
  next_id_ = std::max(next_id_, id + 1);
}

void ContentIds::Rollback() {
  for (const std::string& key : staged_) ids_.erase(key);
  next_id_ -= staged_.size();
  staged_.clear();
}

StatusOr<std::unique_ptr<DictionaryWriter>> DictionaryWriter::Open(const std::string& path, const BatchLimits& limits) {
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  RETURN_IF_ERROR(ConfigureDurability(*db));
  RETURN_IF_ERROR(CreateOrCheckSchema(*db));
  std::unique_ptr<DictionaryWriter> writer(new DictionaryWriter(std::move(db), limits));
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
                             [&](SqliteStatement& s) { strings_.Load(std::string(s.ColumnBlob(1)), u(s, 0)); }));
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
                             [&](SqliteStatement& s) { stacks_.Load(std::string(s.ColumnBlob(1)), u(s, 0)); }));
  RETURN_IF_ERROR(ForEachRow(*db_, "SELECT id, labels FROM label_sets",
                             [&](SqliteStatement& s) { label_sets_.Load(std::string(s.ColumnBlob(1)), u(s, 0)); }));
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
StatusOr<uint64_t> DictionaryWriter::Intern(ContentIds& ids, SqliteStatement& insert, BindFn bind, uint64_t* new_rows) {
  if (uint64_t id = ids.Find(key_); id != 0) return id;
  uint64_t id = ids.Add(key_);
  insert.Reset();
  insert.BindInt(1, static_cast<int64_t>(id));
  bind(insert);
  RETURN_IF_ERROR(insert.StepDone());
  ++*new_rows;
  return id;
}

Status DictionaryWriter::InternAll(const IngestBatch& batch, bool record_sequence, InternedBatch* out) {
  uint64_t* new_rows = &out->new_rows;
  auto i64 = [](uint64_t v) { return static_cast<int64_t>(v); };

  std::vector<uint64_t> string_ids(batch.strings_size());
  for (int i = 0; i < batch.strings_size(); ++i) {
    key_ = batch.strings(i);
    ASSIGN_OR_RETURN(string_ids[i], Intern(
                                        strings_, insert_string_,
                                        [&](SqliteStatement& s) { s.BindBlob(2, batch.strings(i)); }, new_rows));
  }
  // Index 0 means "no mapping" in locations; batch mapping k is at k + 1.
  std::vector<uint64_t> mapping_ids(batch.mappings_size() + 1, 0);
  for (int i = 0; i < batch.mappings_size(); ++i) {
    uint64_t file = string_ids[batch.mappings(i).filename()];
    uint64_t build = string_ids[batch.mappings(i).build_id()];
    key_ = Key({file, build});
    ASSIGN_OR_RETURN(mapping_ids[i + 1], Intern(
                                             mappings_, insert_mapping_,
                                             [&](SqliteStatement& s) {
                                               s.BindInt(2, i64(file));
                                               s.BindInt(3, i64(build));
                                             },
                                             new_rows));
  }
  std::vector<uint64_t> function_ids(batch.functions_size());
  for (int i = 0; i < batch.functions_size(); ++i) {
    const auto& f = batch.functions(i);
    uint64_t name = string_ids[f.name()], system = string_ids[f.system_name()], file = string_ids[f.filename()];
    key_ = Key({name, system, file});
    ASSIGN_OR_RETURN(function_ids[i], Intern(
                                          functions_, insert_function_,
                                          [&](SqliteStatement& s) {
                                            s.BindInt(2, i64(name));
                                            s.BindInt(3, i64(system));
                                            s.BindInt(4, i64(file));
                                          },
                                          new_rows));
  }
  std::vector<uint64_t> location_ids(batch.locations_size());
  std::string lines;
  for (int i = 0; i < batch.locations_size(); ++i) {
    const auto& loc = batch.locations(i);
    lines.clear();
    for (const auto& line : loc.lines()) {
      PutVarint(&lines, function_ids[line.function()]);
      PutVarint(&lines, ZigZag(line.line()));
    }
    uint64_t mapping = mapping_ids[loc.mapping()];
    key_ = Key({mapping, loc.address(), static_cast<uint64_t>(loc.kind())});
    key_ += lines;
    ASSIGN_OR_RETURN(location_ids[i], Intern(
                                          locations_, insert_location_,
                                          [&](SqliteStatement& s) {
                                            s.BindInt(2, i64(mapping));
                                            s.BindInt(3, i64(loc.address()));
                                            s.BindInt(4, loc.kind());
                                            s.BindBlob(5, lines);
                                          },
                                          new_rows));
  }
  out->stack_ids.resize(batch.stacks_size());
  for (int i = 0; i < batch.stacks_size(); ++i) {
    key_.clear();
    for (uint32_t loc : batch.stacks(i).locations()) PutVarint(&key_, location_ids[loc]);
    ASSIGN_OR_RETURN(out->stack_ids[i],
                     Intern(
                         stacks_, insert_stack_, [&](SqliteStatement& s) { s.BindBlob(2, key_); }, new_rows));
  }
  out->label_set_ids.resize(batch.label_sets_size());
  // (name, key id, value id); sorted by name so equal sets encode equally.
  std::vector<std::tuple<std::string_view, uint64_t, uint64_t>> labels;
  for (int i = 0; i < batch.label_sets_size(); ++i) {
    labels.clear();
    for (const auto& l : batch.label_sets(i).labels()) {
      labels.emplace_back(batch.strings(l.key()), string_ids[l.key()], string_ids[l.value()]);
    }
    std::sort(labels.begin(), labels.end());
    key_.clear();
    for (const auto& [name, key_id, value_id] : labels) {
      PutVarint(&key_, key_id);
      PutVarint(&key_, value_id);
    }
    uint64_t before = *new_rows;
    ASSIGN_OR_RETURN(out->label_set_ids[i],
                     Intern(
                         label_sets_, insert_label_set_, [&](SqliteStatement& s) { s.BindBlob(2, key_); }, new_rows));
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
    uint64_t name = string_ids[t.name()], unit = string_ids[t.sample_unit()];
    key_ = Key({name, unit, ZigZag(t.period_nanos())});
    ASSIGN_OR_RETURN(out->type_ids[i], Intern(
                                           types_, insert_type_,
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
    uint64_t name = string_ids[m.name()], unit = string_ids[m.unit()];
    key_ = Key({name, unit, ZigZag(kMetricTypePeriodNanos)});
    ASSIGN_OR_RETURN(out->metric_type_ids[i], Intern(
                                                  types_, insert_type_,
                                                  [&](SqliteStatement& s) {
                                                    s.BindInt(2, i64(name));
                                                    s.BindInt(3, i64(unit));
                                                    s.BindInt(4, kMetricTypePeriodNanos);
                                                  },
                                                  new_rows));
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

void DictionaryWriter::CommitCache() {
  for (ContentIds* ids : {&strings_, &mappings_, &functions_, &locations_, &stacks_, &label_sets_, &types_}) {
    ids->Commit();
  }
}

void DictionaryWriter::RollbackCache() {
  for (ContentIds* ids : {&strings_, &mappings_, &functions_, &locations_, &stacks_, &label_sets_, &types_}) {
    ids->Rollback();
  }
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
