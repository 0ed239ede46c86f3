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
//    joules go to its processes in proportion to their GPU time on it (the
//    injection library's kernels) where any process reported kernels then,
//    else to their gpu_process_sm_utilization; idle joules, and busy joules
//    of windows without either, stay with the GPU.
//  * CPU joules: RAPL counters (cpu_energy, dram_energy) where a node has
//    them, measured, split over processes by their CPU samples; else
//    thread-seconds × watts per busy thread (the query's, the node's, its
//    CPU family's or the default).
//  * CO₂ = kWh × PUE × carbon intensity of each group's node (the query's,
//    its region's or the defaults); cost = kWh × price per kWh.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "query/carbon_regions.h"
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
  // PUE and carbon intensity given by the query: they win over a node's
  // region (RegionTable); otherwise a node in a known region gets its
  // region's intensity and its provider's PUE, other nodes the values above.
  bool pue_given = false;
  bool carbon_intensity_given = false;
  // cpu_watts_per_core given by the query: it wins over a node's own
  // (its agent's --cpu-watts-per-core) and its CPU family's
  // (query/cpu_coefficients.h); otherwise nodes of neither get the value above.
  bool cpu_watts_given = false;
};

enum class EnergyGrouping {
  kNode,     // {node}: its GPUs and its CPU
  kGpu,      // {node, gpu}: a GPU; CPU joules in a {node} group per node
  kProcess,  // {node, pid, comm}: apportioned GPU busy joules and CPU; the
             // GPUs' idle and unattributed joules in {node, gpu} groups
  kPod,      // {namespace, pod, node}: as kProcess, the processes of a pod
             // summed (processes outside any pod under namespace "" and pod "")
};

// A GPU as NVML names it: the node and NVML's index.
struct GpuId {
  std::string node, gpu;
  auto operator<=>(const GpuId&) const = default;
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
  // Grouped by node, gpu. The counters (gpu_energy, cpu_energy,
  // dram_energy) on steps of energy_step_ns from read_from_ns (finer than
  // step_ns, so a reading's time is known closely; 0: step_ns).
  int64_t energy_step_ns = 0;
  std::vector<storage::MetricSeries> gpu_energy;       // joules, a counter
  std::vector<storage::MetricSeries> gpu_power;        // watts
  std::vector<storage::MetricSeries> gpu_utilization;  // percent
  // Grouped by node, pid, comm, gpu, namespace, pod (percent of the GPU's
  // SMs): the per-process shares where the injection library is absent, and
  // which GPUs a process used.
  std::vector<storage::MetricSeries> process_sm;
  // Grouped as process_sm (bytes): only which GPUs a process used.
  std::vector<storage::MetricSeries> process_memory;
  // GPU time per range step (points at from_ns + k * step_ns, nanoseconds)
  // grouped by node, pid, comm, device, namespace, pod: the injection
  // library's kernels, which split a GPU's busy joules where present.
  std::vector<storage::Series> gpu_time;
  // Per-process shares are taken over windows of this length (rounded up
  // to whole steps); NVML's per-process utilization comes every 5 s.
  int64_t share_window_ns = 10'000'000'000;
  // RAPL counters (joules) grouped by node, zone: the CPU packages and
  // their DRAM, where the node exposes them.
  std::vector<storage::MetricSeries> cpu_energy;
  std::vector<storage::MetricSeries> dram_energy;
  // CPU samples over [from_ns, to_ns) grouped by node, pid, comm, namespace,
  // pod, and the period of one sample (1: the series are nanoseconds). The
  // points' times fall in the steps of the answer's series (one point per
  // output step, or one for the range).
  std::vector<storage::Series> cpu;
  int64_t cpu_period_ns = 0;
  // Each node's sampled core-seconds over the range, every process counted
  // whatever the selector: the measured (RAPL) joules of a node are split
  // over its processes by their share of these.
  std::vector<storage::Series> node_cpu;
  int64_t node_cpu_period_ns = 0;
  // Set when the selector picks processes: (node, pid) of those picked.
  // Process and pod groups then hold only them (the others still take
  // their shares of each GPU), and the GPUs' own groups are left out.
  std::optional<std::set<std::pair<std::string, std::string>>> selected_processes;
  // Each node's CPU as its agent reports it (`cpu_info`: cpu_model) and the
  // watts per busy thread its agent was told (`cpu_watts_per_core`), where
  // known: the coefficient of nodes without RAPL.
  std::map<std::string, std::string> node_cpu_model;
  std::map<std::string, double> node_cpu_watts;
  // Each node's `region` label (its agent's --label region=...), where set.
  std::map<std::string, std::string> node_region;
  // The answer's series step (a multiple of step_ns), 0 for none.
  int64_t series_step_ns = 0;
};

// How a GPU's joules were obtained.
inline constexpr char kEnergyCounter[] = "energy_counter";
inline constexpr char kPowerIntegration[] = "power_integration";
// How CPU joules were obtained.
inline constexpr char kCpuRapl[] = "rapl";
inline constexpr char kCpuCoefficient[] = "coefficient";

struct EnergyGroup {
  storage::Labels labels;
  double gpu_joules = 0;
  double gpu_busy_joules = 0;
  double gpu_idle_joules = 0;
  double cpu_joules = 0;
  double dram_joules = 0;
  // Which GPU sources contributed (energy_counter, power_integration).
  std::vector<std::string> gpu_sources;
  // Which CPU sources contributed (rapl, coefficient).
  std::vector<std::string> cpu_sources;
  // The GPU joules are a share: by GPU time (the injection library's
  // kernels) and/or by per-process SM utilization.
  bool gpu_apportioned = false;
  bool gpu_by_gpu_time = false;
  bool gpu_by_sm_utilization = false;
  // The CPU joules are a node's measured joules split by CPU samples.
  bool cpu_apportioned = false;
  // Per series step (EnergyInputs::series_step_ns): GPU busy, GPU idle and
  // CPU (+ DRAM) joules; empty without a series step.
  std::vector<double> step_gpu_busy, step_gpu_idle, step_cpu;
  // The CO₂ coefficients of the group's node: its region (or "") and the
  // PUE and intensity that apply to it.
  std::string region;
  // Watts per busy CPU thread where the CPU joules came from the
  // coefficient, and the CPU family it came from ("" for none).
  double cpu_watts_per_core = 0;
  std::string cpu_family;
  double pue = 0;
  double carbon_intensity = 0;
  double total_joules() const { return gpu_joules + cpu_joules + dram_joules; }
};

struct EnergyAnswer {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  int64_t series_step_ns = 0;
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

// Each GPU's busy and idle joules per step of the range.
struct GpuJoules {
  std::vector<double> busy, idle;
  bool from_counter = false, from_power = false;
};
std::map<GpuId, GpuJoules> GpuJoulesPerStep(const EnergyInputs& in);

// Which GPU a process's CUDA device ordinal is, from the GPUs NVML lists the
// process on (process_sm, process_memory): the only one; else the
// ordinal-th of them by index (CUDA orders visible devices by PCI bus, as
// NVML indexes them, unless CUDA_VISIBLE_DEVICES reorders them); else, on a
// node NVML says nothing of the process, the node's GPU with the ordinal's
// index, or its only GPU.
class DeviceMap {
 public:
  explicit DeviceMap(const EnergyInputs& in);
  std::optional<GpuId> Gpu(const std::string& node, const std::string& pid, const std::string& device) const;

 private:
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> process_gpus_;
  std::map<std::string, std::vector<std::string>> node_gpus_;
};

EnergyAnswer ComputeEnergy(const EnergyInputs& in, EnergyGrouping grouping, const EnergyCoefficients& coefficients,
                           const RegionTable& regions = RegionTable());

// The API's JSON answer (docs/api.md, "Energy").
std::string RenderEnergyJson(const EnergyAnswer& answer);

// Microjoules per nanosecond of GPU time, per GPU and share window: a GPU's
// busy joules in a window over the GPU time every process's kernels took on
// it then (in.gpu_time, all processes). The `gpu_energy` weighting of the
// GPU-time profile multiplies each kernel's nanoseconds by its GPU's factor
// at that time.
class EnergyWeights {
 public:
  explicit EnergyWeights(const EnergyInputs& in);
  // 0 where the GPU used no busy joules or took no GPU time then.
  double MicrojoulesPerNs(const std::string& node, const std::string& pid, const std::string& device,
                          int64_t time_ns) const;

 private:
  int64_t from_ns_ = 0, window_ns_ = 1;
  DeviceMap devices_;
  std::map<GpuId, std::vector<double>> factors_;  // per window
};

}  // namespace warpscope::query
