// Energy, CO₂ and cost over a range (GET /api/v1/energy, docs/api.md
// "Energy"; methodology in docs/design/energy.md).
//
// A pure function of series the server reads from the store, all over one
// grid of steps [t, t + step_ns):
//  * GPU joules per GPU (node, gpu), measured: NVML's gpu_energy counter
//    (joules since the driver loaded, read every few seconds) gives the
//    energy between two readings; that energy is spread over the steps
//    between them in proportion to the GPU's power draw (gpu_power, every
//    second), or evenly where power is missing. A decrease of the counter
//    (driver reload, GPU reset) ends a segment: the interval across it is
//    not counted from the counter. Steps no counter interval covers are
//    integrated from gpu_power (watts × seconds) instead, and the answer says
//    which source it used.
//  * Busy and idle: a step is idle when the GPU's gpu_utilization (NVML: the
//    share of the sample period in which any kernel ran) averages below 1 %,
//    busy otherwise or when no utilization was read; a step's joules are all
//    busy or all idle. Idle power is what a GPU held without work costs.
//  * Per process, estimated: each window of share_window_ns, a GPU's busy
//    joules go to its processes in proportion to their gpu_process_sm_utilization
//    over the window; idle joules, and busy joules of windows without
//    per-process readings, stay with the GPU.
//  * CPU joules, estimated: core-seconds from the cpu profile's samples ×
//    watts per core.
//  * CO₂ = kWh × PUE × carbon intensity; cost = kWh × price per kWh.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/profile_store.h"

namespace warpscope::query {

// The coefficients an answer used; the defaults are documented in
// docs/design/energy.md, and each is a query parameter of the API.
struct EnergyCoefficients {
  // Facility overhead: total data-centre energy over IT energy.
  double pue = 1.2;
  // Grid carbon intensity, grams CO₂e per kWh.
  double carbon_intensity = 379;
  // Price of one kWh (currency as the caller means it).
  double price_per_kwh = 0.15;
  // Watts one fully busy CPU core draws (x86).
  double cpu_watts_per_core = 7;
};

enum class EnergyGrouping {
  kNode,     // {node}: its GPUs and its CPU
  kGpu,      // {node, gpu}: a GPU; CPU joules in a {node} group per node
  kProcess,  // {node, pid, comm}: apportioned GPU busy joules and CPU; the
             // GPUs' idle and unattributed joules in {node, gpu} groups
};

// Every metric series spans [read_from_ns, read_to_ns) on steps
// read_from_ns + k * step_ns; [from_ns, to_ns) lies within it and starts on
// a step (the padding lets the counter's readings around the range's edges
// bound the intervals that cross them).
struct EnergyInputs {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  int64_t read_from_ns = 0;
  int64_t read_to_ns = 0;
  int64_t step_ns = 0;
  // Grouped by node, gpu.
  std::vector<storage::MetricSeries> gpu_energy;       // joules, a counter
  std::vector<storage::MetricSeries> gpu_power;        // watts
  std::vector<storage::MetricSeries> gpu_utilization;  // percent
  // Grouped by node, pid, comm, gpu (percent of the GPU's SMs).
  std::vector<storage::MetricSeries> process_sm;
  // Per-process shares are taken over windows of this length (rounded up
  // to whole steps); NVML's per-process utilization comes every 5 s.
  int64_t share_window_ns = 10'000'000'000;
  // CPU samples over [from_ns, to_ns) grouped by node, pid, comm (any step),
  // and the period of one sample (1: the series are nanoseconds).
  std::vector<storage::Series> cpu;
  int64_t cpu_period_ns = 0;
};

// How a GPU's joules were obtained.
inline constexpr char kEnergyCounter[] = "energy_counter";
inline constexpr char kPowerIntegration[] = "power_integration";

struct EnergyGroup {
  storage::Labels labels;
  double gpu_joules = 0;
  double gpu_busy_joules = 0;
  double gpu_idle_joules = 0;
  double cpu_joules = 0;
  // Which GPU sources contributed (energy_counter, power_integration).
  std::vector<std::string> gpu_sources;
  // The GPU joules are a share estimated from per-process SM utilization.
  bool gpu_apportioned = false;
  double total_joules() const { return gpu_joules + cpu_joules; }
};

struct EnergyAnswer {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  EnergyCoefficients coefficients;
  std::vector<EnergyGroup> groups;  // sorted by total joules, largest first
};

// One GPU's joules over [from_ns, to_ns) per step of the range (index k:
// the step from_ns + k * step_ns), and where each came from.
struct GpuStepEnergy {
  std::vector<double> joules;
  std::vector<bool> from_counter;
  std::vector<bool> from_power;
};
GpuStepEnergy GpuEnergyPerStep(const EnergyInputs& in, const storage::MetricSeries* energy,
                               const storage::MetricSeries* power);

EnergyAnswer ComputeEnergy(const EnergyInputs& in, EnergyGrouping grouping, const EnergyCoefficients& coefficients);

// The API's JSON answer (docs/api.md, "Energy").
std::string RenderEnergyJson(const EnergyAnswer& answer);

}  // namespace warpscope::query
