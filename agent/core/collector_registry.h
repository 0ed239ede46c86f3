// The collectors of `warpscope-agent run`, one entry each: a name and how it
// is made from the run's flags. The agent loop starts, polls and finishes
// windows in this order. Adding a data source is a folder under
// agent/collectors/ with a Collector (agent/pipeline/collector.h) and one
// entry here (CONTRIBUTING.md, "Adding a collector").
#pragma once

#include <memory>
#include <span>

#include "agent/collectors/cpu/cpu_collector.h"
#include "agent/collectors/cpu_energy/cpu_energy_collector.h"
#include "agent/collectors/gpu_metrics/gpu_metrics_loop.h"
#include "agent/core/cli.h"
#include "agent/pipeline/collector.h"

namespace warpscope {

// What the entries made so far leave for the later ones and for `run`'s wiring.
struct CollectorWiring {
  CpuCollector* cpu = nullptr;                  // the first entry's: GPU time unwinds with its maps
  const GpuMetricsLoop* gpu_metrics = nullptr;  // for the Prometheus endpoint; null when off
  const CpuEnergyCollector* cpu_energy = nullptr;  // for the Prometheus endpoint; null when off
};

struct CollectorEntry {
  const char* name;
  // A null collector: off (by a flag, or unavailable, which the entry says
  // on stderr). An error stops the agent before it profiles.
  StatusOr<std::unique_ptr<Collector>> (*make)(const RunOptions& options, CollectorWiring* wiring);
};

std::span<const CollectorEntry> RunCollectors();

}  // namespace warpscope
