// EmbeddedProfileStore: GPU activities and trace coverage. One scan
// of the head and of every segment's GPU section (segment_gpu_section.h),
// series narrowed through SeriesCatalog first, ids resolved at the end: each
// distinct label set and string once per answer.
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "storage/embedded/embedded_store.h"

namespace warpscope::embedded {

using storage::GpuActivities;
using storage::GpuActivity;
using storage::GpuActivityKind;
using storage::GpuTraceCoverage;

Status EmbeddedProfileStore::ScanGpu(storage::QueryContext* context, int64_t from_ns, int64_t coverage_from_ns,
                                     int64_t to_ns,
                                     const std::function<bool(uint64_t)>& series_filter,
                                     const std::function<bool(const GpuActivityRow&)>& visit_activity,
                                     const std::function<void(const GpuCoverageRow&)>& visit_coverage) {
  RETURN_IF_ERROR(storage::CheckQuery(context));
  bool stopped = false;
  auto activity = [&](const GpuActivityRow& r) {
    if (stopped || r.start_ns < from_ns || r.start_ns >= to_ns || !series_filter(r.series_id)) return;
    stopped = !visit_activity(r);
  };
  auto coverage = [&](const GpuCoverageRow& r) {
    if (r.second_ns < coverage_from_ns || r.second_ns >= to_ns || !series_filter(r.series_id)) return;
    visit_coverage(r);
  };
  std::shared_ptr<const SegmentList> segments;
  {
    // Head and segment list as one snapshot, as in ScanRows.
    std::shared_lock<std::shared_mutex> lock(state_mu_);
    for (const GpuRows* head : {static_cast<const GpuRows*>(&active_gpu_), frozen_gpu_.get()}) {
      if (head == nullptr) continue;
      for (size_t i = 0; i < head->activities.size(); ++i) {
        if (i % kRowsPerDeadlineCheck == kRowsPerDeadlineCheck - 1) RETURN_IF_ERROR(storage::CheckQuery(context));
        activity(head->activities[i]);
      }
      for (const GpuCoverageRow& r : head->coverage) coverage(r);
    }
    segments = segments_;
    AddRecordedGapsLocked(context, coverage_from_ns, to_ns);
  }
  ScanHooks hooks;
  if (context != nullptr) hooks.before_block = [context] { return context->Check(); };
  for (const auto& segment : *segments) {
    const SegmentReader& reader = *segment->reader;
    if (stopped) break;
    if (reader.gpu_activity_count() == 0 && reader.gpu_coverage_count() == 0) continue;
    // A damaged block is left out and the answer says so, as in ScanRows.
    hooks.on_damaged_block = [&](const DamagedBlock& block) {
      storage::DataGap gap = NoteDamagedBlock(*segment, /*rollup=*/false, block);
      gap.from_ns = std::max(gap.from_ns, coverage_from_ns);
      gap.to_ns = std::min(gap.to_ns, to_ns);
      storage::AddQueryGap(context, std::move(gap));
      return Status::Ok();
    };
    RETURN_IF_ERROR(reader.ScanGpuActivities(from_ns, to_ns, series_filter, activity, hooks));
    RETURN_IF_ERROR(reader.ScanGpuCoverage(coverage_from_ns, to_ns, series_filter, coverage, hooks));
  }
  return Status::Ok();
}

StatusOr<GpuActivities> EmbeddedProfileStore::SelectGpuActivities(const storage::GpuActivityQuery& query) {
  RETURN_IF_ERROR(storage::CheckQuery(query.context));
  GpuActivities out;
  const int64_t from_ns = std::max(query.from_ns, RetentionCutoff());
  if (from_ns >= query.to_ns) return out;
  ASSIGN_OR_RETURN(std::vector<uint64_t> series, series_->Select(query.selector, query.context));
  if (series.empty()) return out;
  std::vector<uint8_t> mask(series.back() + 1, 0);
  for (uint64_t id : series) mask[id] = 1;
  auto in_mask = [&](uint64_t id) { return id < mask.size() && mask[id] != 0; };

  // Coverage rows are keyed by their second's start: a second overlapping
  // [from, to) may start up to 1 s before from.
  const int64_t coverage_from = from_ns > INT64_MIN + kSecondNs ? from_ns - kSecondNs + 1 : INT64_MIN;
  std::vector<GpuActivityRow> rows;
  std::map<std::pair<uint64_t, int64_t>, GpuCoverageRow> coverage;  // (series, second)
  bool too_many = false;
  RETURN_IF_ERROR(ScanGpu(
      query.context, from_ns, coverage_from, query.to_ns, in_mask,
      [&](const GpuActivityRow& r) {
        if (rows.size() >= query.max_activities) {
          too_many = true;
          return false;
        }
        rows.push_back(r);
        return true;
      },
      [&](const GpuCoverageRow& r) {
        auto [it, inserted] = coverage.try_emplace({r.series_id, r.second_ns}, r);
        if (inserted) return;
        it->second.recorded += r.recorded;
        it->second.sent += r.sent;
        it->second.complete_until_ns = std::min(it->second.complete_until_ns, r.complete_until_ns);
      }));
  if (too_many) {
    return InvalidArgumentError("range too long: more than " + std::to_string(query.max_activities) +
                                " GPU activities; choose a shorter range or a narrower selector");
  }

  // Label sets: distinct series, sorted by their labels.
  std::vector<uint64_t> used_series;
  for (const GpuActivityRow& r : rows) used_series.push_back(r.series_id);
  for (const auto& [key, row] : coverage) used_series.push_back(key.first);
  std::sort(used_series.begin(), used_series.end());
  used_series.erase(std::unique(used_series.begin(), used_series.end()), used_series.end());
  std::vector<std::pair<storage::Labels, uint64_t>> labelled;
  for (uint64_t id : used_series) {
    ASSIGN_OR_RETURN(storage::Labels labels, series_->LabelsOf(id));
    labelled.emplace_back(std::move(labels), id);
  }
  std::sort(labelled.begin(), labelled.end());
  std::unordered_map<uint64_t, uint32_t> label_index;
  for (auto& [labels, id] : labelled) {
    label_index[id] = static_cast<uint32_t>(out.label_sets.size());
    out.label_sets.push_back(std::move(labels));
  }

  // Names: distinct string ids, resolved once, sorted.
  std::vector<uint64_t> name_ids;
  for (const GpuActivityRow& r : rows) {
    name_ids.push_back(r.name_id);
    name_ids.push_back(r.system_name_id);
  }
  std::sort(name_ids.begin(), name_ids.end());
  name_ids.erase(std::unique(name_ids.begin(), name_ids.end()), name_ids.end());
  ASSIGN_OR_RETURN(std::vector<std::string> names, dictionary_->Strings(name_ids));
  std::vector<uint32_t> order(names.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return names[a] < names[b]; });
  std::unordered_map<uint64_t, uint32_t> name_index;
  for (uint32_t rank = 0; rank < order.size(); ++rank) {
    // Two ids never hold one string (the dictionary is content-addressed),
    // so every rank is a distinct name.
    name_index[name_ids[order[rank]]] = rank;
    out.names.push_back(std::move(names[order[rank]]));
  }

  out.activities.reserve(rows.size());
  for (const GpuActivityRow& r : rows) {
    GpuActivity a;
    a.start_ns = r.start_ns;
    a.duration_ns = r.duration_ns;
    a.labels = label_index.at(r.series_id);
    a.name = name_index.at(r.name_id);
    a.system_name = name_index.at(r.system_name_id);
    a.kind = static_cast<GpuActivityKind>(r.kind);
    a.device = r.device;
    a.stream = r.stream;
    a.correlation_id = r.correlation_id;
    a.graph_id = r.graph_id;
    std::copy(std::begin(r.grid), std::end(r.grid), a.grid);
    std::copy(std::begin(r.block), std::end(r.block), a.block);
    a.registers_per_thread = r.registers_per_thread;
    a.static_shared_bytes = r.static_shared_bytes;
    a.dynamic_shared_bytes = r.dynamic_shared_bytes;
    a.bytes = r.bytes;
    a.copy_kind = r.copy_kind;
    a.launch_start_ns = r.launch_start_ns;
    a.launch_duration_ns = r.launch_duration_ns;
    a.launch_tid = r.launch_tid;
    a.launch_api = r.launch_api < kGpuLaunchApiCount ? static_cast<GpuLaunchApi>(r.launch_api) : GpuLaunchApi::kUnknown;
    out.activities.push_back(a);
  }
  std::sort(out.activities.begin(), out.activities.end(), [](const GpuActivity& a, const GpuActivity& b) {
    return std::tie(a.start_ns, a.labels, a.device, a.stream, a.correlation_id, a.duration_ns) <
           std::tie(b.start_ns, b.labels, b.device, b.stream, b.correlation_id, b.duration_ns);
  });
  for (const auto& [key, row] : coverage) {
    out.coverage.push_back(GpuTraceCoverage{.labels = label_index.at(row.series_id),
                                            .second_ns = row.second_ns,
                                            .recorded = row.recorded,
                                            .sent = row.sent,
                                            .complete_until_ns = row.complete_until_ns});
  }
  std::sort(out.coverage.begin(), out.coverage.end(), [](const GpuTraceCoverage& a, const GpuTraceCoverage& b) {
    return std::tie(a.labels, a.second_ns) < std::tie(b.labels, b.second_ns);
  });
  return out;
}

}  // namespace warpscope::embedded
