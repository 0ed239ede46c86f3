// ClickHouseProfileStore: GPU activities and trace coverage. Rows
// come from ClickHouse ordered and capped (LIMIT max + 1); label sets and
// kernel names are resolved once per answer and sorted here, as the
// interface wants.
#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "storage/clickhouse/clickhouse_store.h"
#include "storage/clickhouse/row_binary.h"
#include "storage/clickhouse/sql_text.h"

namespace warpscope::clickhouse {

using storage::GpuActivities;
using storage::GpuActivity;
using storage::GpuActivityKind;
using storage::GpuTraceCoverage;

namespace {

constexpr int64_t kSecondNs = 1'000'000'000;

struct ActivityRow {
  GpuActivity a;
  uint64_t series_id = 0, name_id = 0, system_name_id = 0;
};

struct CoverageRow {
  uint64_t series_id = 0;
  GpuTraceCoverage c;
};

}  // namespace

StatusOr<GpuActivities> ClickHouseProfileStore::SelectGpuActivities(const storage::GpuActivityQuery& query) {
  GpuActivities out;
  const int64_t from_ns = std::max(query.from_ns, RetentionCutoff());
  if (from_ns >= query.to_ns) return out;
  const std::string filter = AndFilter(SeriesFilterSql(query.selector));
  ASSIGN_OR_RETURN(std::string body,
                   client_->Execute(ReadWithin(
                       "SELECT start_ns, duration_ns, series_id, kind, name_id, system_name_id, device, stream, "
                       "correlation_id, graph_id, grid_x, grid_y, grid_z, block_x, block_y, block_z, "
                       "registers_per_thread, static_shared_bytes, dynamic_shared_bytes, bytes, copy_kind, "
                       "launch_start_ns, launch_duration_ns, launch_tid, launch_api FROM gpu_activities WHERE start_ns >= " +
                       SqlInt64(from_ns) + " AND start_ns < " + SqlInt64(query.to_ns) + filter +
                       " ORDER BY start_ns LIMIT " + std::to_string(query.max_activities + 1) + " FORMAT RowBinary",
                       query.context)));
  std::vector<ActivityRow> rows;
  RowBinaryReader r(body);
  while (!r.done()) {
    ActivityRow row;
    GpuActivity& a = row.a;
    a.start_ns = r.Int64();
    a.duration_ns = r.Int64();
    row.series_id = r.UInt64();
    a.kind = static_cast<GpuActivityKind>(r.UInt8());
    row.name_id = r.UInt64();
    row.system_name_id = r.UInt64();
    a.device = r.UInt32();
    a.stream = r.UInt32();
    a.correlation_id = r.UInt64();
    a.graph_id = r.UInt64();
    for (uint32_t& v : a.grid) v = r.UInt32();
    for (uint32_t& v : a.block) v = r.UInt32();
    a.registers_per_thread = r.UInt32();
    a.static_shared_bytes = r.UInt32();
    a.dynamic_shared_bytes = r.UInt32();
    a.bytes = r.UInt64();
    a.copy_kind = r.UInt32();
    a.launch_start_ns = r.Int64();
    a.launch_duration_ns = r.Int64();
    a.launch_tid = r.UInt32();
    const uint8_t api = r.UInt8();
    a.launch_api = api < kGpuLaunchApiCount ? static_cast<GpuLaunchApi>(api) : GpuLaunchApi::kUnknown;
    rows.push_back(row);
  }
  RETURN_IF_ERROR(r.status("gpu_activities"));
  if (rows.size() > query.max_activities) {
    return InvalidArgumentError("range too long: more than " + std::to_string(query.max_activities) +
                                " GPU activities; choose a shorter range or a narrower selector");
  }

  // Coverage rows are keyed by their second's start: a second overlapping
  // [from, to) starts after from - 1 s.
  ASSIGN_OR_RETURN(std::string cbody, client_->Execute(ReadWithin(
                                          "SELECT series_id, second_ns, toUInt64(sum(recorded)), "
                                          "toUInt64(sum(sent)), min(complete_until_ns) FROM gpu_trace_coverage "
                                          "WHERE second_ns > " +
                                          SqlInt64(from_ns - kSecondNs) + " AND second_ns < " + SqlInt64(query.to_ns) +
                                          filter + " GROUP BY series_id, second_ns FORMAT RowBinary",
                                          query.context)));
  std::vector<CoverageRow> coverage;
  RowBinaryReader c(cbody);
  while (!c.done()) {
    CoverageRow row;
    row.series_id = c.UInt64();
    row.c.second_ns = c.Int64();
    row.c.recorded = c.UInt64();
    row.c.sent = c.UInt64();
    row.c.complete_until_ns = c.Int64();
    coverage.push_back(row);
  }
  RETURN_IF_ERROR(c.status("gpu_trace_coverage"));

  // Label sets: each distinct one once, sorted.
  std::vector<uint64_t> series;
  for (const ActivityRow& row : rows) series.push_back(row.series_id);
  for (const CoverageRow& row : coverage) series.push_back(row.series_id);
  ASSIGN_OR_RETURN(auto labels, dictionary_->LabelSets(series));
  std::vector<std::pair<storage::Labels, uint64_t>> labelled;
  for (auto& [id, l] : labels) labelled.emplace_back(std::move(l), id);
  std::sort(labelled.begin(), labelled.end());
  std::unordered_map<uint64_t, uint32_t> label_index;
  for (auto& [l, id] : labelled) {
    label_index[id] = static_cast<uint32_t>(out.label_sets.size());
    out.label_sets.push_back(std::move(l));
  }

  // Names: each distinct string once, sorted (ids are content hashes, so two
  // ids never hold one string).
  std::vector<uint64_t> name_ids;
  for (const ActivityRow& row : rows) {
    name_ids.push_back(row.name_id);
    name_ids.push_back(row.system_name_id);
  }
  ASSIGN_OR_RETURN(auto strings, dictionary_->Strings(name_ids));
  std::vector<std::pair<std::string, uint64_t>> named;
  for (auto& [id, s] : strings) named.emplace_back(std::move(s), id);
  std::sort(named.begin(), named.end());
  std::unordered_map<uint64_t, uint32_t> name_index;
  for (auto& [s, id] : named) {
    name_index[id] = static_cast<uint32_t>(out.names.size());
    out.names.push_back(std::move(s));
  }

  out.activities.reserve(rows.size());
  for (ActivityRow& row : rows) {
    row.a.labels = label_index.at(row.series_id);
    row.a.name = name_index.at(row.name_id);
    row.a.system_name = name_index.at(row.system_name_id);
    out.activities.push_back(row.a);
  }
  std::sort(out.activities.begin(), out.activities.end(), [](const GpuActivity& a, const GpuActivity& b) {
    return std::tie(a.start_ns, a.labels, a.device, a.stream, a.correlation_id, a.duration_ns) <
           std::tie(b.start_ns, b.labels, b.device, b.stream, b.correlation_id, b.duration_ns);
  });
  for (CoverageRow& row : coverage) {
    row.c.labels = label_index.at(row.series_id);
    out.coverage.push_back(row.c);
  }
  std::sort(out.coverage.begin(), out.coverage.end(), [](const GpuTraceCoverage& a, const GpuTraceCoverage& b) {
    return std::tie(a.labels, a.second_ns) < std::tie(b.labels, b.second_ns);
  });
  return out;
}

}  // namespace warpscope::clickhouse
