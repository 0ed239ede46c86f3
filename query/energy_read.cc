#include "query/energy_read.h"

#include <algorithm>

#include "query/insight_support.h"
#include "storage/series_steps.h"

namespace warpscope::query {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kPadding = 60 * kSecond;
constexpr int64_t kMaxPaddingSteps = kPadding / kSecond;

bool IsGpuLabel(const std::string& name) { return name == "node" || name == "gpu"; }

using insight_support::LabelOf;

bool HasType(storage::ProfileStore* store, const std::string& name, storage::ProfileTypeInfo* info) {
  auto types = store->ProfileTypes();
  if (!types.ok()) return false;
  for (const auto& t : *types) {
    if (t.name == name) {
      if (info != nullptr) *info = t;
      return true;
    }
  }
  return false;
}

}  // namespace

EnergyInputs EnergyGrid(int64_t from_ns, int64_t to_ns) {
  EnergyInputs in;
  in.from_ns = from_ns;
  in.to_ns = to_ns;
  const int64_t span = to_ns - from_ns;
  const int64_t usable = storage::kMaxSeriesSteps - 2 * kMaxPaddingSteps - 4;
  in.step_ns = std::max(kSecond, (span / usable + kSecond) / kSecond * kSecond);
  const int64_t padding = (kPadding + in.step_ns - 1) / in.step_ns * in.step_ns;
  in.read_from_ns = from_ns - padding;
  in.read_to_ns = from_ns + (span + in.step_ns - 1) / in.step_ns * in.step_ns + padding;
  return in;
}

Selector GpuSelector(const Selector& selector) {
  std::vector<LabelMatcher> kept;
  for (const LabelMatcher& m : selector.matchers()) {
    if (IsGpuLabel(m.name())) kept.push_back(m);
  }
  return Selector(std::move(kept));
}

bool SelectsProcesses(const Selector& selector) {
  return std::any_of(selector.matchers().begin(), selector.matchers().end(),
                     [](const LabelMatcher& m) { return !IsGpuLabel(m.name()); });
}

Status ReadEnergyInputs(storage::ProfileStore* store, const storage::ProfileQuery& q, const EnergyReads& reads,
                        EnergyInputs* in, std::set<std::pair<std::string, std::string>>* selected) {
  const Selector gpus = GpuSelector(q.selector);
  auto metric = [&](const std::string& name, const Selector& selector, std::vector<std::string> group_by,
                    std::vector<storage::MetricSeries>* out, int64_t step = 0) -> Status {
    storage::MetricQuery mq;
    mq.name = name;
    mq.from_ns = in->read_from_ns;
    mq.to_ns = in->read_to_ns;
    mq.selector = selector;
    mq.step_ns = step > 0 ? step : in->step_ns;
    mq.group_by = std::move(group_by);
    mq.context = q.context;
    ASSIGN_OR_RETURN(*out, store->SelectMetricSeries(mq));
    return Status::Ok();
  };
  // Samples of a profile type over the range, on `step` (0: one step).
  auto samples = [&](const std::string& type, const Selector& selector, int64_t step, std::vector<std::string> group_by,
                     std::vector<storage::Series>* out, storage::ProfileTypeInfo* unit) -> Status {
    storage::SeriesQuery sq;
    sq.profile = q;
    sq.profile.type = type;
    sq.profile.selector = selector;
    sq.step_ns = step > 0 ? step : q.to_ns - q.from_ns;
    sq.group_by = std::move(group_by);
    sq.answer_type = unit;
    ASSIGN_OR_RETURN(*out, store->SelectSeries(sq));
    return Status::Ok();
  };
  // Counters on steps as fine as the store allows (whole milliseconds), so
  // that each reading's time is known to within that.
  constexpr int64_t kMs = 1'000'000;
  const int64_t span = in->read_to_ns - in->read_from_ns;
  in->energy_step_ns = std::min(in->step_ns, std::max(kMs, (span / (storage::kMaxSeriesSteps - 16) + kMs) / kMs * kMs));
  RETURN_IF_ERROR(metric("gpu_energy", gpus, {"node", "gpu"}, &in->gpu_energy, in->energy_step_ns));
  RETURN_IF_ERROR(metric("gpu_power", gpus, {"node", "gpu"}, &in->gpu_power));
  RETURN_IF_ERROR(metric("gpu_utilization", gpus, {"node", "gpu"}, &in->gpu_utilization));
  std::vector<LabelMatcher> node_matchers;
  for (const LabelMatcher& m : q.selector.matchers()) {
    if (m.name() == "node") node_matchers.push_back(m);
  }
  const Selector node_selector(std::move(node_matchers));
  if (reads.processes) {
    const std::vector<std::string> process = {"node", "pid", "comm", "gpu", "namespace", "pod"};
    RETURN_IF_ERROR(metric("gpu_process_sm_utilization", gpus, process, &in->process_sm));
    RETURN_IF_ERROR(metric("gpu_process_memory_used", gpus, process, &in->process_memory));
    if (HasType(store, "gpu_time", nullptr)) {
      RETURN_IF_ERROR(samples("gpu_time", node_selector, in->step_ns, {"node", "pid", "comm", "device", "namespace", "pod"},
                              &in->gpu_time, nullptr));
    }
  }
  if (reads.cpu) {
    RETURN_IF_ERROR(metric("cpu_energy", node_selector, {"node", "zone"}, &in->cpu_energy, in->energy_step_ns));
    RETURN_IF_ERROR(metric("dram_energy", node_selector, {"node", "zone"}, &in->dram_energy, in->energy_step_ns));
    storage::ProfileTypeInfo unit;
    if (HasType(store, "cpu", nullptr)) {
      RETURN_IF_ERROR(samples("cpu", q.selector, in->series_step_ns, {"node", "pid", "comm", "namespace", "pod"}, &in->cpu,
                              &unit));
      // Counts of one period, or nanoseconds when agents with different
      // periods were summed.
      in->cpu_period_ns = unit.sample_unit == "samples" && unit.period_nanos > 0 ? unit.period_nanos : 1;
      if (!in->cpu_energy.empty()) {
        storage::ProfileTypeInfo node_unit;
        RETURN_IF_ERROR(samples("cpu", node_selector, in->series_step_ns, {"node"}, &in->node_cpu, &node_unit));
        in->node_cpu_period_ns =
            node_unit.sample_unit == "samples" && node_unit.period_nanos > 0 ? node_unit.period_nanos : 1;
      }
    }
  }
  // Each node's CPU model and its agent's watts per thread.
  if (reads.cpu) {
    std::vector<storage::MetricSeries> info;
    RETURN_IF_ERROR(metric("cpu_info", node_selector, {"node", "cpu_model"}, &info));
    for (const auto& s : info) in->node_cpu_model[LabelOf(s.labels, "node")] = LabelOf(s.labels, "cpu_model");
    RETURN_IF_ERROR(metric("cpu_watts_per_core", node_selector, {"node"}, &info));
    for (const auto& s : info) {
      if (!s.points.empty() && s.points.back().count > 0) {
        in->node_cpu_watts[LabelOf(s.labels, "node")] = s.points.back().sum / static_cast<double>(s.points.back().count);
      }
    }
  }
  // Each node's region label, from whichever of its series carry one.
  std::vector<storage::MetricSeries> regions;
  RETURN_IF_ERROR(metric("gpu_utilization", gpus, {"node", "region"}, &regions));
  for (const auto& s : regions) {
    if (!LabelOf(s.labels, "region").empty()) in->node_region[LabelOf(s.labels, "node")] = LabelOf(s.labels, "region");
  }
  if (reads.cpu && HasType(store, "cpu", nullptr)) {
    std::vector<storage::Series> cpu_regions;
    RETURN_IF_ERROR(samples("cpu", node_selector, 0, {"node", "region"}, &cpu_regions, nullptr));
    for (const auto& s : cpu_regions) {
      if (!LabelOf(s.labels, "region").empty()) in->node_region[LabelOf(s.labels, "node")] = LabelOf(s.labels, "region");
    }
  }
  if (selected != nullptr && SelectsProcesses(q.selector)) {
    std::vector<storage::MetricSeries> picked;
    for (const char* name : {"gpu_process_sm_utilization", "gpu_process_memory_used"}) {
      RETURN_IF_ERROR(metric(name, q.selector, {"node", "pid"}, &picked));
      for (const auto& s : picked) selected->insert({LabelOf(s.labels, "node"), LabelOf(s.labels, "pid")});
    }
    if (HasType(store, "gpu_time", nullptr)) {
      std::vector<storage::Series> series;
      RETURN_IF_ERROR(samples("gpu_time", q.selector, 0, {"node", "pid"}, &series, nullptr));
      for (const auto& s : series) selected->insert({LabelOf(s.labels, "node"), LabelOf(s.labels, "pid")});
    }
    for (const auto& s : in->cpu) selected->insert({LabelOf(s.labels, "node"), LabelOf(s.labels, "pid")});
  }
  return Status::Ok();
}

}  // namespace warpscope::query
