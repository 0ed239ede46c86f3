// GpuProcessEnergy: GPU joules per process for the Prometheus endpoint,
// counted from each collect's readings by the server's rule
// (docs/design/energy.md, "Busy and idle" and "Per process"):
//
//   joules = the GPU's gpu_power × the time since its previous power reading
//   - gpu_utilization < 1 %: all idle (gpu_idle_energy, per GPU);
//   - else to the GPU's processes, each by its share of the summed
//     gpu_process_sm_utilization of the GPU's latest per-process readings
//     (gpu_process_energy, per GPU and process);
//   - busy with no such readings, or all at 0 %: gpu_unattributed_energy.
//
// So per GPU, processes + idle + unattributed = the power integrated over
// the agent's life. Counters of a process that has had no per-process
// reading for `forget_after` go (the process left the GPU), and at most
// `max_process_counters` are kept, the least recently seen going first;
// both count in dropped_process_counters().
//
// Threading: the GPU metrics loop's; it calls Add on its thread and
// AppendReadings from any, both under its mutex. Not thread-safe itself.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/metric_reading.h"

namespace warpscope {

// Names of the counters' readings (joules), which the Prometheus endpoint
// exports as warpscope_gpu_{process,idle,unattributed}_energy_joules_total.
namespace gpu_energy_counter {
inline constexpr char kProcess[] = "gpu_process_energy";
inline constexpr char kIdle[] = "gpu_idle_energy";
inline constexpr char kUnattributed[] = "gpu_unattributed_energy";
}  // namespace gpu_energy_counter

struct GpuProcessEnergyOptions {
  double idle_below_percent = 1;
  // Per-process readings come every 5th collect (NvmlReader's
  // process_utilization_every); those older than this many collects are
  // not used (as the endpoint's own newest readings).
  uint64_t shares_valid_collects = 10;
  // A longer gap between two power readings of a GPU (the GPU was lost, the
  // loop stalled) is not counted: one reading says nothing about it.
  int64_t max_gap_nanos = 60'000'000'000;
  int64_t forget_after_nanos = 600'000'000'000;  // 10 min without a per-process reading
  size_t max_process_counters = 4096;
};

class GpuProcessEnergy {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;

  explicit GpuProcessEnergy(GpuProcessEnergyOptions options = {});

  // One collect's readings (collect numbers rise by one per collect), made
  // at now_unix_nanos; per-process ones carry pid (and comm).
  void Add(const std::vector<MetricReading>& readings, uint64_t collect, int64_t now_unix_nanos);

  // Every counter as a reading in joules, stamped with its last change:
  // gpu_process_energy with the process reading's labels (the GPU's, pid,
  // comm), gpu_idle_energy and gpu_unattributed_energy with the GPU's.
  void AppendReadings(std::vector<MetricReading>* out) const;

  size_t process_counters() const { return processes_.size(); }
  uint64_t dropped_process_counters() const { return dropped_; }

 private:
  struct Share {
    Labels labels;  // the per-process reading's
    double sm_percent = 0;
  };
  struct Gpu {
    Labels labels;  // the gpu_power reading's
    int64_t last_power_nanos = 0;  // 0: no reading yet
    double idle_joules = 0;
    double unattributed_joules = 0;
    bool has_idle = false, has_unattributed = false;
    int64_t changed_nanos = 0;
    uint64_t shares_collect = 0;  // the collect the shares came in
    std::vector<Share> shares;
  };
  struct ProcessCounter {
    double joules = 0;
    int64_t changed_nanos = 0;
    int64_t seen_nanos = 0;  // last per-process reading
  };

  void Forget(int64_t now_unix_nanos);

  const GpuProcessEnergyOptions options_;
  std::map<std::string, Gpu> gpus_;  // by the "gpu" label
  std::map<Labels, ProcessCounter> processes_;
  uint64_t dropped_ = 0;
};

}  // namespace warpscope
