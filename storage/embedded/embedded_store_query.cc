// EmbeddedProfileStore: the query side. Every answer comes from one scan of
// the head plus the segments overlapping the range (ScanRows), with series
// narrowed first through SeriesCatalog and ids resolved at the end. Metric
// queries read the same rows (metric_row.h) of metric types.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "base/logging.h"
#include "base/saturating.h"
#include "storage/embedded/answer_unit.h"
#include "storage/embedded/embedded_store.h"
#include "storage/embedded/metric_row.h"
#include "storage/embedded/store_consistency.h"
#include "storage/series_steps.h"

namespace warpscope::embedded {

using storage::Labels;
using storage::MergedProfile;
using storage::ProfileTypeInfo;
using storage::Series;
using storage::SeriesPoint;

namespace {

// Series ids are dense (from 1), so a byte per id is the cheapest set.
std::vector<uint8_t> Mask(const std::vector<uint64_t>& ids) {
  std::vector<uint8_t> mask(ids.empty() ? 0 : ids.back() + 1, 0);
  for (uint64_t id : ids) mask[id] = 1;
  return mask;
}

bool InMask(const std::vector<uint8_t>& mask, uint64_t id) { return id < mask.size() && mask[id] != 0; }

constexpr int64_t kMaxGroupPoints = 50'000'000;

Status CheckGroupPoints(size_t groups, int64_t steps) {
  if (static_cast<int64_t>(groups) * steps > kMaxGroupPoints) {
    return InvalidArgumentError(std::to_string(groups) + " groups x " + std::to_string(steps) +
                                " points is too many; use a larger step or fewer group_by labels");
  }
  return Status::Ok();
}

std::vector<std::string> SortedUnique(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

Status EmbeddedProfileStore::ScanRows(storage::QueryContext* context, const std::vector<TypeEntry>& types,
                                      int64_t from_ns, int64_t to_ns,
                                      const std::function<bool(uint64_t)>& series_filter,
                                      const std::function<void(const SampleRow&)>& visit, RowTimes times) {
  RETURN_IF_ERROR(storage::CheckQuery(context));
  if (types.empty() || from_ns >= to_ns) return Status::Ok();
  uint32_t min_type = UINT32_MAX, max_type = 0;
  for (const TypeEntry& t : types) {
    min_type = std::min(min_type, t.id);
    max_type = std::max(max_type, t.id);
  }
  std::vector<uint8_t> wanted_type(max_type + 1, 0);
  for (const TypeEntry& t : types) wanted_type[t.id] = 1;
  auto scan_head = [&](const std::vector<SampleRow>& rows) -> Status {
    for (size_t i = 0; i < rows.size(); ++i) {
      if (i % kRowsPerDeadlineCheck == kRowsPerDeadlineCheck - 1) RETURN_IF_ERROR(storage::CheckQuery(context));
      const SampleRow& r = rows[i];
      if (r.time_ns < from_ns || r.time_ns >= to_ns || r.type_id < min_type || r.type_id > max_type ||
          !wanted_type[r.type_id] || !series_filter(r.series_id)) {
        continue;
      }
      visit(r);
    }
    return Status::Ok();
  };
  std::shared_ptr<const SegmentList> segments;
  {
    // The head is small (one flush interval): scanned under the lock, which
    // also makes the head and the segment list one consistent snapshot.
    std::shared_lock<std::shared_mutex> lock(state_mu_);
    RETURN_IF_ERROR(scan_head(active_));
    if (frozen_) RETURN_IF_ERROR(scan_head(*frozen_));
    segments = segments_;
    AddRecordedGapsLocked(context, from_ns, to_ns);
  }
  ScanHooks hooks;
  if (context != nullptr) hooks.before_block = [context] { return context->Check(); };
  for (const auto& segment : *segments) {
    const SegmentReader& reader = *segment->reader;
    if (reader.row_count() == 0 || reader.max_time() < from_ns || reader.min_time() >= to_ns) continue;
    const bool whole = reader.min_time() >= from_ns && reader.max_time() < to_ns;
    const bool use_rollup = times == RowTimes::kSummed && whole && segment->rollup != nullptr &&
                            !segment->damage.rollup_damaged();
    if (use_rollup) rollup_scans_.fetch_add(1, std::memory_order_relaxed);
    const SegmentReader& source = use_rollup ? *segment->rollup : reader;
    // A damaged block is left out and the answer says so.
    hooks.on_damaged_block = [&, use_rollup](const DamagedBlock& block) {
      storage::DataGap gap = NoteDamagedBlock(*segment, use_rollup, block);
      gap.from_ns = std::max(gap.from_ns, from_ns);
      gap.to_ns = std::min(gap.to_ns, to_ns);
      storage::AddQueryGap(context, std::move(gap));
      return Status::Ok();
    };
    for (const TypeEntry& t : types) {
      RETURN_IF_ERROR(source.Scan(from_ns, to_ns, series_filter, t.id, visit, hooks));
    }
  }
  return Status::Ok();
}

storage::DataGap EmbeddedProfileStore::NoteDamagedBlock(const Segment& segment, bool rollup,
                                                        const DamagedBlock& block) {
  const std::string file = rollup ? RollupFileName(segment.lo, segment.hi) : SegmentFileName(segment.lo, segment.hi);
  const std::string part = (rollup ? "rollup " : "") + block.part;
  const SegmentDamage::Recorded recorded = segment.damage.Record(part);
  if (recorded.new_part) damaged_blocks_.fetch_add(1, std::memory_order_relaxed);
  // A rollup's rows all carry the segment's min time: a damaged rollup block
  // may hold rows of the segment's whole span.
  const int64_t min_time = rollup ? segment.reader->data_min_time() : block.min_time;
  const int64_t max_time = rollup ? segment.reader->data_max_time() : block.max_time;
  const std::string& message = block.status.message();
  const size_t detail = message.find("is corrupt");
  const std::string reason = (rollup ? "rollup " : "segment ") + file + " " + block.part + " " +
                             (detail == std::string::npos ? "is unreadable" : message.substr(detail));
  if (recorded.first_in_segment) {
    LOG_WARNING() << message << ": its rows (" << FormatUnixTime(min_time) << " to " << FormatUnixTime(max_time)
                  << ") are left out of answers, which report the gap; further damage in this segment is not logged";
  }
  return storage::DataGap{.from_ns = min_time, .to_ns = SaturatingAdd(max_time, 1), .reason = reason};
}

void EmbeddedProfileStore::AddRecordedGapsLocked(storage::QueryContext* context, int64_t from_ns,
                                                 int64_t to_ns) const {
  if (context == nullptr) return;
  for (const dictionary::RecordedGap& g : gaps_) {
    if (g.to_ns <= from_ns || g.from_ns >= to_ns) continue;
    context->AddGap(storage::DataGap{
        .from_ns = std::max(g.from_ns, from_ns), .to_ns = std::min(g.to_ns, to_ns), .reason = g.reason});
  }
}

StatusOr<MergedProfile> EmbeddedProfileStore::SelectProfile(const storage::ProfileQuery& query) {
  RETURN_IF_ERROR(storage::CheckQuery(query.context));
  MergedProfile out;
  ASSIGN_OR_RETURN(std::vector<TypeEntry> types, series_->Types(query.type, TypeKind::kProfile));
  if (types.empty()) return out;
  AnswerUnit unit(types);
  out.type = unit.info();
  ASSIGN_OR_RETURN(std::vector<uint64_t> series, series_->Select(query.selector, query.context));
  if (series.empty()) return out;
  const std::vector<uint8_t> mask = Mask(series);
  std::vector<uint8_t> contributed(mask.size(), 0);
  // Stack ids are dense too: a flat array beats a hash map by ~3x per row.
  std::vector<int64_t> sums;
  auto rescale = [&](int64_t m) { SaturatingScale(sums.begin(), sums.end(), m); };
  RETURN_IF_ERROR(ScanRows(
      query.context, types, std::max(query.from_ns, RetentionCutoff()), query.to_ns,
      [&](uint64_t id) { return InMask(mask, id); },
      [&](const SampleRow& r) {
        if (r.stack_id >= sums.size()) [[unlikely]] sums.resize(std::max<size_t>(r.stack_id + 1, sums.size() * 2), 0);
        const int64_t value = unit.Value(r, rescale);
        SaturatingAddTo(sums[r.stack_id], value);
        contributed[r.series_id] = 1;
      },
      RowTimes::kSummed));
  out.type = unit.info();
  std::vector<uint64_t> stack_ids;
  for (uint64_t id = 0; id < sums.size(); ++id) {
    if (sums[id] > 0) stack_ids.push_back(id);
  }
  ASSIGN_OR_RETURN(ResolvedStackTable table, stacks_->Resolve(stack_ids));
  out.frames = std::move(table.frames);
  out.stacks.reserve(table.stacks.size());
  for (size_t i = 0; i < table.stacks.size(); ++i) {
    const int64_t value = sums[stack_ids[i]];
    SaturatingAddTo(out.total, value);
    out.stacks.push_back({std::move(table.stacks[i]), value});
  }
  out.series = static_cast<uint64_t>(std::count(contributed.begin(), contributed.end(), 1));
  return out;
}

StatusOr<std::vector<Series>> EmbeddedProfileStore::SelectSeries(const storage::SeriesQuery& query) {
  const storage::ProfileQuery& q = query.profile;
  RETURN_IF_ERROR(storage::CheckQuery(q.context));
  if (query.step_ns <= 0) return InvalidArgumentError("step must be positive");
  if (q.to_ns <= q.from_ns) return std::vector<Series>{};
  ASSIGN_OR_RETURN(const int64_t steps, storage::SeriesStepCount(q.from_ns, q.to_ns, query.step_ns));
  ASSIGN_OR_RETURN(std::vector<TypeEntry> types, series_->Types(q.type, TypeKind::kProfile));
  if (types.empty()) return std::vector<Series>{};
  AnswerUnit unit(types);
  ASSIGN_OR_RETURN(std::vector<uint64_t> series, series_->Select(q.selector, q.context));
  if (series.empty()) return std::vector<Series>{};

  const std::vector<std::string> names = SortedUnique(query.group_by);
  ASSIGN_OR_RETURN(SeriesGroups groups, GroupSeries(q.context, series, names));
  const std::vector<int32_t>& group = groups.group;
  RETURN_IF_ERROR(CheckGroupPoints(groups.values.size(), steps));
  std::vector<std::vector<int64_t>> points(groups.values.size());  // allocated on a group's first row
  auto rescale = [&](int64_t m) {
    for (std::vector<int64_t>& p : points) SaturatingScale(p.begin(), p.end(), m);
  };
  RETURN_IF_ERROR(ScanRows(
      q.context, types, std::max(q.from_ns, RetentionCutoff()), q.to_ns,
      [&](uint64_t id) { return id < group.size() && group[id] >= 0; },
      [&](const SampleRow& r) {
        const int64_t value = unit.Value(r, rescale);
        std::vector<int64_t>& p = points[group[r.series_id]];
        if (p.empty()) p.assign(steps, 0);
        SaturatingAddTo(p[(r.time_ns - q.from_ns) / query.step_ns], value);
      }));
  if (query.answer_type != nullptr) *query.answer_type = unit.info();
  std::vector<Series> out;
  for (size_t g = 0; g < groups.values.size(); ++g) {  // sorted by the label values
    const std::vector<std::string>& values = groups.values[g];
    if (points[g].empty()) continue;
    Series s;
    for (size_t i = 0; i < names.size(); ++i) s.labels.emplace_back(names[i], values[i]);
    for (int64_t k = 0; k < steps; ++k) {
      if (points[g][k] != 0) s.points.push_back({q.from_ns + k * query.step_ns, points[g][k]});
    }
    out.push_back(std::move(s));
  }
  return out;
}

StatusOr<EmbeddedProfileStore::SeriesGroups> EmbeddedProfileStore::GroupSeries(storage::QueryContext* context,
                                                                              const std::vector<uint64_t>& series,
                                                                              const std::vector<std::string>& names) {
  std::map<std::vector<std::string>, std::vector<uint64_t>> members;  // label values -> series ids
  for (size_t i = 0; i < series.size(); ++i) {
    if (i % kRowsPerDeadlineCheck == kRowsPerDeadlineCheck - 1) RETURN_IF_ERROR(storage::CheckQuery(context));
    const uint64_t id = series[i];
    ASSIGN_OR_RETURN(Labels labels, series_->LabelsOf(id));
    std::vector<std::string> values;
    values.reserve(names.size());
    for (const std::string& name : names) {
      auto it = std::find_if(labels.begin(), labels.end(), [&](const auto& l) { return l.first == name; });
      values.push_back(it == labels.end() ? "" : it->second);
    }
    members[std::move(values)].push_back(id);
  }
  SeriesGroups out;
  out.group.assign(series.empty() ? 0 : *std::max_element(series.begin(), series.end()) + 1, -1);
  for (auto& [values, ids] : members) {  // map order: sorted by the label values
    for (uint64_t id : ids) out.group[id] = static_cast<int32_t>(out.values.size());
    out.values.push_back(values);
  }
  return out;
}

StatusOr<storage::StackTimeline> EmbeddedProfileStore::SelectStackTimeline(const storage::TimelineQuery& query) {
  const storage::ProfileQuery& q = query.profile;
  RETURN_IF_ERROR(storage::CheckQuery(q.context));
  storage::StackTimeline out;
  ASSIGN_OR_RETURN(std::vector<TypeEntry> types, series_->Types(q.type, TypeKind::kProfile));
  if (types.empty()) return out;
  AnswerUnit unit(types);
  out.profile.type = unit.info();
  ASSIGN_OR_RETURN(std::vector<uint64_t> series, series_->Select(q.selector, q.context));
  if (series.empty()) return out;
  const std::vector<std::string> names = SortedUnique(query.group_by);
  ASSIGN_OR_RETURN(SeriesGroups groups, GroupSeries(q.context, series, names));
  const std::vector<int32_t>& group = groups.group;

  struct Key {
    int32_t lane;
    int64_t time;
    uint64_t stack;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = static_cast<uint64_t>(k.time) * 0x9E3779B97F4A7C15ull;
      h ^= (k.stack + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2));
      h ^= (static_cast<uint64_t>(k.lane) + 0x94D049BB133111EBull + (h << 6) + (h >> 2));
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<Key, int64_t, KeyHash> sums;
  std::vector<uint8_t> contributed(group.size(), 0);
  bool too_many = false;
  auto rescale = [&](int64_t m) {
    for (auto& [key, value] : sums) value = SaturatingMul(value, m);
  };
  RETURN_IF_ERROR(ScanRows(
      q.context, types, std::max(q.from_ns, RetentionCutoff()), q.to_ns,
      [&](uint64_t id) { return id < group.size() && group[id] >= 0; },
      [&](const SampleRow& r) {
        if (too_many) return;
        const int64_t value = unit.Value(r, rescale);
        auto [it, inserted] = sums.try_emplace(Key{group[r.series_id], r.time_ns, r.stack_id}, 0);
        SaturatingAddTo(it->second, value);
        contributed[r.series_id] = 1;
        if (inserted && sums.size() > query.max_points) too_many = true;
      }));
  out.profile.type = unit.info();
  if (too_many) {
    return InvalidArgumentError("the range holds more than " + std::to_string(query.max_points) +
                                " (lane, time, stack) points; choose a shorter range or a narrower selector");
  }
  // Stacks: dense indexes in first-seen order of the sorted points.
  std::vector<std::pair<Key, int64_t>> rows(sums.begin(), sums.end());
  sums.clear();
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.lane, a.first.time, a.first.stack) < std::tie(b.first.lane, b.first.time, b.first.stack);
  });
  std::unordered_map<uint64_t, uint32_t> stack_index;
  std::vector<uint64_t> stack_ids;
  std::vector<int64_t> stack_values;
  std::vector<int32_t> lane_index(groups.values.size(), -1);
  out.points.reserve(rows.size());
  for (const auto& [key, value] : rows) {
    if (value <= 0) continue;
    auto [it, inserted] = stack_index.try_emplace(key.stack, static_cast<uint32_t>(stack_ids.size()));
    if (inserted) {
      stack_ids.push_back(key.stack);
      stack_values.push_back(0);
    }
    SaturatingAddTo(stack_values[it->second], value);
    if (lane_index[key.lane] < 0) {
      lane_index[key.lane] = static_cast<int32_t>(out.lanes.size());
      Labels labels;
      for (size_t i = 0; i < names.size(); ++i) labels.emplace_back(names[i], groups.values[key.lane][i]);
      out.lanes.push_back(std::move(labels));
    }
    out.points.push_back({static_cast<uint32_t>(lane_index[key.lane]), key.time, it->second, value});
  }
  ASSIGN_OR_RETURN(ResolvedStackTable table, stacks_->Resolve(stack_ids));
  out.profile.frames = std::move(table.frames);
  out.profile.stacks.reserve(table.stacks.size());
  for (size_t i = 0; i < table.stacks.size(); ++i) {
    SaturatingAddTo(out.profile.total, stack_values[i]);
    out.profile.stacks.push_back({std::move(table.stacks[i]), stack_values[i]});
  }
  out.profile.series = static_cast<uint64_t>(std::count(contributed.begin(), contributed.end(), 1));
  return out;
}

StatusOr<std::vector<Labels>> EmbeddedProfileStore::SelectSeriesLabels(const storage::SeriesLabelsQuery& query) {
  RETURN_IF_ERROR(storage::CheckQuery(query.context));
  // Every type, metrics too, for the targets list (its GPUs come from metric series).
  ASSIGN_OR_RETURN(std::vector<TypeEntry> types,
                   series_->Types(query.type, query.type.empty() ? TypeKind::kAny : TypeKind::kProfile));
  if (types.empty()) return std::vector<Labels>{};
  ASSIGN_OR_RETURN(std::vector<uint64_t> series, series_->Select(query.selector, query.context));
  if (series.empty()) return std::vector<Labels>{};
  const std::vector<uint8_t> mask = Mask(series);
  std::vector<uint8_t> seen(mask.size(), 0);
  // A series already seen is filtered out, so segments skip its later runs.
  RETURN_IF_ERROR(ScanRows(
      query.context, types, std::max(query.from_ns, RetentionCutoff()), query.to_ns,
      [&](uint64_t id) { return InMask(mask, id) && !seen[id]; }, [&](const SampleRow& r) { seen[r.series_id] = 1; }));
  std::vector<Labels> out;
  for (uint64_t id = 0; id < seen.size(); ++id) {
    if (!seen[id]) continue;
    ASSIGN_OR_RETURN(Labels labels, series_->LabelsOf(id));
    out.push_back(std::move(labels));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

StatusOr<std::vector<std::string>> EmbeddedProfileStore::LabelNames() { return dictionary_->LabelNames(); }

StatusOr<std::vector<std::string>> EmbeddedProfileStore::LabelValues(const std::string& name) {
  return dictionary_->LabelValues(name);
}

StatusOr<std::vector<ProfileTypeInfo>> EmbeddedProfileStore::ProfileTypes() {
  ASSIGN_OR_RETURN(std::vector<TypeEntry> types, series_->Types("", TypeKind::kProfile));
  std::vector<ProfileTypeInfo> out;
  for (TypeEntry& t : types) out.push_back(std::move(t.info));
  std::sort(out.begin(), out.end(), [](const ProfileTypeInfo& a, const ProfileTypeInfo& b) {
    return std::tie(a.name, a.sample_unit, a.period_nanos) < std::tie(b.name, b.sample_unit, b.period_nanos);
  });
  return out;
}

StatusOr<std::vector<storage::MetricSeries>> EmbeddedProfileStore::SelectMetricSeries(
    const storage::MetricQuery& query) {
  RETURN_IF_ERROR(storage::CheckQuery(query.context));
  if (query.name.empty()) return InvalidArgumentError("metric name is empty");
  if (query.step_ns <= 0) return InvalidArgumentError("step must be positive");
  if (query.to_ns <= query.from_ns) return std::vector<storage::MetricSeries>{};
  ASSIGN_OR_RETURN(const int64_t steps, storage::SeriesStepCount(query.from_ns, query.to_ns, query.step_ns));
  ASSIGN_OR_RETURN(std::vector<TypeEntry> types, series_->Types(query.name, TypeKind::kMetric));
  if (types.empty()) return std::vector<storage::MetricSeries>{};
  ASSIGN_OR_RETURN(std::vector<uint64_t> series, series_->Select(query.selector, query.context));
  if (series.empty()) return std::vector<storage::MetricSeries>{};
  const std::vector<std::string> names = SortedUnique(query.group_by);
  ASSIGN_OR_RETURN(SeriesGroups groups, GroupSeries(query.context, series, names));
  const std::vector<int32_t>& group = groups.group;
  RETURN_IF_ERROR(CheckGroupPoints(groups.values.size(), steps));
  struct Accumulator {
    double min = 0, max = 0, sum = 0;
    uint64_t count = 0;
  };
  std::vector<std::vector<Accumulator>> acc(groups.values.size());  // allocated on a group's first row
  RETURN_IF_ERROR(ScanRows(
      query.context, types, std::max(query.from_ns, RetentionCutoff()), query.to_ns,
      [&](uint64_t id) { return id < group.size() && group[id] >= 0; },
      [&](const SampleRow& r) {
        std::vector<Accumulator>& g = acc[group[r.series_id]];
        if (g.empty()) g.resize(steps);
        Accumulator& a = g[(r.time_ns - query.from_ns) / query.step_ns];
        const double value = MetricValue(r);
        const uint64_t n = MetricMultiplicity(r);
        if (a.count == 0) {
          a.min = a.max = value;
        } else {
          a.min = std::min(a.min, value);
          a.max = std::max(a.max, value);
        }
        a.sum += value * static_cast<double>(n);
        a.count += n;
      }));
  std::vector<storage::MetricSeries> out;
  for (size_t g = 0; g < groups.values.size(); ++g) {  // sorted by the label values
    if (acc[g].empty()) continue;
    storage::MetricSeries s;
    for (size_t i = 0; i < names.size(); ++i) s.labels.emplace_back(names[i], groups.values[g][i]);
    for (int64_t k = 0; k < steps; ++k) {
      const Accumulator& a = acc[g][k];
      if (a.count > 0) s.points.push_back({query.from_ns + k * query.step_ns, a.min, a.max, a.sum, a.count});
    }
    out.push_back(std::move(s));
  }
  return out;
}

StatusOr<std::vector<storage::MetricInfo>> EmbeddedProfileStore::MetricNames() {
  ASSIGN_OR_RETURN(std::vector<TypeEntry> types, series_->Types("", TypeKind::kMetric));
  std::vector<storage::MetricInfo> out;
  for (TypeEntry& t : types) out.push_back({std::move(t.info.name), std::move(t.info.sample_unit)});
  std::sort(out.begin(), out.end(), [](const storage::MetricInfo& a, const storage::MetricInfo& b) {
    return std::tie(a.name, a.unit) < std::tie(b.name, b.unit);
  });
  return out;
}

}  // namespace warpscope::embedded
