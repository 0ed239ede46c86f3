// One reading of a gauge or counter the agent collects beside its profiles
// (GPU metrics from NVML, docs/design/gpu_metrics.md): what the upload batches carry as metric
// points and what the Prometheus endpoint shows. A plain value; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace warpscope {

struct MetricReading {
  std::string metric;  // "gpu_utilization", "gpu_process_memory_used", ...
  std::string unit;    // "percent", "bytes", "watts", "mhz", "celsius", ...
  // Sorted by key. Per-process readings carry "pid" (and "comm", added by
  // the agent's GPU metrics loop); the encoder adds the process's exe and
  // container labels from it.
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
  int64_t time_unix_nanos = 0;
};

// A GPU metric the collector turned off for one device, and why.
struct GpuMetricOff {
  std::string gpu;
  std::string metric;
  std::string reason;
};

// The value of label `key`, or null.
inline const std::string* FindLabel(const MetricReading& r, const std::string& key) {
  for (const auto& [k, v] : r.labels) {
    if (k == key) return &v;
  }
  return nullptr;
}

// The process of a per-process reading: its "pid" label when that is a
// decimal number that fits, else nullopt.
inline std::optional<uint32_t> ReadingPid(const MetricReading& r) {
  const std::string* text = FindLabel(r, "pid");
  if (text == nullptr || text->empty() || text->size() > 10) return std::nullopt;
  uint64_t pid = 0;
  for (char c : *text) {
    if (c < '0' || c > '9') return std::nullopt;
    pid = pid * 10 + static_cast<uint64_t>(c - '0');
  }
  if (pid > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(pid);
}

}  // namespace warpscope
