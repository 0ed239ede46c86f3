// One reading of a gauge or counter the agent collects beside its profiles
// (GPU metrics from NVML, issue 7): what the upload batches carry as metric
// points and what the Prometheus endpoint shows. A plain value; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace warpscope {

struct MetricReading {
  std::string metric;  // "gpu_utilization", "gpu_process_memory_used", ...
  std::string unit;    // "percent", "bytes", "watts", "mhz", "celsius", ...
  // Sorted by key. Per-process readings carry "pid"; the encoder adds the
  // process's comm, exe and container labels from it.
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
  int64_t time_unix_nanos = 0;
};

}  // namespace warpscope
