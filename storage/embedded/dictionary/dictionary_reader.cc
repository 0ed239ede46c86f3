#include "storage/embedded/dictionary/dictionary_reader.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "storage/embedded/dictionary/content_key.h"
#include "storage/embedded/dictionary/dictionary_schema.h"

namespace warpscope::dictionary {
namespace {

Status Corrupt(const char* table, uint64_t id) {
  return DataLossError(std::string("malformed blob in ") + table + " row " + std::to_string(id));
}

}  // namespace

StatusOr<std::unique_ptr<DictionaryReader>> DictionaryReader::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  RETURN_IF_ERROR(ConfigureDurability(*db));
  std::unique_ptr<DictionaryReader> reader(new DictionaryReader(std::move(db)));
  RETURN_IF_ERROR(reader->PrepareStatements());
  return reader;
}

Status DictionaryReader::PrepareStatements() {
  struct {
    SqliteStatement* stmt;
    const char* sql;
  } const statements[] = {
      {&string_, "SELECT value FROM strings WHERE id = ?"},
      {&string_id_, "SELECT id FROM strings WHERE value = ?"},
      {&mapping_, "SELECT filename_id, build_id_id FROM mappings WHERE id = ?"},
      {&function_, "SELECT name_id, system_name_id, filename_id FROM functions WHERE id = ?"},
      {&location_, "SELECT mapping_id, address, kind, lines FROM locations WHERE id = ?"},
      {&stack_, "SELECT location_ids FROM stacks WHERE id = ?"},
      {&label_set_, "SELECT labels FROM label_sets WHERE id = ?"},
      {&type_, "SELECT name_id, sample_unit_id, period_nanos FROM profile_types WHERE id = ?"},
      {&series_, "SELECT label_set_id FROM label_index WHERE key_id = ? AND value_id = ? ORDER BY label_set_id"},
      {&all_series_, "SELECT id FROM label_sets ORDER BY id"},
      // The (key_id, ...) primary key makes DISTINCT key_id an index walk.
      {&label_names_,
       "SELECT s.value FROM (SELECT DISTINCT key_id FROM label_index) k JOIN strings s ON s.id = k.key_id "
       "ORDER BY s.value"},
      {&label_values_,
       "SELECT s.value FROM (SELECT DISTINCT value_id FROM label_index WHERE key_id = ?) v "
       "JOIN strings s ON s.id = v.value_id ORDER BY s.value"},
  };
  for (const auto& s : statements) {
    ASSIGN_OR_RETURN(*s.stmt, db_->Prepare(s.sql));
  }
  return Status::Ok();
}

DictionaryReader::ResetOnExit::~ResetOnExit() {
  for (SqliteStatement* stmt :
       {&reader_->string_, &reader_->string_id_, &reader_->mapping_, &reader_->function_, &reader_->location_,
        &reader_->stack_, &reader_->label_set_, &reader_->type_, &reader_->series_, &reader_->all_series_,
        &reader_->label_names_, &reader_->label_values_}) {
    stmt->Reset();
  }
}

StatusOr<std::string> DictionaryReader::String(uint64_t id) {
  string_.Reset();
  string_.BindInt(1, static_cast<int64_t>(id));
  ASSIGN_OR_RETURN(bool row, string_.Step());
  if (!row) return DataLossError("string " + std::to_string(id) + " is referenced but missing");
  return std::string(string_.ColumnBlob(0));
}

StatusOr<uint64_t> DictionaryReader::StringId(const std::string& value) {
  string_id_.Reset();
  string_id_.BindBlob(1, value);
  ASSIGN_OR_RETURN(bool row, string_id_.Step());
  return row ? static_cast<uint64_t>(string_id_.ColumnInt(0)) : 0;
}

StatusOr<std::vector<uint64_t>> DictionaryReader::Ids(SqliteStatement& stmt) {
  std::vector<uint64_t> ids;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return ids;
    ids.push_back(static_cast<uint64_t>(stmt.ColumnInt(0)));
  }
}

StatusOr<std::vector<ResolvedStack>> DictionaryReader::ResolveStacks(const std::vector<uint64_t>& stack_ids) {
  ResetOnExit reset(this);
  ASSIGN_OR_RETURN(std::vector<std::vector<uint64_t>> stack_locations, StackLocationsNoReset(stack_ids));
  // Stacks of one call share most locations: each is read once.
  std::vector<uint64_t> distinct;
  std::unordered_map<uint64_t, size_t> index_of;
  for (const std::vector<uint64_t>& locations : stack_locations) {
    for (uint64_t id : locations) {
      if (index_of.try_emplace(id, distinct.size()).second) distinct.push_back(id);
    }
  }
  ASSIGN_OR_RETURN(std::vector<std::vector<ResolvedFrame>> frames, ResolveLocationsNoReset(distinct));
  std::vector<ResolvedStack> out(stack_ids.size());
  for (size_t i = 0; i < stack_ids.size(); ++i) {
    out[i].id = stack_ids[i];
    for (uint64_t id : stack_locations[i]) {
      const std::vector<ResolvedFrame>& lines = frames[index_of[id]];
      out[i].frames.insert(out[i].frames.end(), lines.begin(), lines.end());
    }
  }
  return out;
}

StatusOr<std::vector<std::vector<uint64_t>>> DictionaryReader::StackLocations(const std::vector<uint64_t>& stack_ids) {
  ResetOnExit reset(this);
  return StackLocationsNoReset(stack_ids);
}

StatusOr<std::vector<std::vector<ResolvedFrame>>> DictionaryReader::ResolveLocations(
    const std::vector<uint64_t>& location_ids) {
  ResetOnExit reset(this);
  return ResolveLocationsNoReset(location_ids);
}

StatusOr<std::vector<std::vector<uint64_t>>> DictionaryReader::StackLocationsNoReset(
    const std::vector<uint64_t>& stack_ids) {
  std::vector<std::vector<uint64_t>> out;
  out.reserve(stack_ids.size());
  for (uint64_t stack_id : stack_ids) {
    stack_.Reset();
    stack_.BindInt(1, static_cast<int64_t>(stack_id));
    ASSIGN_OR_RETURN(bool row, stack_.Step());
    // Rows refer only to stacks the dictionary had: a missing one means the
    // dictionary is behind the data, not a bad request.
    if (!row) {
      return DataLossError("stack " + std::to_string(stack_id) + " is referenced but missing from the dictionary");
    }
    std::string_view in = stack_.ColumnBlob(0);
    std::vector<uint64_t> locations;
    while (!in.empty()) {
      uint64_t location_id = 0;
      if (!GetVarint(&in, &location_id)) return Corrupt("stacks", stack_id);
      locations.push_back(location_id);
    }
    out.push_back(std::move(locations));
  }
  return out;
}

StatusOr<std::vector<std::vector<ResolvedFrame>>> DictionaryReader::ResolveLocationsNoReset(
    const std::vector<uint64_t>& location_ids) {
  // A memo for this call only: locations of one query share most strings
  // (files, mappings). Nothing is kept across calls, so the reader's memory
  // stays flat.
  std::unordered_map<uint64_t, std::string> strings;
  auto string = [&](uint64_t id) -> StatusOr<std::string> {
    if (auto it = strings.find(id); it != strings.end()) return it->second;
    ASSIGN_OR_RETURN(std::string s, String(id));
    strings.emplace(id, s);
    return s;
  };
  std::vector<std::vector<ResolvedFrame>> out;
  out.reserve(location_ids.size());
  for (uint64_t id : location_ids) {
    location_.Reset();
    location_.BindInt(1, static_cast<int64_t>(id));
    ASSIGN_OR_RETURN(bool row, location_.Step());
    if (!row) return DataLossError("location " + std::to_string(id) + " is referenced but missing");
    ResolvedFrame base;
    base.location_id = id;
    uint64_t mapping_id = static_cast<uint64_t>(location_.ColumnInt(0));
    base.address = static_cast<uint64_t>(location_.ColumnInt(1));
    base.kind = static_cast<warpscope::v1::FrameKind>(location_.ColumnInt(2));
    std::string lines(location_.ColumnBlob(3));
    if (mapping_id != 0) {
      mapping_.Reset();
      mapping_.BindInt(1, static_cast<int64_t>(mapping_id));
      ASSIGN_OR_RETURN(bool has_mapping, mapping_.Step());
      if (!has_mapping) return DataLossError("mapping " + std::to_string(mapping_id) + " is missing");
      uint64_t file_id = mapping_.ColumnInt(0), build_id = mapping_.ColumnInt(1);
      ASSIGN_OR_RETURN(base.mapping_file, string(file_id));
      ASSIGN_OR_RETURN(base.build_id, string(build_id));
    }
    std::vector<ResolvedFrame> frames;
    std::string_view in = lines;
    while (!in.empty()) {
      uint64_t function_id = 0, zigzag_line = 0;
      if (!GetVarint(&in, &function_id) || !GetVarint(&in, &zigzag_line)) return Corrupt("locations", id);
      function_.Reset();
      function_.BindInt(1, static_cast<int64_t>(function_id));
      ASSIGN_OR_RETURN(bool has_function, function_.Step());
      if (!has_function) return DataLossError("function " + std::to_string(function_id) + " is missing");
      uint64_t name = function_.ColumnInt(0), system = function_.ColumnInt(1), file = function_.ColumnInt(2);
      ResolvedFrame frame = base;
      ASSIGN_OR_RETURN(frame.function_name, string(name));
      ASSIGN_OR_RETURN(frame.system_name, string(system));
      ASSIGN_OR_RETURN(frame.file, string(file));
      frame.line = UnZigZag(zigzag_line);
      frame.inlined = true;
      frames.push_back(std::move(frame));
    }
    if (frames.empty()) frames.push_back(base);
    frames.back().inlined = false;
    frames.shrink_to_fit();
    out.push_back(std::move(frames));
  }
  return out;
}

StatusOr<std::vector<std::string>> DictionaryReader::Strings(const std::vector<uint64_t>& ids) {
  ResetOnExit reset(this);
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (uint64_t id : ids) {
    ASSIGN_OR_RETURN(std::string value, String(id));
    out.push_back(std::move(value));
  }
  return out;
}

StatusOr<Labels> DictionaryReader::LabelSet(uint64_t label_set_id) {
  ResetOnExit reset(this);
  label_set_.Reset();
  label_set_.BindInt(1, static_cast<int64_t>(label_set_id));
  ASSIGN_OR_RETURN(bool row, label_set_.Step());
  if (!row) {
    return DataLossError("label set " + std::to_string(label_set_id) + " is referenced but missing from the dictionary");
  }
  std::string blob(label_set_.ColumnBlob(0));
  Labels labels;
  std::string_view in = blob;
  while (!in.empty()) {
    uint64_t key = 0, value = 0;
    if (!GetVarint(&in, &key) || !GetVarint(&in, &value)) return Corrupt("label_sets", label_set_id);
    ASSIGN_OR_RETURN(std::string name, String(key));
    ASSIGN_OR_RETURN(std::string text, String(value));
    labels.emplace_back(std::move(name), std::move(text));
  }
  return labels;
}

StatusOr<ProfileTypeInfo> DictionaryReader::ProfileType(uint64_t type_id) {
  ResetOnExit reset(this);
  type_.Reset();
  type_.BindInt(1, static_cast<int64_t>(type_id));
  ASSIGN_OR_RETURN(bool row, type_.Step());
  if (!row) return NotFoundError("profile type " + std::to_string(type_id) + " not found");
  uint64_t name = type_.ColumnInt(0), unit = type_.ColumnInt(1);
  ProfileTypeInfo info;
  info.period_nanos = type_.ColumnInt(2);
  ASSIGN_OR_RETURN(info.name, String(name));
  ASSIGN_OR_RETURN(info.sample_unit, String(unit));
  return info;
}

StatusOr<std::vector<uint64_t>> DictionaryReader::SeriesMatching(const Labels& equal_matchers) {
  ResetOnExit reset(this);
  if (equal_matchers.empty()) {
    all_series_.Reset();
    return Ids(all_series_);
  }
  std::vector<uint64_t> result;
  for (size_t i = 0; i < equal_matchers.size(); ++i) {
    ASSIGN_OR_RETURN(uint64_t key, StringId(equal_matchers[i].first));
    ASSIGN_OR_RETURN(uint64_t value, StringId(equal_matchers[i].second));
    if (key == 0 || value == 0) return std::vector<uint64_t>{};
    series_.Reset();
    series_.BindInt(1, static_cast<int64_t>(key));
    series_.BindInt(2, static_cast<int64_t>(value));
    ASSIGN_OR_RETURN(std::vector<uint64_t> ids, Ids(series_));
    if (i == 0) {
      result = std::move(ids);
    } else {
      std::vector<uint64_t> both;
      std::set_intersection(result.begin(), result.end(), ids.begin(), ids.end(), std::back_inserter(both));
      result = std::move(both);
    }
    if (result.empty()) break;
  }
  return result;
}

StatusOr<std::vector<std::string>> DictionaryReader::LabelNames() {
  ResetOnExit reset(this);
  label_names_.Reset();
  std::vector<std::string> names;
  while (true) {
    ASSIGN_OR_RETURN(bool row, label_names_.Step());
    if (!row) return names;
    names.emplace_back(label_names_.ColumnBlob(0));
  }
}

StatusOr<std::vector<std::string>> DictionaryReader::LabelValues(const std::string& name) {
  ResetOnExit reset(this);
  ASSIGN_OR_RETURN(uint64_t key, StringId(name));
  std::vector<std::string> values;
  if (key == 0) return values;
  label_values_.Reset();
  label_values_.BindInt(1, static_cast<int64_t>(key));
  while (true) {
    ASSIGN_OR_RETURN(bool row, label_values_.Step());
    if (!row) return values;
    values.emplace_back(label_values_.ColumnBlob(0));
  }
}

StatusOr<DictionaryRowCounts> DictionaryReader::RowCounts() {
  DictionaryRowCounts counts;
  struct {
    uint64_t* field;
    const char* table;
  } const tables[] = {
      {&counts.strings, "strings"},
      {&counts.mappings, "mappings"},
      {&counts.functions, "functions"},
      {&counts.locations, "locations"},
      {&counts.stacks, "stacks"},
      {&counts.label_sets, "label_sets"},
      {&counts.label_index, "label_index"},
      {&counts.profile_types, "profile_types"},
      {&counts.agent_sequences, "agent_sequences"},
  };
  for (const auto& t : tables) {
    ASSIGN_OR_RETURN(SqliteStatement stmt, db_->Prepare(std::string("SELECT count(*) FROM ") + t.table));
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    *t.field = row ? static_cast<uint64_t>(stmt.ColumnInt(0)) : 0;
  }
  return counts;
}

}  // namespace warpscope::dictionary
