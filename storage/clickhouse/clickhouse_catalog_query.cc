// ClickHouseProfileStore: what exists - label names and values, the targets
// (label sets with data in a range), profile types, metric names - and metric
// series (min/max/sum/count per step and group, computed in ClickHouse).
#include <algorithm>
#include <map>
#include <tuple>

#include "storage/clickhouse/clickhouse_store.h"
#include "storage/clickhouse/row_binary.h"
#include "storage/clickhouse/sql_text.h"
#include "storage/series_steps.h"

namespace warpscope::clickhouse {

using storage::Labels;

namespace {

StatusOr<std::vector<std::string>> ReadStrings(const std::string& body, const char* what) {
  RowBinaryReader r(body);
  std::vector<std::string> out;
  while (!r.done()) out.push_back(r.String());
  RETURN_IF_ERROR(r.status(what));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

StatusOr<std::vector<std::string>> ClickHouseProfileStore::LabelNames() {
  ASSIGN_OR_RETURN(std::string body, client_->Execute(ClickHouseRequest::Read(
                                         "SELECT DISTINCT arrayJoin(labels.name) FROM label_sets FORMAT RowBinary")));
  return ReadStrings(body, "label names");
}

StatusOr<std::vector<std::string>> ClickHouseProfileStore::LabelValues(const std::string& name) {
  ASSIGN_OR_RETURN(std::string body,
                   client_->Execute(ClickHouseRequest::Read("SELECT DISTINCT " + LabelValueSql(name) +
                                                            " FROM label_sets WHERE has(labels.name, " +
                                                            SqlString(name) + ") FORMAT RowBinary")));
  return ReadStrings(body, "label values");
}

StatusOr<std::vector<storage::ProfileTypeInfo>> ClickHouseProfileStore::ProfileTypes() {
  ASSIGN_OR_RETURN(const std::vector<TypeRow> types, LoadTypes());
  std::vector<storage::ProfileTypeInfo> out;
  for (const TypeRow& t : types) {
    if (t.kind == TypeKind::kProfile) out.push_back({t.name, t.unit, t.period_nanos});
  }
  return out;  // LoadTypes' order: name, unit, period
}

StatusOr<std::vector<storage::MetricInfo>> ClickHouseProfileStore::MetricNames() {
  ASSIGN_OR_RETURN(const std::vector<TypeRow> types, LoadTypes());
  std::vector<storage::MetricInfo> out;
  for (const TypeRow& t : types) {
    if (t.kind == TypeKind::kMetric) out.push_back({t.name, t.unit});
  }
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

StatusOr<std::vector<Labels>> ClickHouseProfileStore::SelectSeriesLabels(const storage::SeriesLabelsQuery& query) {
  ASSIGN_OR_RETURN(const std::vector<TypeRow> types, LoadTypes());
  // Type "": every profile type and every metric (the targets list's GPUs
  // come from metric series).
  const std::vector<uint64_t> profile = TypeIds(types, TypeKind::kProfile, query.type);
  const std::vector<uint64_t> metric =
      query.type.empty() ? TypeIds(types, TypeKind::kMetric, "") : std::vector<uint64_t>{};
  const int64_t from_ns = std::max(query.from_ns, RetentionCutoff());
  if (from_ns >= query.to_ns || (profile.empty() && metric.empty())) return std::vector<Labels>{};
  const std::string rest = " AND time_ns >= " + SqlInt64(from_ns) + " AND time_ns < " + SqlInt64(query.to_ns) +
                           AndFilter(SeriesFilterSql(query.selector));
  std::string sql;
  if (!profile.empty()) {
    sql = "SELECT DISTINCT series_id FROM samples WHERE type_id IN " + SqlIdList(profile) + rest;
  }
  if (!metric.empty()) {
    if (!sql.empty()) sql += " UNION ALL ";
    sql += "SELECT DISTINCT series_id FROM metric_points WHERE type_id IN " + SqlIdList(metric) + rest;
  }
  ASSIGN_OR_RETURN(std::string body, client_->Execute(ReadWithin(sql + " FORMAT RowBinary", query.context)));
  RowBinaryReader r(body);
  std::vector<uint64_t> ids;
  while (!r.done()) ids.push_back(r.UInt64());
  RETURN_IF_ERROR(r.status("series labels"));
  ASSIGN_OR_RETURN(auto labels, dictionary_->LabelSets(ids));
  std::vector<Labels> out;
  out.reserve(labels.size());
  for (auto& [id, l] : labels) out.push_back(std::move(l));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

StatusOr<std::vector<storage::MetricSeries>> ClickHouseProfileStore::SelectMetricSeries(
    const storage::MetricQuery& query) {
  if (query.name.empty()) return InvalidArgumentError("metric name is empty");
  if (query.step_ns <= 0) return InvalidArgumentError("step must be positive");
  if (query.to_ns <= query.from_ns) return std::vector<storage::MetricSeries>{};
  RETURN_IF_ERROR(storage::SeriesStepCount(query.from_ns, query.to_ns, query.step_ns).status());
  ASSIGN_OR_RETURN(const std::vector<TypeRow> types, LoadTypes());
  const std::vector<uint64_t> ids = TypeIds(types, TypeKind::kMetric, query.name);
  if (ids.empty()) return std::vector<storage::MetricSeries>{};
  const int64_t from_ns = std::max(query.from_ns, RetentionCutoff());
  if (from_ns >= query.to_ns) return std::vector<storage::MetricSeries>{};
  const std::vector<std::string> names = SortedUnique(query.group_by);
  const std::string inner =
      "SELECT series_id, intDiv(time_ns - " + SqlInt64(query.from_ns) + ", " + SqlInt64(query.step_ns) +
      ") AS k, min(value) AS mn, max(value) AS mx, sum(value) AS s, count() AS c "
      "FROM metric_points WHERE type_id IN " +
      SqlIdList(ids) + " AND time_ns >= " + SqlInt64(from_ns) + " AND time_ns < " + SqlInt64(query.to_ns) +
      AndFilter(SeriesFilterSql(query.selector)) + " GROUP BY series_id, k";
  const std::string g = GroupColumns(names.size());
  std::string sql = "SELECT " + g + "toInt64(k), min(mn), max(mx), sum(s), toUInt64(sum(c)) FROM (" + inner + ")";
  if (!names.empty()) sql += " ANY LEFT JOIN (" + GroupLabelsSql(names) + ") USING series_id";
  sql += " GROUP BY " + g + "k FORMAT RowBinary";
  ASSIGN_OR_RETURN(std::string body, client_->Execute(ReadWithin(sql, query.context)));
  RowBinaryReader r(body);
  std::map<std::vector<std::string>, std::map<int64_t, storage::MetricStep>> groups;
  while (!r.done()) {
    std::vector<std::string> values(names.size());
    for (std::string& v : values) v = r.String();
    const int64_t k = r.Int64();
    storage::MetricStep step;
    step.time_ns = query.from_ns + k * query.step_ns;
    step.min = r.Float64();
    step.max = r.Float64();
    step.sum = r.Float64();
    step.count = r.UInt64();
    groups[std::move(values)][k] = step;
  }
  RETURN_IF_ERROR(r.status("metric series"));
  std::vector<storage::MetricSeries> out;
  for (auto& [values, points] : groups) {
    storage::MetricSeries s;
    for (size_t i = 0; i < names.size(); ++i) s.labels.emplace_back(names[i], values[i]);
    for (auto& [k, step] : points) {
      if (step.count > 0) s.points.push_back(step);
    }
    if (!s.points.empty()) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace warpscope::clickhouse
