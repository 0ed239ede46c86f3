#include "query/energy.h"

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

std::string LabelOf(const Labels& labels, const std::string& name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return "";
}

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

struct GpuKey {
  std::string node, gpu;
  auto operator<=>(const GpuKey&) const = default;
};

GpuKey KeyOf(const Labels& labels) { return {LabelOf(labels, "node"), LabelOf(labels, "gpu")}; }

std::map<GpuKey, const MetricSeries*> ByGpu(const std::vector<MetricSeries>& series) {
  std::map<GpuKey, const MetricSeries*> out;
  for (const MetricSeries& s : series) out[KeyOf(s.labels)] = &s;
  return out;
}

const MetricSeries* Find(const std::map<GpuKey, const MetricSeries*>& m, const GpuKey& key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : it->second;
}

void AddSource(EnergyGroup* g, const std::string& source) {
  if (std::find(g->gpu_sources.begin(), g->gpu_sources.end(), source) == g->gpu_sources.end()) {
    g->gpu_sources.push_back(source);
    std::sort(g->gpu_sources.begin(), g->gpu_sources.end());
  }
}

json GroupFigures(const EnergyGroup& g, const EnergyCoefficients& c) {
  const double kwh = g.total_joules() / kJoulesPerKwh;
  return {{"gpu_joules", g.gpu_joules},
          {"gpu_busy_joules", g.gpu_busy_joules},
          {"gpu_idle_joules", g.gpu_idle_joules},
          {"cpu_joules", g.cpu_joules},
          {"total_joules", g.total_joules()},
          {"kwh", kwh},
          {"co2_grams", kwh * c.pue * c.carbon_intensity},
          {"cost", kwh * c.price_per_kwh}};
}

}  // namespace

GpuStepEnergy GpuEnergyPerStep(const EnergyInputs& in, const MetricSeries* energy, const MetricSeries* power) {
  const size_t grid = GridSteps(in);
  const std::vector<double> watts = MeanPerStep(in, power);
  std::vector<double> joules(grid, 0);
  std::vector<bool> covered(grid, false);
  if (energy != nullptr) {
    // Each step's reading is its largest value (a counter's last), taken at
    // the step's end: grid boundary i + 1.
    struct Reading {
      size_t boundary;
      double joules;
    };
    std::vector<Reading> readings;
    for (const storage::MetricStep& p : energy->points) {
      const int64_t i = GridIndex(in, p.time_ns);
      if (i >= 0 && p.count > 0) readings.push_back({static_cast<size_t>(i) + 1, p.max});
    }
    for (size_t r = 1; r < readings.size(); ++r) {
      const size_t a = readings[r - 1].boundary;
      const size_t b = readings[r].boundary;
      const double delta = readings[r].joules - readings[r - 1].joules;
      if (b <= a || delta < 0) continue;  // a reset: a new segment starts at readings[r]
      // Spread by power where every step of the interval has a reading,
      // else evenly.
      bool by_power = true;
      double total_watts = 0;
      for (size_t i = a; i < b; ++i) {
        if (i >= grid || std::isnan(watts[i])) by_power = false;
        else total_watts += watts[i];
      }
      if (total_watts <= 0) by_power = false;
      const double denominator = by_power ? total_watts : static_cast<double>(b - a);
      for (size_t i = a; i < b && i < grid; ++i) {
        joules[i] += delta * (by_power ? watts[i] : 1.0) / denominator;
        covered[i] = true;
      }
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
    const int64_t length = std::min(in.step_ns, in.to_ns - start);
    if (covered[i]) {
      out.joules[k] = joules[i] * static_cast<double>(length) / static_cast<double>(in.step_ns);
      out.from_counter[k] = true;
    } else if (!std::isnan(watts[i])) {
      out.joules[k] = watts[i] * static_cast<double>(length) / kNsPerSecond;
      out.from_power[k] = true;
    }
  }
  return out;
}

EnergyAnswer ComputeEnergy(const EnergyInputs& in, EnergyGrouping grouping, const EnergyCoefficients& coefficients) {
  EnergyAnswer answer;
  answer.from_ns = in.from_ns;
  answer.to_ns = in.to_ns;
  answer.coefficients = coefficients;
  std::map<Labels, EnergyGroup> groups;
  auto group = [&](Labels labels) -> EnergyGroup& {
    EnergyGroup& g = groups[labels];
    g.labels = std::move(labels);
    return g;
  };

  const auto energy = ByGpu(in.gpu_energy);
  const auto power = ByGpu(in.gpu_power);
  const auto utilization = ByGpu(in.gpu_utilization);
  std::set<GpuKey> gpus;
  for (const auto& [key, s] : energy) gpus.insert(key);
  for (const auto& [key, s] : power) gpus.insert(key);
  const size_t n = RangeSteps(in);
  const size_t offset = RangeOffset(in);
  const size_t window = static_cast<size_t>(std::max<int64_t>(1, CeilDiv(in.share_window_ns, in.step_ns)));

  for (const GpuKey& key : gpus) {
    const GpuStepEnergy steps = GpuEnergyPerStep(in, Find(energy, key), Find(power, key));
    const std::vector<double> util = MeanPerStep(in, Find(utilization, key));
    std::vector<double> busy(n, 0);
    double busy_sum = 0, idle_sum = 0;
    bool counter = false, integrated = false;
    for (size_t k = 0; k < n; ++k) {
      const double u = offset + k < util.size() ? util[offset + k] : std::nan("");
      if (!std::isnan(u) && u < kIdleUtilizationPercent) {
        idle_sum += steps.joules[k];
      } else {
        busy[k] = steps.joules[k];
        busy_sum += steps.joules[k];
      }
      counter = counter || steps.from_counter[k];
      integrated = integrated || steps.from_power[k];
    }
    if (!counter && !integrated) continue;
    auto add_sources = [&](EnergyGroup* g) {
      if (counter) AddSource(g, kEnergyCounter);
      if (integrated) AddSource(g, kPowerIntegration);
    };
    const Labels gpu_labels = {{"gpu", key.gpu}, {"node", key.node}};
    if (grouping != EnergyGrouping::kProcess) {
      EnergyGroup& g = group(grouping == EnergyGrouping::kNode ? Labels{{"node", key.node}} : gpu_labels);
      g.gpu_joules += busy_sum + idle_sum;
      g.gpu_busy_joules += busy_sum;
      g.gpu_idle_joules += idle_sum;
      add_sources(&g);
      continue;
    }
    // Per process: each window's busy joules by the processes' SM shares.
    const size_t windows = (n + window - 1) / window;
    std::map<Labels, std::vector<double>> sm;  // process -> SM utilization summed per window
    for (const MetricSeries& s : in.process_sm) {
      if (KeyOf(s.labels) != key) continue;
      std::vector<double>& per_window = sm[Pick(s.labels, {"node", "pid", "comm"})];
      per_window.resize(windows, 0);
      for (const storage::MetricStep& p : s.points) {
        const int64_t i = GridIndex(in, p.time_ns);
        if (i < static_cast<int64_t>(offset) || i >= static_cast<int64_t>(offset + n)) continue;
        per_window[(static_cast<size_t>(i) - offset) / window] += std::max(0.0, p.sum);
      }
    }
    double unattributed = 0;
    for (size_t w = 0; w < windows; ++w) {
      double window_busy = 0;
      for (size_t k = w * window; k < std::min(n, (w + 1) * window); ++k) window_busy += busy[k];
      double total = 0;
      for (const auto& [process, per_window] : sm) total += per_window[w];
      if (total <= 0) {
        unattributed += window_busy;
        continue;
      }
      for (const auto& [process, per_window] : sm) {
        if (per_window[w] <= 0) continue;
        EnergyGroup& g = group(process);
        const double share = window_busy * per_window[w] / total;
        g.gpu_joules += share;
        g.gpu_busy_joules += share;
        g.gpu_apportioned = true;
        add_sources(&g);
      }
    }
    EnergyGroup& g = group(gpu_labels);
    g.gpu_joules += unattributed + idle_sum;
    g.gpu_busy_joules += unattributed;
    g.gpu_idle_joules += idle_sum;
    add_sources(&g);
  }

  // CPU: core-seconds from samples × watts per core.
  const double period = static_cast<double>(in.cpu_period_ns > 0 ? in.cpu_period_ns : 1);
  for (const storage::Series& s : in.cpu) {
    double core_seconds = 0;
    for (const storage::SeriesPoint& p : s.points) {
      if (p.time_ns >= in.from_ns && p.time_ns < in.to_ns) core_seconds += static_cast<double>(p.value) * period / kNsPerSecond;
    }
    if (core_seconds <= 0) continue;
    const Labels labels =
        grouping == EnergyGrouping::kProcess ? Pick(s.labels, {"node", "pid", "comm"}) : Pick(s.labels, {"node"});
    group(labels).cpu_joules += core_seconds * coefficients.cpu_watts_per_core;
  }

  for (auto& [labels, g] : groups) answer.groups.push_back(std::move(g));
  std::stable_sort(answer.groups.begin(), answer.groups.end(), [](const EnergyGroup& a, const EnergyGroup& b) {
    return a.total_joules() > b.total_joules();
  });
  return answer;
}

std::string RenderEnergyJson(const EnergyAnswer& answer) {
  constexpr int64_t kMs = 1'000'000;
  const EnergyCoefficients& c = answer.coefficients;
  EnergyGroup total;
  json groups = json::array();
  for (const EnergyGroup& g : answer.groups) {
    json j = GroupFigures(g, c);
    json labels = json::object();
    for (const auto& [k, v] : g.labels) labels[k] = v;
    j["labels"] = std::move(labels);
    std::string source;
    for (const std::string& s : g.gpu_sources) source += (source.empty() ? "" : "+") + s;
    j["gpu_source"] = source.empty() ? json(nullptr) : json(source);
    json measured = json::array();
    json estimated = json::array();
    if (!g.gpu_sources.empty()) (g.gpu_apportioned ? estimated : measured).push_back("gpu_joules");
    if (g.cpu_joules > 0) estimated.push_back("cpu_joules");
    estimated.push_back("co2_grams");
    estimated.push_back("cost");
    j["measured"] = std::move(measured);
    j["estimated"] = std::move(estimated);
    groups.push_back(std::move(j));
    total.gpu_joules += g.gpu_joules;
    total.gpu_busy_joules += g.gpu_busy_joules;
    total.gpu_idle_joules += g.gpu_idle_joules;
    total.cpu_joules += g.cpu_joules;
  }
  json out = {{"from", answer.from_ns / kMs},
              {"to", answer.to_ns / kMs},
              {"coefficients",
               {{"pue", c.pue},
                {"carbon_intensity", c.carbon_intensity},
                {"price_per_kwh", c.price_per_kwh},
                {"cpu_watts_per_core", c.cpu_watts_per_core},
                {"idle_utilization_percent", kIdleUtilizationPercent}}},
              {"total", GroupFigures(total, c)},
              {"groups", std::move(groups)}};
  return out.dump();
}

}  // namespace warpscope::query
