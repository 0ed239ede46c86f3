#include "query/energy_profile.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "query/energy.h"
#include "query/insight_support.h"
#include "query/energy_read.h"

namespace warpscope::query {
namespace {

constexpr char kGpuTimeType[] = "gpu_time";

using insight_support::LabelOf;

storage::ProfileTypeInfo EnergyType() { return {kGpuEnergyType, kMicrojoules, 0}; }

}  // namespace

StatusOr<storage::StackTimeline> EnergyProfileStore::EnergyTimeline(const storage::ProfileQuery& query,
                                                                    const std::vector<std::string>& group_by,
                                                                    size_t max_points) {
  // Lanes fine enough to weigh: the asked labels plus the process and its device.
  std::vector<std::string> lanes = group_by;
  for (const char* l : {"node", "pid", "device"}) {
    if (std::find(lanes.begin(), lanes.end(), l) == lanes.end()) lanes.push_back(l);
  }
  storage::TimelineQuery tq;
  tq.profile = query;
  tq.profile.type = kGpuTimeType;
  tq.group_by = lanes;
  tq.max_points = max_points;
  ASSIGN_OR_RETURN(storage::StackTimeline time, inner_->SelectStackTimeline(tq));

  EnergyInputs in = EnergyGrid(query.from_ns, query.to_ns);
  EnergyReads reads;
  reads.cpu = false;
  RETURN_IF_ERROR(ReadEnergyInputs(inner_, query, reads, &in));
  const EnergyWeights weights(in);

  // The asked lanes, and each fine lane's.
  std::map<storage::Labels, uint32_t> outer_of;
  std::vector<storage::Labels> outer;
  std::vector<uint32_t> lane_map(time.lanes.size());
  for (size_t i = 0; i < time.lanes.size(); ++i) {
    storage::Labels labels;
    for (const auto& [k, v] : time.lanes[i]) {
      if (std::find(group_by.begin(), group_by.end(), k) != group_by.end()) labels.emplace_back(k, v);
    }
    auto [it, inserted] = outer_of.try_emplace(labels, static_cast<uint32_t>(outer.size()));
    if (inserted) outer.push_back(labels);
    lane_map[i] = it->second;
  }
  std::map<std::tuple<uint32_t, int64_t, uint32_t>, double> microjoules;  // (lane, time, stack)
  for (const storage::TimelinePoint& p : time.points) {
    const storage::Labels& fine = time.lanes[p.lane];
    const double f = weights.MicrojoulesPerNs(LabelOf(fine, "node"), LabelOf(fine, "pid"), LabelOf(fine, "device"), p.time_ns);
    if (f > 0) microjoules[{lane_map[p.lane], p.time_ns, p.stack}] += static_cast<double>(p.value) * f;
  }

  std::vector<int64_t> stack_value(time.profile.stacks.size(), 0);
  std::vector<int64_t> lane_value(outer.size(), 0);
  std::vector<storage::TimelinePoint> points;
  for (const auto& [key, v] : microjoules) {
    const int64_t value = std::llround(v);
    if (value <= 0) continue;
    const auto [lane, t, stack] = key;
    points.push_back({lane, t, stack, value});
    stack_value[stack] += value;
    lane_value[lane] += value;
  }
  // Stacks that kept a value, renumbered; lanes by value, largest first.
  storage::StackTimeline out;
  out.profile.type = EnergyType();
  out.profile.frames = std::move(time.profile.frames);
  out.profile.series = time.profile.series;
  std::vector<uint32_t> stack_index(stack_value.size(), 0);
  for (size_t s = 0; s < stack_value.size(); ++s) {
    if (stack_value[s] <= 0) continue;
    stack_index[s] = static_cast<uint32_t>(out.profile.stacks.size());
    out.profile.stacks.push_back({std::move(time.profile.stacks[s].frames), stack_value[s]});
    out.profile.total += stack_value[s];
  }
  std::vector<uint32_t> order(outer.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return lane_value[a] > lane_value[b]; });
  std::vector<uint32_t> lane_index(outer.size());
  for (uint32_t i = 0; i < order.size(); ++i) {
    if (lane_value[order[i]] <= 0) continue;
    lane_index[order[i]] = static_cast<uint32_t>(out.lanes.size());
    out.lanes.push_back(outer[order[i]]);
  }
  for (storage::TimelinePoint& p : points) {
    p.lane = lane_index[p.lane];
    p.stack = stack_index[p.stack];
  }
  std::sort(points.begin(), points.end(), [](const storage::TimelinePoint& a, const storage::TimelinePoint& b) {
    return std::tie(a.lane, a.time_ns, a.stack) < std::tie(b.lane, b.time_ns, b.stack);
  });
  out.points = std::move(points);
  return out;
}

StatusOr<storage::MergedProfile> EnergyProfileStore::SelectProfile(const storage::ProfileQuery& query) {
  if (query.type != kGpuEnergyType) return inner_->SelectProfile(query);
  ASSIGN_OR_RETURN(storage::StackTimeline t, EnergyTimeline(query, {}, storage::TimelineQuery{}.max_points));
  return std::move(t.profile);
}

StatusOr<std::vector<storage::Series>> EnergyProfileStore::SelectSeries(const storage::SeriesQuery& query) {
  if (query.profile.type != kGpuEnergyType) return inner_->SelectSeries(query);
  if (query.step_ns <= 0) return InvalidArgumentError("step must be positive");
  ASSIGN_OR_RETURN(storage::StackTimeline t,
                   EnergyTimeline(query.profile, query.group_by, storage::TimelineQuery{}.max_points));
  if (query.answer_type != nullptr && !t.points.empty()) *query.answer_type = EnergyType();
  std::vector<storage::Series> out(t.lanes.size());
  std::vector<std::map<int64_t, int64_t>> steps(t.lanes.size());
  for (const storage::TimelinePoint& p : t.points) {
    if (p.time_ns < query.profile.from_ns || p.time_ns >= query.profile.to_ns) continue;
    const int64_t k = (p.time_ns - query.profile.from_ns) / query.step_ns;
    steps[p.lane][query.profile.from_ns + k * query.step_ns] += p.value;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].labels = t.lanes[i];
    for (const auto& [time, value] : steps[i]) out[i].points.push_back({time, value});
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const storage::Series& s) { return s.points.empty(); }), out.end());
  std::sort(out.begin(), out.end(), [](const storage::Series& a, const storage::Series& b) { return a.labels < b.labels; });
  return out;
}

StatusOr<storage::StackTimeline> EnergyProfileStore::SelectStackTimeline(const storage::TimelineQuery& query) {
  if (query.profile.type != kGpuEnergyType) return inner_->SelectStackTimeline(query);
  return EnergyTimeline(query.profile, query.group_by, query.max_points);
}

StatusOr<std::vector<storage::Labels>> EnergyProfileStore::SelectSeriesLabels(const storage::SeriesLabelsQuery& query) {
  if (query.type != kGpuEnergyType) return inner_->SelectSeriesLabels(query);
  storage::SeriesLabelsQuery q = query;
  q.type = kGpuTimeType;
  return inner_->SelectSeriesLabels(q);
}

StatusOr<std::vector<storage::ProfileTypeInfo>> EnergyProfileStore::ProfileTypes() {
  ASSIGN_OR_RETURN(std::vector<storage::ProfileTypeInfo> types, inner_->ProfileTypes());
  auto it = std::find_if(types.begin(), types.end(), [](const auto& t) { return t.name == kGpuTimeType; });
  if (it != types.end()) types.insert(it + 1, EnergyType());
  return types;
}

}  // namespace warpscope::query
