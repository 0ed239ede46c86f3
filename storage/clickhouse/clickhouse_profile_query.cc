// ClickHouseProfileStore: profile queries (flame graphs, series, the flame
// chart's timeline). The aggregation runs in ClickHouse (docs/design/
// clickhouse.md §7); answers come back as RowBinary and only the distinct
// stacks are resolved here (DictionaryReader).
#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "base/saturating.h"
#include "storage/series_steps.h"
#include "storage/clickhouse/batch_rows.h"
#include "storage/clickhouse/clickhouse_store.h"
#include "storage/clickhouse/row_binary.h"
#include "storage/clickhouse/sql_text.h"

namespace warpscope::clickhouse {

using storage::Labels;
using storage::MergedProfile;
using storage::Series;

namespace {

// "type_id IN (...) AND time_ns >= F AND time_ns < T [AND series filter]".
std::string SampleWhere(const std::vector<uint64_t>& type_ids, int64_t from_ns, int64_t to_ns,
                        const std::string& series_filter) {
  return "type_id IN " + SqlIdList(type_ids) + " AND time_ns >= " + SqlInt64(from_ns) + " AND time_ns < " +
         SqlInt64(to_ns) + AndFilter(series_filter);
}

// A sum of positive Int64 values as ClickHouse returns it, `sum` (which
// wraps past INT64_MAX) and `fsum` (the same sum in Float64, which does
// not): saturated at INT64_MAX.
int64_t SaturatedSum(int64_t sum, double fsum) {
  return fsum >= 9.2e18 ? std::numeric_limits<int64_t>::max() : sum;
}

// The type ids of `rows` (any order, repeats), each once.
std::vector<uint64_t> DistinctTypes(std::vector<uint64_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// (stack_id, series_id, type_id, v) of the rows in [from, to) for a query
// that sums over the range: whole hours from the rollup (samples_1h: one row
// per (type, hour, series, stack) once merged), the ragged edges from samples.
std::string ProfileRowsSql(const TypeSelection& types, int64_t from_ns, int64_t to_ns,
                           const std::string& series_filter) {
  const std::string columns = "SELECT stack_id, series_id, type_id, value AS v FROM ";
  const int64_t first_hour = from_ns <= 0 ? 0 : (from_ns + kHourNs - 1) / kHourNs * kHourNs;
  const int64_t end_hour = to_ns <= 0 ? 0 : to_ns / kHourNs * kHourNs;
  if (from_ns <= 0 || first_hour >= end_hour) {
    return columns + "samples WHERE " + SampleWhere(types.ids, from_ns, to_ns, series_filter);
  }
  return columns + "samples_1h WHERE type_id IN " + SqlIdList(types.ids) + " AND hour_ns >= " + SqlInt64(first_hour) +
         " AND hour_ns < " + SqlInt64(end_hour) + AndFilter(series_filter) + " UNION ALL " + columns +
         "samples WHERE type_id IN " + SqlIdList(types.ids) + " AND ((time_ns >= " + SqlInt64(from_ns) +
         " AND time_ns < " + SqlInt64(first_hour) + ") OR (time_ns >= " + SqlInt64(end_hour) + " AND time_ns < " +
         SqlInt64(to_ns) + "))" + AndFilter(series_filter);
}

Labels LabelsOf(const std::vector<std::string>& names, const std::vector<std::string>& values) {
  Labels out;
  for (size_t i = 0; i < names.size(); ++i) out.emplace_back(names[i], values[i]);
  return out;
}

}  // namespace

StatusOr<MergedProfile> ClickHouseProfileStore::SelectProfile(const storage::ProfileQuery& query) {
  MergedProfile out;
  ASSIGN_OR_RETURN(const std::vector<TypeRow> all_types, LoadTypes());
  const TypeSelection types = SelectProfileTypes(all_types, query.type);
  if (types.ids.empty()) return out;
  out.type = types.info;
  const int64_t from_ns = std::max(query.from_ns, RetentionCutoff());
  if (from_ns >= query.to_ns) return out;
  const std::string rows = ProfileRowsSql(types, from_ns, query.to_ns, SeriesFilterSql(query.selector));
  // Per-(stack, type) sums, and (stack id 0, never a real stack) the series count.
  const std::string sql = "SELECT stack_id, type_id, toInt64(sum(v)), sum(toFloat64(v)) AS fsum FROM (" + rows +
                          ") GROUP BY stack_id, type_id HAVING fsum > 0 "
                          "UNION ALL SELECT toUInt64(0), toUInt64(0), toInt64(uniqExact(series_id)), toFloat64(0) "
                          "FROM (" + rows + ") FORMAT RowBinary";
  ASSIGN_OR_RETURN(std::string body, client_->Execute(ReadWithin(sql, query.context)));
  RowBinaryReader r(body);
  struct Sum {
    uint64_t stack, type;
    int64_t value;
  };
  std::vector<Sum> sums;
  while (!r.done()) {
    const uint64_t stack = r.UInt64();
    const uint64_t type = r.UInt64();
    const int64_t sum = r.Int64();
    const double fsum = r.Float64();
    if (stack == 0) {
      out.series = static_cast<uint64_t>(sum);
      continue;
    }
    sums.push_back({stack, type, SaturatedSum(sum, fsum)});
  }
  RETURN_IF_ERROR(r.status("profile"));
  std::vector<uint64_t> contributing;
  for (const Sum& x : sums) contributing.push_back(x.type);
  const storage::TypeScaling scaling = types.ScalingOf(DistinctTypes(std::move(contributing)));
  out.type = scaling.info;
  std::vector<uint64_t> stack_ids;
  std::vector<int64_t> values;
  std::unordered_map<uint64_t, size_t> index;
  for (const Sum& x : sums) {
    auto [it, added] = index.try_emplace(x.stack, stack_ids.size());
    if (added) {
      stack_ids.push_back(x.stack);
      values.push_back(0);
    }
    SaturatingAddTo(values[it->second], scaling.Scale(x.type, x.value));
  }
  ASSIGN_OR_RETURN(ResolvedStackTable table, dictionary_->ResolveStacks(stack_ids));
  out.frames = std::move(table.frames);
  out.stacks.reserve(stack_ids.size());
  for (size_t i = 0; i < stack_ids.size(); ++i) {
    SaturatingAddTo(out.total, values[i]);
    out.stacks.push_back({std::move(table.stacks[i]), values[i]});
  }
  return out;
}

StatusOr<std::vector<Series>> ClickHouseProfileStore::SelectSeries(const storage::SeriesQuery& query) {
  const storage::ProfileQuery& q = query.profile;
  if (query.step_ns <= 0) return InvalidArgumentError("step must be positive");
  if (q.to_ns <= q.from_ns) return std::vector<Series>{};
  ASSIGN_OR_RETURN(const int64_t steps, storage::SeriesStepCount(q.from_ns, q.to_ns, query.step_ns));
  (void)steps;
  ASSIGN_OR_RETURN(const std::vector<TypeRow> all_types, LoadTypes());
  const TypeSelection types = SelectProfileTypes(all_types, q.type);
  if (types.ids.empty()) return std::vector<Series>{};
  const int64_t from_ns = std::max(q.from_ns, RetentionCutoff());
  if (from_ns >= q.to_ns) return std::vector<Series>{};
  const std::vector<std::string> names = SortedUnique(query.group_by);
  // Steps are counted from the query's `from`, even when retention clamps the rows.
  const std::string inner = "SELECT series_id, type_id, intDiv(time_ns - " + SqlInt64(q.from_ns) + ", " +
                            SqlInt64(query.step_ns) + ") AS k, sum(value) AS v, sum(toFloat64(value)) AS fv "
                            "FROM samples WHERE " +
                            SampleWhere(types.ids, from_ns, q.to_ns, SeriesFilterSql(q.selector)) +
                            " GROUP BY series_id, type_id, k";
  const std::string g = GroupColumns(names.size());
  std::string sql = "SELECT " + g + "toInt64(k), type_id, toInt64(sum(v)), sum(fv) FROM (" + inner + ")";
  if (!names.empty()) sql += " ANY LEFT JOIN (" + GroupLabelsSql(names) + ") USING series_id";
  sql += " GROUP BY " + g + "k, type_id FORMAT RowBinary";
  ASSIGN_OR_RETURN(std::string body, client_->Execute(ReadWithin(sql, q.context)));
  struct Row {
    std::vector<std::string> group;
    int64_t k;
    uint64_t type;
    int64_t value;
  };
  std::vector<Row> rows;
  RowBinaryReader r(body);
  while (!r.done()) {
    Row row;
    row.group.resize(names.size());
    for (std::string& v : row.group) v = r.String();
    row.k = r.Int64();
    row.type = r.UInt64();
    const int64_t sum = r.Int64();
    row.value = SaturatedSum(sum, r.Float64());
    rows.push_back(std::move(row));
  }
  RETURN_IF_ERROR(r.status("series"));
  std::vector<uint64_t> contributing;
  for (const Row& row : rows) contributing.push_back(row.type);
  const storage::TypeScaling scaling = types.ScalingOf(DistinctTypes(std::move(contributing)));
  if (query.answer_type != nullptr) *query.answer_type = scaling.info;
  std::map<std::vector<std::string>, std::map<int64_t, int64_t>> groups;  // sorted by label values, then step
  for (Row& row : rows) SaturatingAddTo(groups[std::move(row.group)][row.k], scaling.Scale(row.type, row.value));
  std::vector<Series> out;
  for (const auto& [values, points] : groups) {
    Series s;
    s.labels = LabelsOf(names, values);
    for (const auto& [k, value] : points) {
      if (value != 0) s.points.push_back({q.from_ns + k * query.step_ns, value});
    }
    if (!s.points.empty()) out.push_back(std::move(s));
  }
  return out;
}

StatusOr<storage::StackTimeline> ClickHouseProfileStore::SelectStackTimeline(const storage::TimelineQuery& query) {
  const storage::ProfileQuery& q = query.profile;
  storage::StackTimeline out;
  ASSIGN_OR_RETURN(const std::vector<TypeRow> all_types, LoadTypes());
  const TypeSelection types = SelectProfileTypes(all_types, q.type);
  if (types.ids.empty()) return out;
  out.profile.type = types.info;
  const int64_t from_ns = std::max(q.from_ns, RetentionCutoff());
  if (from_ns >= q.to_ns) return out;
  const std::vector<std::string> names = SortedUnique(query.group_by);
  const std::string where = SampleWhere(types.ids, from_ns, q.to_ns, SeriesFilterSql(q.selector));
  const std::string inner = "SELECT series_id, time_ns, stack_id, type_id, sum(value) AS v, sum(toFloat64(value)) "
                            "AS fv FROM samples WHERE " + where + " GROUP BY series_id, time_ns, stack_id, type_id";
  const std::string g = GroupColumns(names.size());
  std::string sql = "SELECT " + g + "time_ns, stack_id, type_id, toInt64(sum(v)), sum(fv) FROM (" + inner + ")";
  if (!names.empty()) sql += " ANY LEFT JOIN (" + GroupLabelsSql(names) + ") USING series_id";
  // A (lane, time, stack) point comes as one row per type: enough rows for
  // max_points + 1 points whatever the types.
  sql += " GROUP BY " + g + "time_ns, stack_id, type_id LIMIT " +
         std::to_string((query.max_points + 1) * types.ids.size()) + " FORMAT RowBinary";
  ASSIGN_OR_RETURN(std::string body, client_->Execute(ReadWithin(sql, q.context)));

  struct Row {
    std::vector<std::string> lane;
    int64_t time = 0;
    uint64_t stack = 0;
    int64_t value = 0;
  };
  std::vector<Row> typed;
  std::vector<uint64_t> row_types;
  RowBinaryReader r(body);
  while (!r.done()) {
    Row row;
    row.lane.resize(names.size());
    for (std::string& v : row.lane) v = r.String();
    row.time = r.Int64();
    row.stack = r.UInt64();
    row_types.push_back(r.UInt64());
    const int64_t sum = r.Int64();
    row.value = SaturatedSum(sum, r.Float64());
    typed.push_back(std::move(row));
  }
  RETURN_IF_ERROR(r.status("timeline"));
  const storage::TypeScaling scaling = types.ScalingOf(DistinctTypes(row_types));
  out.profile.type = scaling.info;
  // One row per (lane, time, stack), its types' values scaled and summed.
  std::map<std::tuple<std::vector<std::string>, int64_t, uint64_t>, int64_t> merged;
  for (size_t i = 0; i < typed.size(); ++i) {
    SaturatingAddTo(merged[{std::move(typed[i].lane), typed[i].time, typed[i].stack}],
                    scaling.Scale(row_types[i], typed[i].value));
  }
  if (merged.size() > query.max_points) {
    return InvalidArgumentError("the range holds more than " + std::to_string(query.max_points) +
                                " (lane, time, stack) points; choose a shorter range or a narrower selector");
  }
  std::vector<Row> rows;
  rows.reserve(merged.size());
  for (auto& [key, value] : merged) {
    if (value > 0) rows.push_back(Row{std::get<0>(key), std::get<1>(key), std::get<2>(key), value});
  }
  if (rows.empty()) return out;

  // Lanes sorted by their label values; stacks indexed in first-seen order.
  std::map<std::vector<std::string>, uint32_t> lane_index;
  for (const Row& row : rows) lane_index.emplace(row.lane, 0);
  for (auto& [values, index] : lane_index) {
    index = static_cast<uint32_t>(out.lanes.size());
    out.lanes.push_back(LabelsOf(names, values));
  }
  std::unordered_map<uint64_t, uint32_t> stack_index;
  std::vector<uint64_t> stack_ids;
  std::vector<int64_t> stack_values;
  out.points.reserve(rows.size());
  for (const Row& row : rows) {
    auto [it, inserted] = stack_index.try_emplace(row.stack, static_cast<uint32_t>(stack_ids.size()));
    if (inserted) {
      stack_ids.push_back(row.stack);
      stack_values.push_back(0);
    }
    SaturatingAddTo(stack_values[it->second], row.value);
    out.points.push_back({lane_index.at(row.lane), row.time, it->second, row.value});
  }
  std::sort(out.points.begin(), out.points.end(), [](const auto& a, const auto& b) {
    return std::tie(a.lane, a.time_ns, a.stack) < std::tie(b.lane, b.time_ns, b.stack);
  });

  ASSIGN_OR_RETURN(std::string count_body,
                   client_->Execute(ReadWithin(
                       "SELECT toUInt64(uniqExact(series_id)) FROM samples WHERE " + where + " FORMAT RowBinary",
                       q.context)));
  RowBinaryReader count(count_body);
  out.profile.series = count.UInt64();
  RETURN_IF_ERROR(count.status("timeline series"));

  ASSIGN_OR_RETURN(ResolvedStackTable table, dictionary_->ResolveStacks(stack_ids));
  out.profile.frames = std::move(table.frames);
  out.profile.stacks.reserve(stack_ids.size());
  for (size_t i = 0; i < stack_ids.size(); ++i) {
    SaturatingAddTo(out.profile.total, stack_values[i]);
    out.profile.stacks.push_back({std::move(table.stacks[i]), stack_values[i]});
  }
  return out;
}

}  // namespace warpscope::clickhouse
