#include "query/energy.h"

#include "query/cpu_coefficients.h"
#include "query/insight_support.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

namespace warpscope::query {
namespace {

using nlohmann::json;
using storage::Labels;
using storage::MetricSeries;

constexpr double kNsPerSecond = 1e9;
constexpr double kJoulesPerKwh = 3.6e6;
// A step whose mean utilization is below this percent is idle: NVML's
// gpu_utilization counts any kernel running during its sample period, so
// below 1 % no kernel ran for practically all of the step.
constexpr double kIdleUtilizationPercent = 1;

using insight_support::LabelOf;

Labels Pick(const Labels& labels, std::initializer_list<const char*> names) {
  Labels out;
  for (const char* name : names) out.emplace_back(name, LabelOf(labels, name));
  std::sort(out.begin(), out.end());
  return out;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Steps of the padded grid [read_from_ns, read_to_ns).
size_t GridSteps(const EnergyInputs& in) { return static_cast<size_t>(CeilDiv(in.read_to_ns - in.read_from_ns, in.step_ns)); }
size_t RangeSteps(const EnergyInputs& in) { return static_cast<size_t>(CeilDiv(in.to_ns - in.from_ns, in.step_ns)); }
size_t RangeOffset(const EnergyInputs& in) { return static_cast<size_t>((in.from_ns - in.read_from_ns) / in.step_ns); }

// The grid index of a step's time, or -1 outside the grid.
int64_t GridIndex(const EnergyInputs& in, int64_t t) {
  if (t < in.read_from_ns || t >= in.read_to_ns) return -1;
  return (t - in.read_from_ns) / in.step_ns;
}

// A series' mean per grid step (NaN where it has no point).
std::vector<double> MeanPerStep(const EnergyInputs& in, const MetricSeries* s) {
  std::vector<double> out(GridSteps(in), std::nan(""));
  if (s == nullptr) return out;
  for (const storage::MetricStep& p : s->points) {
    const int64_t i = GridIndex(in, p.time_ns);
    if (i >= 0 && p.count > 0) out[static_cast<size_t>(i)] = p.sum / static_cast<double>(p.count);
  }
  return out;
}

GpuId KeyOf(const Labels& labels) { return {LabelOf(labels, "node"), LabelOf(labels, "gpu")}; }

std::map<GpuId, const MetricSeries*> ByGpu(const std::vector<MetricSeries>& series) {
  std::map<GpuId, const MetricSeries*> out;
  for (const MetricSeries& s : series) out[KeyOf(s.labels)] = &s;
  return out;
}

const MetricSeries* Find(const std::map<GpuId, const MetricSeries*>& m, const GpuId& key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : it->second;
}

// NVML indexes and CUDA ordinals order as numbers ("10" after "9").
bool IndexLess(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

std::optional<size_t> ParseIndex(const std::string& text) {
  if (text.empty() || text.size() > 6 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return static_cast<size_t>(std::stoul(text));
}

void AddSource(std::vector<std::string>* sources, const std::string& source) {
  if (std::find(sources->begin(), sources->end(), source) == sources->end()) {
    sources->push_back(source);
    std::sort(sources->begin(), sources->end());
  }
}

// A group's figures; co2_grams is passed for the total (a sum over groups
// of different coefficients).
json GroupFigures(const EnergyGroup& g, const EnergyCoefficients& c, double co2_grams) {
  const double kwh = g.total_joules() / kJoulesPerKwh;
  return {{"gpu_joules", g.gpu_joules},
          {"gpu_busy_joules", g.gpu_busy_joules},
          {"gpu_idle_joules", g.gpu_idle_joules},
          {"cpu_joules", g.cpu_joules},
          {"dram_joules", g.dram_joules},
          {"total_joules", g.total_joules()},
          {"kwh", kwh},
          {"co2_grams", co2_grams},
          {"cost", kwh * c.price_per_kwh}};
}

}  // namespace

GpuStepEnergy GpuEnergyPerStep(const EnergyInputs& in, const MetricSeries* energy, const MetricSeries* power) {
  const size_t grid = GridSteps(in);
  const std::vector<double> watts = MeanPerStep(in, power);
  std::vector<double> joules(grid, 0);
  std::vector<int64_t> covered(grid, 0);  // nanoseconds of each step counter intervals cover
  auto step_start = [&](size_t i) { return in.read_from_ns + static_cast<int64_t>(i) * in.step_ns; };
  if (energy != nullptr) {
    // Each counter step's reading is its largest value (a counter's last),
    // taken at the step's end; counter steps are as fine as the store
    // allowed (energy_step_ns), so that time is close to the reading's own.
    const int64_t energy_step = in.energy_step_ns > 0 ? in.energy_step_ns : in.step_ns;
    struct Reading {
      int64_t time_ns;
      double joules;
    };
    std::vector<Reading> readings;
    for (const storage::MetricStep& p : energy->points) {
      const int64_t t = std::min(p.time_ns + energy_step, in.read_to_ns);
      if (p.count > 0 && t > in.read_from_ns) readings.push_back({t, p.max});
    }
    std::vector<double> weight;
    for (size_t r = 1; r < readings.size(); ++r) {
      const int64_t a = readings[r - 1].time_ns;
      const int64_t b = readings[r].time_ns;
      const double delta = readings[r].joules - readings[r - 1].joules;
      if (b <= a || delta < 0) continue;  // a reset: a new segment starts at readings[r]
      // Spread over the steps the interval overlaps, in proportion to the
      // overlap × the step's power where every such step has a power
      // reading, else to the overlap alone.
      const size_t first = static_cast<size_t>(std::max<int64_t>(0, GridIndex(in, a)));
      const size_t last = std::min(grid - 1, static_cast<size_t>((b - 1 - in.read_from_ns) / in.step_ns));
      bool by_power = true;
      for (size_t i = first; i <= last; ++i) by_power = by_power && !std::isnan(watts[i]) && watts[i] > 0;
      weight.assign(last - first + 1, 0);
      double total = 0;
      for (size_t i = first; i <= last; ++i) {
        const int64_t overlap = std::min(b, step_start(i) + in.step_ns) - std::max(a, step_start(i));
        if (overlap <= 0) continue;
        covered[i] += overlap;
        weight[i - first] = static_cast<double>(overlap) * (by_power ? watts[i] : 1.0);
        total += weight[i - first];
      }
      if (total <= 0) continue;
      for (size_t i = first; i <= last; ++i) joules[i] += delta * weight[i - first] / total;
    }
  }
  GpuStepEnergy out;
  const size_t n = RangeSteps(in);
  const size_t offset = RangeOffset(in);
  out.joules.assign(n, 0);
  out.from_counter.assign(n, false);
  out.from_power.assign(n, false);
  for (size_t k = 0; k < n && offset + k < grid; ++k) {
    const size_t i = offset + k;
    const int64_t start = in.from_ns + static_cast<int64_t>(k) * in.step_ns;
    const double share = static_cast<double>(std::min(in.step_ns, in.to_ns - start)) / static_cast<double>(in.step_ns);
    // The counter's joules, and power for the part of the step no counter
    // interval covers (before the first reading, across a reset, after the
    // last).
    const int64_t uncovered = std::max<int64_t>(0, in.step_ns - covered[i]);
    double j = joules[i];
    if (covered[i] > 0) out.from_counter[k] = true;
    if (uncovered > 0 && !std::isnan(watts[i])) {
      j += watts[i] * static_cast<double>(uncovered) / kNsPerSecond;
      out.from_power[k] = true;
    }
    out.joules[k] = j * share;
  }
  return out;
}

std::map<GpuId, GpuJoules> GpuJoulesPerStep(const EnergyInputs& in) {
  const auto energy = ByGpu(in.gpu_energy);
  const auto power = ByGpu(in.gpu_power);
  const auto utilization = ByGpu(in.gpu_utilization);
  std::set<GpuId> gpus;
  for (const auto& [key, s] : energy) gpus.insert(key);
  for (const auto& [key, s] : power) gpus.insert(key);
  const size_t n = RangeSteps(in);
  const size_t offset = RangeOffset(in);
  std::map<GpuId, GpuJoules> out;
  for (const GpuId& key : gpus) {
    const GpuStepEnergy steps = GpuEnergyPerStep(in, Find(energy, key), Find(power, key));
    const std::vector<double> util = MeanPerStep(in, Find(utilization, key));
    GpuJoules g;
    g.busy.assign(n, 0);
    g.idle.assign(n, 0);
    for (size_t k = 0; k < n; ++k) {
      const double u = offset + k < util.size() ? util[offset + k] : std::nan("");
      (!std::isnan(u) && u < kIdleUtilizationPercent ? g.idle : g.busy)[k] = steps.joules[k];
      g.from_counter = g.from_counter || steps.from_counter[k];
      g.from_power = g.from_power || steps.from_power[k];
    }
    if (g.from_counter || g.from_power) out.emplace(key, std::move(g));
  }
  return out;
}

DeviceMap::DeviceMap(const EnergyInputs& in) {
  auto add = [](std::vector<std::string>* v, const std::string& gpu) {
    if (std::find(v->begin(), v->end(), gpu) == v->end()) {
      v->push_back(gpu);
      std::sort(v->begin(), v->end(), IndexLess);
    }
  };
  for (const auto* list : {&in.process_sm, &in.process_memory}) {
    for (const MetricSeries& s : *list) {
      add(&process_gpus_[{LabelOf(s.labels, "node"), LabelOf(s.labels, "pid")}], LabelOf(s.labels, "gpu"));
    }
  }
  for (const auto* list : {&in.gpu_energy, &in.gpu_power, &in.gpu_utilization}) {
    for (const MetricSeries& s : *list) add(&node_gpus_[LabelOf(s.labels, "node")], LabelOf(s.labels, "gpu"));
  }
}

std::optional<GpuId> DeviceMap::Gpu(const std::string& node, const std::string& pid, const std::string& device) const {
  const std::optional<size_t> ordinal = ParseIndex(device);
  if (auto it = process_gpus_.find({node, pid}); it != process_gpus_.end()) {
    const std::vector<std::string>& gpus = it->second;
    if (gpus.size() == 1) return GpuId{node, gpus[0]};
    if (ordinal && *ordinal < gpus.size()) return GpuId{node, gpus[*ordinal]};
  }
  auto it = node_gpus_.find(node);
  if (it == node_gpus_.end()) return std::nullopt;
  if (std::find(it->second.begin(), it->second.end(), device) != it->second.end()) return GpuId{node, device};
  if (it->second.size() == 1) return GpuId{node, it->second[0]};
  return std::nullopt;
}

EnergyAnswer ComputeEnergy(const EnergyInputs& in, EnergyGrouping grouping, const EnergyCoefficients& coefficients,
                           const RegionTable& regions) {
  EnergyAnswer answer;
  answer.from_ns = in.from_ns;
  answer.to_ns = in.to_ns;
  answer.coefficients = coefficients;
  const size_t n = RangeSteps(in);
  const size_t window = static_cast<size_t>(std::max<int64_t>(1, CeilDiv(in.share_window_ns, in.step_ns)));
  const size_t windows = (n + window - 1) / window;
  // Range steps per series step, and series steps.
  const size_t per_out = in.series_step_ns > 0 ? static_cast<size_t>(std::max<int64_t>(1, in.series_step_ns / in.step_ns)) : 0;
  const size_t out_steps = per_out > 0 ? (n + per_out - 1) / per_out : 0;
  answer.series_step_ns = per_out > 0 ? static_cast<int64_t>(per_out) * in.step_ns : 0;

  std::map<Labels, EnergyGroup> groups;
  auto group = [&](Labels labels) -> EnergyGroup& {
    EnergyGroup& g = groups[labels];
    g.labels = std::move(labels);
    if (g.step_cpu.size() < out_steps) {
      g.step_gpu_busy.resize(out_steps, 0);
      g.step_gpu_idle.resize(out_steps, 0);
      g.step_cpu.resize(out_steps, 0);
    }
    return g;
  };
  // Range step k's joules into a group's series.
  auto add_step = [&](EnergyGroup& g, size_t k, double busy, double idle, double cpu) {
    if (per_out == 0) return;
    const size_t o = k / per_out;
    g.step_gpu_busy[o] += busy;
    g.step_gpu_idle[o] += idle;
    g.step_cpu[o] += cpu;
  };
  const bool per_process = grouping == EnergyGrouping::kProcess || grouping == EnergyGrouping::kPod;
  auto process_key = [&](const Labels& labels) {
    return grouping == EnergyGrouping::kPod ? Pick(labels, {"namespace", "node", "pod"}) : Pick(labels, {"node", "pid", "comm"});
  };
  const DeviceMap devices(in);

  for (const auto& [key, gj] : GpuJoulesPerStep(in)) {
    auto add_sources = [&](EnergyGroup* g) {
      if (gj.from_counter) AddSource(&g->gpu_sources, kEnergyCounter);
      if (gj.from_power) AddSource(&g->gpu_sources, kPowerIntegration);
    };
    const Labels gpu_labels = {{"gpu", key.gpu}, {"node", key.node}};
    if (!per_process) {
      EnergyGroup& g = group(grouping == EnergyGrouping::kNode ? Labels{{"node", key.node}} : gpu_labels);
      for (size_t k = 0; k < n; ++k) {
        g.gpu_busy_joules += gj.busy[k];
        g.gpu_idle_joules += gj.idle[k];
        add_step(g, k, gj.busy[k], gj.idle[k], 0);
      }
      g.gpu_joules = g.gpu_busy_joules + g.gpu_idle_joules;
      add_sources(&g);
      continue;
    }
    // Per process: each window's busy joules by the processes' GPU time on
    // this GPU where the injection library reported any, else by their SM
    // utilization.
    std::map<Labels, std::vector<double>> by_time, by_sm;  // process -> per window
    for (const storage::Series& s : in.gpu_time) {
      const auto gpu = devices.Gpu(LabelOf(s.labels, "node"), LabelOf(s.labels, "pid"), LabelOf(s.labels, "device"));
      if (!gpu || *gpu != key) continue;
      std::vector<double>& per_window = by_time[Pick(s.labels, {"node", "pid", "comm", "namespace", "pod"})];
      per_window.resize(windows, 0);
      for (const storage::SeriesPoint& p : s.points) {
        if (p.time_ns < in.from_ns || p.time_ns >= in.to_ns) continue;
        per_window[static_cast<size_t>((p.time_ns - in.from_ns) / in.step_ns) / window] += static_cast<double>(p.value);
      }
    }
    const size_t offset = RangeOffset(in);
    for (const MetricSeries& s : in.process_sm) {
      if (KeyOf(s.labels) != key) continue;
      std::vector<double>& per_window = by_sm[Pick(s.labels, {"node", "pid", "comm", "namespace", "pod"})];
      per_window.resize(windows, 0);
      for (const storage::MetricStep& p : s.points) {
        const int64_t i = GridIndex(in, p.time_ns);
        if (i < static_cast<int64_t>(offset) || i >= static_cast<int64_t>(offset + n)) continue;
        per_window[(static_cast<size_t>(i) - offset) / window] += std::max(0.0, p.sum);
      }
    }
    // The GPU's own group: its idle joules and the busy joules no process
    // took (left out when the selector picks processes).
    EnergyGroup unselected_gpu;
    EnergyGroup& gpu_group = in.selected_processes ? unselected_gpu : group(gpu_labels);
    if (in.selected_processes) {
      unselected_gpu.step_gpu_busy.resize(out_steps, 0);
      unselected_gpu.step_gpu_idle.resize(out_steps, 0);
      unselected_gpu.step_cpu.resize(out_steps, 0);
    }
    add_sources(&gpu_group);
    for (size_t w = 0; w < windows; ++w) {
      const size_t first = w * window, last = std::min(n, (w + 1) * window);
      double window_busy = 0;
      for (size_t k = first; k < last; ++k) window_busy += gj.busy[k];
      auto total_of = [w](const std::map<Labels, std::vector<double>>& m) {
        double t = 0;
        for (const auto& [process, per_window] : m) t += per_window[w];
        return t;
      };
      const double time_total = total_of(by_time);
      const bool by_gpu_time = time_total > 0;
      const auto& shares = by_gpu_time ? by_time : by_sm;
      const double total = by_gpu_time ? time_total : total_of(by_sm);
      for (size_t k = first; k < last; ++k) add_step(gpu_group, k, total > 0 ? 0 : gj.busy[k], gj.idle[k], 0);
      if (total <= 0) {
        gpu_group.gpu_busy_joules += window_busy;
        continue;
      }
      for (const auto& [process, per_window] : shares) {
        if (per_window[w] <= 0) continue;
        if (in.selected_processes && !in.selected_processes->count({LabelOf(process, "node"), LabelOf(process, "pid")})) {
          continue;
        }
        const double fraction = per_window[w] / total;
        EnergyGroup& g = group(process_key(process));
        g.gpu_busy_joules += window_busy * fraction;
        g.gpu_apportioned = true;
        (by_gpu_time ? g.gpu_by_gpu_time : g.gpu_by_sm_utilization) = true;
        add_sources(&g);
        for (size_t k = first; k < last; ++k) add_step(g, k, gj.busy[k] * fraction, 0, 0);
      }
    }
    for (size_t k = 0; k < n; ++k) gpu_group.gpu_idle_joules += gj.idle[k];
  }
  for (auto& [labels, g] : groups) g.gpu_joules = g.gpu_busy_joules + g.gpu_idle_joules;

  // CPU. Where a node's RAPL counters were read, its measured joules (CPU
  // packages, then DRAM) per range step; else core-seconds × watts per core.
  std::map<std::string, std::vector<double>> rapl_cpu, rapl_dram;  // node -> per range step
  auto read_rapl = [&](const std::vector<MetricSeries>& series, std::map<std::string, std::vector<double>>* out) {
    for (const MetricSeries& s : series) {
      const GpuStepEnergy steps = GpuEnergyPerStep(in, &s, nullptr);
      if (std::none_of(steps.from_counter.begin(), steps.from_counter.end(), [](bool b) { return b; })) continue;
      std::vector<double>& v = (*out)[LabelOf(s.labels, "node")];
      v.resize(n, 0);
      for (size_t k = 0; k < n; ++k) v[k] += steps.joules[k];
    }
  };
  read_rapl(in.cpu_energy, &rapl_cpu);
  read_rapl(in.dram_energy, &rapl_dram);
  // A point's series step (0 without series).
  auto out_index = [&](int64_t t) {
    return per_out == 0 ? size_t{0} : std::min(out_steps - 1, static_cast<size_t>((t - in.from_ns) / answer.series_step_ns));
  };
  auto in_bucket = [&](const std::vector<double>& per_step, size_t o) {
    if (per_step.empty()) return 0.0;
    const size_t first = per_out == 0 ? 0 : o * per_out, last = per_out == 0 ? n : std::min(n, (o + 1) * per_out);
    double sum = 0;
    for (size_t k = first; k < last; ++k) sum += per_step[k];
    return sum;
  };
  // Watts per busy thread of a node without RAPL, and the CPU family they
  // come from: the query's, else the node's agent's, else its family's, else the default.
  auto node_watts = [&](const std::string& node) -> std::pair<double, std::string> {
    if (coefficients.cpu_watts_given) return {coefficients.cpu_watts_per_core, ""};
    if (auto it = in.node_cpu_watts.find(node); it != in.node_cpu_watts.end()) return {it->second, ""};
    if (auto it = in.node_cpu_model.find(node); it != in.node_cpu_model.end()) {
      if (const std::optional<CpuFamily> f = CpuFamilyOf(it->second)) return {f->watts_per_thread, f->name};
    }
    return {coefficients.cpu_watts_per_core, ""};
  };
  const double period = static_cast<double>(in.cpu_period_ns > 0 ? in.cpu_period_ns : 1);
  auto core_seconds = [&](const storage::SeriesPoint& p) { return static_cast<double>(p.value) * period / kNsPerSecond; };
  if (!per_process) {
    for (const auto* rapl : {&rapl_cpu, &rapl_dram}) {
      for (const auto& [node, per_step] : *rapl) {
        EnergyGroup& g = group({{"node", node}});
        for (size_t k = 0; k < n; ++k) {
          (rapl == &rapl_cpu ? g.cpu_joules : g.dram_joules) += per_step[k];
          add_step(g, k, 0, 0, per_step[k]);
        }
        AddSource(&g.cpu_sources, kCpuRapl);
      }
    }
  }
  // Each node's sampled core-seconds per series step: the denominators of
  // the measured joules' split.
  std::map<std::pair<std::string, size_t>, double> node_core_seconds;
  const double node_period = static_cast<double>(in.node_cpu_period_ns > 0 ? in.node_cpu_period_ns : 1);
  for (const storage::Series& s : in.node_cpu) {
    for (const storage::SeriesPoint& p : s.points) {
      if (p.time_ns >= in.from_ns && p.time_ns < in.to_ns) {
        node_core_seconds[{LabelOf(s.labels, "node"), out_index(p.time_ns)}] +=
            static_cast<double>(p.value) * node_period / kNsPerSecond;
      }
    }
  }
  for (const storage::Series& s : in.cpu) {
    const std::string node = LabelOf(s.labels, "node");
    const bool measured = rapl_cpu.count(node) > 0;
    if (measured && !per_process) continue;  // the node's group has its RAPL joules
    for (const storage::SeriesPoint& p : s.points) {
      if (p.time_ns < in.from_ns || p.time_ns >= in.to_ns || p.value <= 0) continue;
      const double cs = core_seconds(p);
      const size_t o = out_index(p.time_ns);
      EnergyGroup& g = group(per_process ? process_key(s.labels) : Labels{{"node", node}});
      double cpu = 0, dram = 0;
      if (measured) {
        const double node_cs = node_core_seconds[{node, o}];
        if (node_cs <= 0) continue;
        cpu = in_bucket(rapl_cpu[node], o) * cs / node_cs;
        if (auto it = rapl_dram.find(node); it != rapl_dram.end()) dram = in_bucket(it->second, o) * cs / node_cs;
        g.cpu_apportioned = true;
        AddSource(&g.cpu_sources, kCpuRapl);
      } else {
        const auto [watts, family] = node_watts(node);
        cpu = cs * watts;
        g.cpu_watts_per_core = watts;
        g.cpu_family = family;
        AddSource(&g.cpu_sources, kCpuCoefficient);
      }
      g.cpu_joules += cpu;
      g.dram_joules += dram;
      if (per_out > 0) g.step_cpu[o] += cpu + dram;
    }
  }

  // Each group's CO₂ coefficients: the query's, else its node's region's,
  // else the defaults.
  for (auto& [labels, g] : groups) {
    auto it = in.node_region.find(LabelOf(labels, "node"));
    const std::optional<RegionFactors> region =
        it == in.node_region.end() ? std::nullopt : regions.Find(it->second);
    g.region = region ? it->second : "";
    g.pue = coefficients.pue_given || !region || !region->pue ? coefficients.pue : *region->pue;
    g.carbon_intensity =
        coefficients.carbon_intensity_given || !region ? coefficients.carbon_intensity : region->carbon_intensity;
  }
  for (auto& [labels, g] : groups) answer.groups.push_back(std::move(g));
  std::stable_sort(answer.groups.begin(), answer.groups.end(), [](const EnergyGroup& a, const EnergyGroup& b) {
    return a.total_joules() > b.total_joules();
  });
  return answer;
}

EnergyWeights::EnergyWeights(const EnergyInputs& in) : from_ns_(in.from_ns), devices_(in) {
  const size_t n = RangeSteps(in);
  const size_t window = static_cast<size_t>(std::max<int64_t>(1, CeilDiv(in.share_window_ns, in.step_ns)));
  window_ns_ = static_cast<int64_t>(window) * in.step_ns;
  const size_t windows = (n + window - 1) / window;
  std::map<GpuId, std::vector<double>> gpu_ns;
  for (const storage::Series& s : in.gpu_time) {
    const auto gpu = devices_.Gpu(LabelOf(s.labels, "node"), LabelOf(s.labels, "pid"), LabelOf(s.labels, "device"));
    if (!gpu) continue;
    std::vector<double>& per_window = gpu_ns[*gpu];
    per_window.resize(windows, 0);
    for (const storage::SeriesPoint& p : s.points) {
      if (p.time_ns >= in.from_ns && p.time_ns < in.to_ns) {
        per_window[static_cast<size_t>((p.time_ns - in.from_ns) / window_ns_)] += static_cast<double>(p.value);
      }
    }
  }
  const auto joules = GpuJoulesPerStep(in);
  for (const auto& [gpu, per_window] : gpu_ns) {
    auto it = joules.find(gpu);
    if (it == joules.end()) continue;
    std::vector<double>& f = factors_[gpu];
    f.assign(windows, 0);
    for (size_t w = 0; w < windows; ++w) {
      double busy = 0;
      for (size_t k = w * window; k < std::min(n, (w + 1) * window); ++k) busy += it->second.busy[k];
      if (per_window[w] > 0) f[w] = busy * 1e6 / per_window[w];
    }
  }
}

double EnergyWeights::MicrojoulesPerNs(const std::string& node, const std::string& pid, const std::string& device,
                                       int64_t time_ns) const {
  const auto gpu = devices_.Gpu(node, pid, device);
  if (!gpu || time_ns < from_ns_) return 0;
  auto it = factors_.find(*gpu);
  if (it == factors_.end()) return 0;
  const size_t w = static_cast<size_t>((time_ns - from_ns_) / window_ns_);
  return w < it->second.size() ? it->second[w] : 0;
}

namespace {

// A group's series: step starts (ms) and joules per step.
json StepsJson(const EnergyAnswer& answer, const EnergyGroup& g) {
  constexpr int64_t kMs = 1'000'000;
  json t = json::array();
  for (size_t o = 0; o < g.step_cpu.size(); ++o) t.push_back((answer.from_ns + static_cast<int64_t>(o) * answer.series_step_ns) / kMs);
  json gpu = json::array();
  for (size_t o = 0; o < g.step_cpu.size(); ++o) gpu.push_back(g.step_gpu_busy[o] + g.step_gpu_idle[o]);
  return {{"step_ms", answer.series_step_ns / kMs},
          {"t", std::move(t)},
          {"gpu_joules", std::move(gpu)},
          {"gpu_busy_joules", g.step_gpu_busy},
          {"gpu_idle_joules", g.step_gpu_idle},
          {"cpu_joules", g.step_cpu}};
}

std::string Joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& s : parts) out += (out.empty() ? "" : "+") + s;
  return out;
}

}  // namespace

std::string RenderEnergyJson(const EnergyAnswer& answer) {
  constexpr int64_t kMs = 1'000'000;
  const EnergyCoefficients& c = answer.coefficients;
  const bool series = answer.series_step_ns > 0;
  EnergyGroup total;
  json groups = json::array();
  double co2_total = 0;
  for (const EnergyGroup& g : answer.groups) {
    const double co2 = g.total_joules() / kJoulesPerKwh * g.pue * g.carbon_intensity;
    co2_total += co2;
    json j = GroupFigures(g, c, co2);
    j["region"] = g.region.empty() ? json(nullptr) : json(g.region);
    j["pue"] = g.pue;
    j["carbon_intensity"] = g.carbon_intensity;
    if (g.cpu_watts_per_core > 0) j["cpu_watts_per_core"] = g.cpu_watts_per_core;
    if (!g.cpu_family.empty()) j["cpu_family"] = g.cpu_family;
    json labels = json::object();
    for (const auto& [k, v] : g.labels) labels[k] = v;
    j["labels"] = std::move(labels);
    j["gpu_source"] = g.gpu_sources.empty() ? json(nullptr) : json(Joined(g.gpu_sources));
    j["cpu_source"] = g.cpu_sources.empty() ? json(nullptr) : json(Joined(g.cpu_sources));
    std::vector<std::string> by;
    if (g.gpu_by_gpu_time) by.push_back("gpu_time");
    if (g.gpu_by_sm_utilization) by.push_back("sm_utilization");
    j["gpu_apportioned_by"] = by.empty() ? json(nullptr) : json(Joined(by));
    json measured = json::array();
    json estimated = json::array();
    if (!g.gpu_sources.empty()) (g.gpu_apportioned ? estimated : measured).push_back("gpu_joules");
    const bool cpu_measured = g.cpu_sources == std::vector<std::string>{kCpuRapl} && !g.cpu_apportioned;
    if (g.cpu_joules > 0) (cpu_measured ? measured : estimated).push_back("cpu_joules");
    if (g.dram_joules > 0) (cpu_measured ? measured : estimated).push_back("dram_joules");
    estimated.push_back("co2_grams");
    estimated.push_back("cost");
    j["measured"] = std::move(measured);
    j["estimated"] = std::move(estimated);
    if (series) j["steps"] = StepsJson(answer, g);
    groups.push_back(std::move(j));
    total.gpu_joules += g.gpu_joules;
    total.gpu_busy_joules += g.gpu_busy_joules;
    total.gpu_idle_joules += g.gpu_idle_joules;
    total.cpu_joules += g.cpu_joules;
    total.dram_joules += g.dram_joules;
    total.step_gpu_busy.resize(g.step_gpu_busy.size(), 0);
    total.step_gpu_idle.resize(g.step_gpu_idle.size(), 0);
    total.step_cpu.resize(g.step_cpu.size(), 0);
    for (size_t o = 0; o < g.step_cpu.size(); ++o) {
      total.step_gpu_busy[o] += g.step_gpu_busy[o];
      total.step_gpu_idle[o] += g.step_gpu_idle[o];
      total.step_cpu[o] += g.step_cpu[o];
    }
  }
  json total_json = GroupFigures(total, c, co2_total);
  if (series) total_json["steps"] = StepsJson(answer, total);
  json out = {{"from", answer.from_ns / kMs},
              {"to", answer.to_ns / kMs},
              {"coefficients",
               {{"pue", c.pue},
                {"carbon_intensity", c.carbon_intensity},
                {"price_per_kwh", c.price_per_kwh},
                {"cpu_watts_per_core", c.cpu_watts_per_core},
                {"idle_utilization_percent", kIdleUtilizationPercent}}},
              {"total", std::move(total_json)},
              {"groups", std::move(groups)}};
  return out.dump();
}

}  // namespace warpscope::query
