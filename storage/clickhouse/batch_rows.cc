#include "storage/clickhouse/batch_rows.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_set>

#include "base/saturating.h"
#include "storage/clickhouse/content_ids.h"
#include "storage/clickhouse/row_binary.h"
#include "storage/clickhouse/sql_text.h"

namespace warpscope::clickhouse {
namespace {

using warpscope::v1::IngestBatch;

// One dictionary table's rows of a batch: the ids the batch references, in
// its own order, and the rows of those the replica has not stored yet.
class DictionaryRows {
 public:
  DictionaryRows(DictionaryTable which, const char* table, const char* columns) {
    out_.which = which;
    out_.table = table;
    out_.columns = columns;
  }
  // Positions i of `ids` to write: not known stored, each id once.
  std::vector<uint32_t> ToWrite(const std::vector<uint64_t>& ids, const WrittenDictionaryIds* written) {
    std::vector<uint32_t> out;
    if (written != nullptr) {
      out = written->Unwritten(out_.which, ids);
    } else {
      out.resize(ids.size());
      for (size_t i = 0; i < ids.size(); ++i) out[i] = static_cast<uint32_t>(i);
    }
    std::unordered_set<uint64_t> seen;
    seen.reserve(out.size());
    size_t kept = 0;
    for (uint32_t i : out) {
      if (ids[i] != 0 && seen.insert(ids[i]).second) out[kept++] = i;
    }
    out.resize(kept);
    return out;
  }
  void Add(uint64_t id, std::string row) {
    out_.ids.push_back(id);
    out_.rows.push_back(std::move(row));
  }
  DictionaryTableRows Take() { return std::move(out_); }

 private:
  DictionaryTableRows out_;
};

// Past this many series the repair check leaves the series out of its
// condition (the literal list would near max_query_size, 256 KiB).
constexpr size_t kMaxSeriesInRepairCheck = 1000;

// A fact table's block; every row ends in batch_id. The repair check finds
// them by it within the batch's types, series and [min time, max time]: all
// in the tables' sort keys, so it reads the agent's own rows of those
// minutes, not the fleet's.
class FactBuilder {
 public:
  FactBuilder(const char* table, const char* columns, const char* time_column) : time_column_(time_column) {
    out_.table = table;
    out_.columns = columns;
  }
  RowBinaryWriter& row(int64_t time, uint64_t series_id) {
    if (series_.empty() || series_.back() != series_id) series_.push_back(series_id);  // sorted in Take
    if (out_.rows == 0 || time < min_time_) min_time_ = time;
    if (out_.rows == 0 || time > max_time_) max_time_ = time;
    ++out_.rows;
    return writer_;
  }
  void Type(uint64_t type_id) {
    if (std::find(type_ids_.begin(), type_ids_.end(), type_id) == type_ids_.end()) type_ids_.push_back(type_id);
  }
  FactTableRows Take(uint64_t batch_id) {
    out_.data = writer_.Take();
    if (!type_ids_.empty()) out_.stored_where = "type_id IN " + SqlIdList(type_ids_) + " AND ";
    std::sort(series_.begin(), series_.end());
    series_.erase(std::unique(series_.begin(), series_.end()), series_.end());
    if (series_.size() <= kMaxSeriesInRepairCheck) {
      out_.stored_where += "series_id IN " + SqlIdList(series_) + " AND ";
    }
    out_.stored_where += std::string(time_column_) + " >= " + SqlInt64(min_time_) + " AND " + time_column_ +
                         " <= " + SqlInt64(max_time_) + " AND batch_id = " + std::to_string(batch_id);
    out_.stored_count = out_.rows;
    return std::move(out_);
  }

 private:
  const char* time_column_;
  FactTableRows out_;
  RowBinaryWriter writer_;
  int64_t min_time_ = 0, max_time_ = 0;
  std::vector<uint64_t> type_ids_;  // the key's prefix, for samples and metric points
  std::vector<uint64_t> series_;
};

int64_t HourOf(int64_t time_ns) {
  const int64_t h = time_ns / kHourNs;
  return (time_ns % kHourNs < 0 ? h - 1 : h) * kHourNs;
}

// samples_1h rows of a batch (see batch_rows.h), with its marker row.
FactTableRows RollupRows(const IngestBatch& batch, const std::vector<uint64_t>& type_ids,
                         const std::vector<uint64_t>& series_ids, const std::vector<uint64_t>& stack_ids,
                         uint64_t batch_id) {
  FactTableRows out;
  out.table = "samples_1h";
  out.columns = "type_id, hour_ns, series_id, stack_id, value";
  if (batch.samples_size() == 0) return out;
  std::map<std::tuple<uint64_t, int64_t, uint64_t, uint64_t>, int64_t> sums;
  for (const auto& s : batch.samples()) {
    SaturatingAddTo(sums[{type_ids[s.type()], HourOf(s.time_unix_nanos()), series_ids[s.label_set()], stack_ids[s.stack()]}],
                    s.value());
  }
  RowBinaryWriter w;
  for (const auto& [key, value] : sums) {
    const auto& [type_id, hour, series_id, stack_id] = key;
    w.UInt64(type_id);
    w.Int64(hour);
    w.UInt64(series_id);
    w.UInt64(stack_id);
    w.Int64(value);
  }
  const int64_t marker_hour = HourOf(batch.samples(0).time_unix_nanos());
  w.UInt64(0);
  w.Int64(marker_hour);
  w.UInt64(0);
  w.UInt64(batch_id);
  w.Int64(1);
  out.data = w.Take();
  out.rows = sums.size() + 1;
  out.stored_where = "type_id = 0 AND hour_ns = " + SqlInt64(marker_hour) +
                     " AND series_id = 0 AND stack_id = " + std::to_string(batch_id);
  out.stored_count = 1;
  return out;
}

}  // namespace

BatchRows BuildBatchRows(const IngestBatch& batch, const WrittenDictionaryIds* written) {
  BatchRows out;
  out.batch_id = BatchId(batch.agent_id(), batch.sequence());
  auto str = [&](uint32_t index) -> const std::string& { return batch.strings(static_cast<int>(index)); };
  static const std::string kNone;
  auto mapping_file = [&](uint32_t mapping) -> const std::string& {
    return mapping == 0 ? kNone : str(batch.mappings(static_cast<int>(mapping) - 1).filename());
  };
  auto build_id = [&](uint32_t mapping) -> const std::string& {
    return mapping == 0 ? kNone : str(batch.mappings(static_cast<int>(mapping) - 1).build_id());
  };

  // First every id (facts need them all), then the rows of the ids not
  // stored yet: in steady state an agent's batch repeats nearly all of its
  // functions, locations and stacks, so most rows are never built.
  IdHasher hasher;
  std::vector<uint64_t> function_ids(batch.functions_size());
  for (int i = 0; i < batch.functions_size(); ++i) {
    const auto& f = batch.functions(i);
    function_ids[i] = hasher.Function(str(f.name()), str(f.system_name()), str(f.filename()));
  }
  std::vector<uint64_t> location_ids(batch.locations_size());
  for (int i = 0; i < batch.locations_size(); ++i) {
    const auto& l = batch.locations(i);
    hasher.BeginLocation(mapping_file(l.mapping()), build_id(l.mapping()), l.address(),
                         static_cast<uint8_t>(l.kind()));
    for (const auto& line : l.lines()) hasher.LocationLine(function_ids[line.function()], line.line());
    location_ids[i] = hasher.EndLocation();
  }
  std::vector<uint64_t> stack_ids(batch.stacks_size());
  std::vector<uint64_t> scratch;
  for (int i = 0; i < batch.stacks_size(); ++i) {
    scratch.clear();
    for (uint32_t l : batch.stacks(i).locations()) scratch.push_back(location_ids[l]);
    stack_ids[i] = hasher.Stack(scratch.data(), scratch.size());
  }
  // Label sets, sorted by name (the interface's Labels order) before hashing.
  std::vector<uint64_t> series_ids(batch.label_sets_size());
  std::vector<storage::Labels> sorted_labels(batch.label_sets_size());
  for (int i = 0; i < batch.label_sets_size(); ++i) {
    storage::Labels& labels = sorted_labels[i];
    for (const auto& l : batch.label_sets(i).labels()) labels.emplace_back(str(l.key()), str(l.value()));
    std::stable_sort(labels.begin(), labels.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    series_ids[i] = SeriesId(labels);
  }
  // Types: profile types and metric types in one table, told apart by kind.
  struct TypeEntry {
    TypeKind kind;
    const std::string* name;
    const std::string* unit;
    int64_t period;
  };
  std::vector<TypeEntry> type_rows;
  std::vector<uint64_t> all_type_ids;
  auto add_type = [&](TypeKind kind, const std::string& name, const std::string& unit, int64_t period) {
    const uint64_t id = TypeId(kind, name, unit, period);
    type_rows.push_back({kind, &name, &unit, period});
    all_type_ids.push_back(id);
    return id;
  };
  std::vector<uint64_t> type_ids(batch.types_size());
  for (int i = 0; i < batch.types_size(); ++i) {
    const auto& t = batch.types(i);
    type_ids[i] = add_type(TypeKind::kProfile, str(t.name()), str(t.sample_unit()), t.period_nanos());
  }
  std::vector<uint64_t> metric_ids(batch.metric_types_size());
  for (int i = 0; i < batch.metric_types_size(); ++i) {
    const auto& t = batch.metric_types(i);
    metric_ids[i] = add_type(TypeKind::kMetric, str(t.name()), str(t.unit()), 0);
  }
  // Strings: only what GPU activities name (kernel names), each hashed once.
  std::vector<uint64_t> string_id_of(batch.gpu_activities_size() > 0 ? batch.strings_size() : 0, 0);
  std::vector<uint64_t> named_ids;
  std::vector<uint32_t> named_strings;
  auto string_id = [&](uint32_t index) {
    uint64_t& id = string_id_of[index];
    if (id == 0) {
      id = StringId(str(index));
      named_ids.push_back(id);
      named_strings.push_back(index);
    }
    return id;
  };
  for (const auto& a : batch.gpu_activities()) {
    string_id(a.name());
    string_id(a.system_name());
  }

  // The rows to write.
  DictionaryRows strings(DictionaryTable::kStrings, "strings", "string_id, value");
  for (uint32_t i : strings.ToWrite(named_ids, written)) {
    RowBinaryWriter w;
    w.UInt64(named_ids[i]);
    w.String(str(named_strings[i]));
    strings.Add(named_ids[i], w.Take());
  }
  // Stacks first: a stack known to be stored implies its locations and their
  // functions are (IngestWriter writes the tables in order and stops at the
  // first failure), so only the locations and functions of the other stacks
  // are looked up. In steady state that skips nearly every lookup.
  DictionaryRows stacks(DictionaryTable::kStacks, "stacks", "stack_id, location_ids");
  const std::vector<uint32_t> stacks_to_write = stacks.ToWrite(stack_ids, written);
  std::vector<uint64_t> candidate_locations(location_ids.size(), 0);  // 0: skipped by ToWrite
  for (uint32_t i : stacks_to_write) {
    for (uint32_t l : batch.stacks(static_cast<int>(i)).locations()) candidate_locations[l] = location_ids[l];
  }
  DictionaryRows locations(DictionaryTable::kLocations, "locations",
                           "location_id, address, kind, mapping_file, build_id, lines.function_id, lines.line");
  const std::vector<uint32_t> locations_to_write = locations.ToWrite(candidate_locations, written);
  std::vector<uint64_t> candidate_functions(function_ids.size(), 0);
  for (uint32_t i : locations_to_write) {
    for (const auto& line : batch.locations(static_cast<int>(i)).lines()) {
      candidate_functions[line.function()] = function_ids[line.function()];
    }
  }
  DictionaryRows functions(DictionaryTable::kFunctions, "functions", "function_id, name, system_name, filename");
  for (uint32_t i : functions.ToWrite(candidate_functions, written)) {
    const auto& f = batch.functions(static_cast<int>(i));
    RowBinaryWriter w;
    w.UInt64(function_ids[i]);
    w.String(str(f.name()));
    w.String(str(f.system_name()));
    w.String(str(f.filename()));
    functions.Add(function_ids[i], w.Take());
  }
  for (uint32_t i : locations_to_write) {
    const auto& l = batch.locations(static_cast<int>(i));
    RowBinaryWriter w;
    w.UInt64(location_ids[i]);
    w.UInt64(l.address());
    w.UInt8(static_cast<uint8_t>(l.kind()));
    w.String(mapping_file(l.mapping()));
    w.String(build_id(l.mapping()));
    w.VarUInt(l.lines_size());
    for (const auto& line : l.lines()) w.UInt64(function_ids[line.function()]);
    w.VarUInt(l.lines_size());
    for (const auto& line : l.lines()) w.Int64(line.line());
    locations.Add(location_ids[i], w.Take());
  }
  for (uint32_t i : stacks_to_write) {
    const auto& stack = batch.stacks(static_cast<int>(i));
    RowBinaryWriter w;
    w.UInt64(stack_ids[i]);
    w.VarUInt(stack.locations_size());
    for (uint32_t l : stack.locations()) w.UInt64(location_ids[l]);
    stacks.Add(stack_ids[i], w.Take());
  }
  DictionaryRows label_sets(DictionaryTable::kLabelSets, "label_sets", "series_id, labels.name, labels.value");
  for (uint32_t i : label_sets.ToWrite(series_ids, written)) {
    const storage::Labels& labels = sorted_labels[i];
    RowBinaryWriter w;
    w.UInt64(series_ids[i]);
    w.VarUInt(labels.size());
    for (const auto& [name, value] : labels) w.String(name);
    w.VarUInt(labels.size());
    for (const auto& [name, value] : labels) w.String(value);
    label_sets.Add(series_ids[i], w.Take());
  }
  DictionaryRows types(DictionaryTable::kTypes, "types", "type_id, kind, name, unit, period_nanos");
  for (uint32_t i : types.ToWrite(all_type_ids, written)) {
    const TypeEntry& t = type_rows[i];
    RowBinaryWriter w;
    w.UInt64(all_type_ids[i]);
    w.UInt8(static_cast<uint8_t>(t.kind));
    w.String(*t.name);
    w.String(*t.unit);
    w.Int64(t.period);
    types.Add(all_type_ids[i], w.Take());
  }

  // Facts.
  FactBuilder samples("samples", "type_id, time_ns, series_id, stack_id, value, batch_id", "time_ns");
  for (const auto& s : batch.samples()) {
    const uint64_t type_id = type_ids[s.type()];
    samples.Type(type_id);
    RowBinaryWriter& w = samples.row(s.time_unix_nanos(), series_ids[s.label_set()]);
    w.UInt64(type_id);
    w.Int64(s.time_unix_nanos());
    w.UInt64(series_ids[s.label_set()]);
    w.UInt64(stack_ids[s.stack()]);
    w.Int64(s.value());
    w.UInt64(out.batch_id);
  }
  FactBuilder points("metric_points", "type_id, series_id, time_ns, value, batch_id", "time_ns");
  for (const auto& p : batch.metric_points()) {
    const uint64_t type_id = metric_ids[p.metric()];
    points.Type(type_id);
    RowBinaryWriter& w = points.row(p.time_unix_nanos(), series_ids[p.label_set()]);
    w.UInt64(type_id);
    w.UInt64(series_ids[p.label_set()]);
    w.Int64(p.time_unix_nanos());
    w.Float64(p.value());
    w.UInt64(out.batch_id);
  }
  FactBuilder activities("gpu_activities",
                         "start_ns, duration_ns, series_id, kind, name_id, system_name_id, device, stream, "
                         "correlation_id, graph_id, grid_x, grid_y, grid_z, block_x, block_y, block_z, "
                         "registers_per_thread, static_shared_bytes, dynamic_shared_bytes, bytes, copy_kind, "
                         "stack_id, batch_id, launch_start_ns, launch_duration_ns, launch_tid, launch_api",
                         "start_ns");
  for (const auto& a : batch.gpu_activities()) {
    const uint64_t name_id = string_id(a.name());
    const uint64_t system_name_id = string_id(a.system_name());
    RowBinaryWriter& w = activities.row(a.start_unix_nanos(), series_ids[a.label_set()]);
    w.Int64(a.start_unix_nanos());
    w.Int64(a.duration_nanos());
    w.UInt64(series_ids[a.label_set()]);
    w.UInt8(static_cast<uint8_t>(a.kind()));
    w.UInt64(name_id);
    w.UInt64(system_name_id);
    for (uint32_t v : {a.device(), a.stream()}) w.UInt32(v);
    w.UInt64(a.correlation_id());
    w.UInt64(a.graph_id());
    for (uint32_t v : {a.grid_x(), a.grid_y(), a.grid_z(), a.block_x(), a.block_y(), a.block_z(),
                       a.registers_per_thread(), a.static_shared_bytes(), a.dynamic_shared_bytes()}) {
      w.UInt32(v);
    }
    w.UInt64(a.bytes());
    w.UInt32(a.copy_kind());
    w.UInt64(a.stack() == 0 ? 0 : stack_ids[a.stack() - 1]);
    w.UInt64(out.batch_id);
    w.Int64(a.launch_start_unix_nanos());
    w.Int64(a.launch_duration_nanos());
    w.UInt32(a.launch_tid());
    w.UInt8(static_cast<uint8_t>(a.launch_api()));
  }
  FactBuilder coverage("gpu_trace_coverage", "second_ns, series_id, recorded, sent, complete_until_ns, batch_id",
                       "second_ns");
  for (const auto& c : batch.gpu_trace_coverage()) {
    RowBinaryWriter& w = coverage.row(c.second_unix_nanos(), series_ids[c.label_set()]);
    w.Int64(c.second_unix_nanos());
    w.UInt64(series_ids[c.label_set()]);
    w.UInt64(c.recorded());
    w.UInt64(c.sent());
    w.Int64(c.complete_until_unix_nanos());
    w.UInt64(out.batch_id);
  }

  for (DictionaryRows* d : {&strings, &functions, &locations, &stacks, &label_sets, &types}) {
    DictionaryTableRows rows = d->Take();
    if (!rows.ids.empty()) out.dictionaries.push_back(std::move(rows));
  }
  FactTableRows rollup = RollupRows(batch, type_ids, series_ids, stack_ids, out.batch_id);
  for (FactBuilder* f : {&samples, &points, &activities, &coverage}) {
    FactTableRows rows = f->Take(out.batch_id);
    if (rows.rows > 0) out.facts.push_back(std::move(rows));
    if (f == &samples && rollup.rows > 0) out.facts.push_back(std::move(rollup));
  }
  return out;
}

}  // namespace warpscope::clickhouse
