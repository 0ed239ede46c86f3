// The agent's Prometheus endpoint (`--metrics-listen`) as text
// exposition format 0.0.4: GPU metrics under the names and labels of NVIDIA's
// dcgm-exporter, so dashboards built for it work unchanged, `warpscope_`
// names for what DCGM has no field for (per-process GPU use, GPU joules per
// process and idle, RAPL's CPU and DRAM joules), and the agent's own health.
//
// DCGM labels on every GPU series: gpu (index), UUID, pci_bus_id, device
// ("nvidia<index>"), modelName, Hostname. Units follow DCGM: MiB for frame
// buffer memory, W, MHz, °C, KB/s for PCIe, mJ for energy, ratios (0..1) for
// the profiling (GPM) fields. The `warpscope_` energy counters are in joules
// (`_joules_total`); RAPL's carry `zone` and Hostname only.
//
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/metric_reading.h"

namespace warpscope {

// The agent's memory, by cache: a collector reports cache X's bytes held now
// as the counter "cache_bytes_X", its budget as "cache_budget_bytes_X" and
// what it gave up to stay within it as "cache_evictions_X"; they are exported
// as these families with label cache="X" (and not as events).
struct AgentCacheFamily {
  const char* prefix;
  const char* metric;
  const char* type;
  const char* help;
};
inline constexpr AgentCacheFamily kAgentCacheFamilies[] = {
    {"cache_bytes_", "warpscope_agent_cache_bytes", "gauge",
     "Bytes of the agent's memory held by each of its caches and tables."},
    {"cache_budget_bytes_", "warpscope_agent_cache_budget_bytes", "gauge",
     "The most each cache may hold, in bytes (see docs/getting-started.md)."},
    {"cache_evictions_", "warpscope_agent_cache_evictions_total", "counter",
     "Entries each cache gave up to stay within its budget."},
};

struct AgentHealth {
  uint64_t samples = 0;        // CPU samples encoded into batches
  uint64_t batches = 0;        // batches handed to the uploader
  uint64_t batches_sent = 0;   // acknowledged by the server
  uint64_t batches_rejected = 0;
  uint64_t batches_dropped = 0;
  uint64_t send_failures = 0;
  uint64_t spool_dropped_batches = 0;
  uint64_t spooled = 0;        // waiting in the spool now
  // The agent's named counters (BPF map drops, unwinding, symbolization...),
  // as in the batches; exported as warpscope_agent_events_total{event=NAME}.
  std::vector<std::pair<std::string, uint64_t>> counters;
  uint64_t gpu_readings = 0;
  uint64_t gpu_errors = 0;
  std::vector<GpuMetricOff> gpu_disabled;
  std::string gpu_off_reason;  // non-empty when GPU metrics are off altogether
  uint64_t gpu_process_energy_series = 0;   // per-process GPU energy counters kept now
  uint64_t gpu_process_energy_dropped = 0;  // of processes gone (or past the bound), since start
  uint64_t cpu_energy_zones = 0;            // RAPL zones read now (0: no RAPL, or off)
  double cpu_seconds = 0;      // the agent process's user + system time
  uint64_t resident_bytes = 0;
};

// `latest`: the newest reading of every GPU series (per-process ones carry
// pid and comm), of the GPU energy counters and of RAPL's zones. `node` is
// the Hostname label.
std::string RenderPrometheusText(const std::vector<MetricReading>& latest, const AgentHealth& health,
                                 const std::string& node);

}  // namespace warpscope
