#include "agent/collectors/gpu_metrics/gpu_process_energy.h"

#include <algorithm>
#include <cmath>

#include "agent/collectors/gpu_metrics/nvml/gpu_metric_names.h"

namespace warpscope {

GpuProcessEnergy::GpuProcessEnergy(GpuProcessEnergyOptions options) : options_(options) {}

void GpuProcessEnergy::Add(const std::vector<MetricReading>& readings, uint64_t collect, int64_t now_unix_nanos) {
  std::map<std::string, std::vector<Share>> fresh;  // by GPU: this collect's per-process readings
  std::map<std::string, double> utilization;         // by GPU
  std::vector<const MetricReading*> power;
  for (const MetricReading& r : readings) {
    const std::string* gpu = FindLabel(r, gpu_metric::kLabelGpu);
    if (gpu == nullptr || !std::isfinite(r.value)) continue;
    if (r.metric == gpu_metric::kProcessSmUtilization.name) {
      if (!ReadingPid(r)) continue;
      fresh[*gpu].push_back({r.labels, std::max(0.0, r.value)});
      // A counter from the first reading on, so that its first joules are an increase.
      processes_[r.labels].seen_nanos = now_unix_nanos;
    } else if (r.metric == gpu_metric::kUtilization.name) {
      utilization[*gpu] = r.value;
    } else if (r.metric == gpu_metric::kPower.name) {
      power.push_back(&r);
    }
  }
  for (auto& [gpu, shares] : fresh) {
    Gpu& g = gpus_[gpu];
    g.shares = std::move(shares);
    g.shares_collect = collect;
  }
  for (const MetricReading* r : power) {
    const std::string& id = *FindLabel(*r, gpu_metric::kLabelGpu);
    Gpu& g = gpus_[id];
    g.labels = r->labels;
    const int64_t t = r->time_unix_nanos;
    const int64_t previous = std::exchange(g.last_power_nanos, t);
    if (previous == 0 || t <= previous || t - previous > options_.max_gap_nanos || r->value < 0) continue;
    const double joules = r->value * static_cast<double>(t - previous) / 1e9;
    g.changed_nanos = t;
    if (auto u = utilization.find(id); u != utilization.end() && u->second < options_.idle_below_percent) {
      g.idle_joules += joules;
      continue;
    }
    double sum = 0;
    if (collect - g.shares_collect < options_.shares_valid_collects) {
      for (const Share& s : g.shares) sum += s.sm_percent;
    }
    if (sum <= 0) {
      g.unattributed_joules += joules;
      continue;
    }
    for (const Share& s : g.shares) {
      ProcessCounter& p = processes_[s.labels];
      p.joules += joules * (s.sm_percent / sum);
      p.changed_nanos = t;
      if (p.seen_nanos == 0) p.seen_nanos = now_unix_nanos;  // dropped by the bound and back
    }
  }
  Forget(now_unix_nanos);
}

void GpuProcessEnergy::Forget(int64_t now_unix_nanos) {
  for (auto it = processes_.begin(); it != processes_.end();) {
    if (now_unix_nanos - it->second.seen_nanos > options_.forget_after_nanos) {
      it = processes_.erase(it);
      ++dropped_;
    } else {
      ++it;
    }
  }
  if (processes_.size() <= options_.max_process_counters) return;
  std::vector<std::pair<int64_t, const Labels*>> by_age;
  by_age.reserve(processes_.size());
  for (const auto& [labels, p] : processes_) by_age.emplace_back(p.seen_nanos, &labels);
  const size_t excess = processes_.size() - options_.max_process_counters;
  std::nth_element(by_age.begin(), by_age.begin() + static_cast<std::ptrdiff_t>(excess - 1), by_age.end());
  std::vector<Labels> oldest;
  for (size_t i = 0; i < excess; ++i) oldest.push_back(*by_age[i].second);
  for (const Labels& labels : oldest) processes_.erase(labels);
  dropped_ += excess;
}

void GpuProcessEnergy::AppendReadings(std::vector<MetricReading>* out) const {
  for (const auto& [id, g] : gpus_) {
    if (g.labels.empty()) continue;  // per-process readings, but never a power reading
    out->push_back({gpu_energy_counter::kIdle, "joules", g.labels, g.idle_joules, g.changed_nanos});
    out->push_back({gpu_energy_counter::kUnattributed, "joules", g.labels, g.unattributed_joules, g.changed_nanos});
  }
  for (const auto& [labels, p] : processes_) {
    out->push_back({gpu_energy_counter::kProcess, "joules", labels, p.joules, p.changed_nanos});
  }
}

}  // namespace warpscope
