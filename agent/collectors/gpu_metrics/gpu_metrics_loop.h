// GpuMetricsLoop: reads GPU metrics on its own thread every interval (1 s by
// default) and hands them to the two places that use them: the upload
// batches (every reading, taken once per window) and the Prometheus endpoint
// (the newest reading of each series, and the GPU energy counters per
// process that GpuProcessEnergy counts from every collect). NVML calls can
// take milliseconds, so they never run on the sampling thread.
//
// Threading: constructed, started and stopped by the owning (main) thread;
// Collect runs only on the loop's thread; the ...FromAnyThread methods may be
// called from any thread (the sampling thread, HTTP workers).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/collectors/gpu_metrics/gpu_process_energy.h"
#include "agent/process/proc_fs.h"
#include "model/metric_reading.h"
#include "base/status.h"

namespace warpscope {

// Where readings come from (NVML in the agent, a script in tests). Created,
// used and destroyed on the loop's thread only: NVML handles belong to the
// thread that opened them.
class GpuMetricsSource {
 public:
  virtual ~GpuMetricsSource() = default;
  // That moment's readings into `readings` (replaced); per-process ones
  // labelled with "pid".
  virtual void CollectInto(int64_t now_unix_nanos, std::vector<MetricReading>* readings) = 0;
  virtual std::vector<GpuMetricOff> DisabledMetrics() const = 0;
  virtual uint64_t ErrorCount() const = 0;
};

// The NVML source (agent/collectors/gpu_metrics/nvml/), for the agent.
StatusOr<std::unique_ptr<GpuMetricsSource>> OpenNvmlMetricsSource(const std::string& library_path);

struct GpuMetricsLoopStats {
  std::string off_reason;  // non-empty when the source could not be opened
  uint64_t collects = 0;
  uint64_t readings = 0;
  uint64_t dropped_readings = 0;  // pending readings dropped (oldest first) because nobody took them
  uint64_t errors = 0;            // the source's transient errors
  std::vector<GpuMetricOff> disabled;
  int64_t collect_cpu_nanos = 0;  // CPU time of the loop thread
  uint64_t process_energy_series = 0;   // per-process GPU energy counters kept now
  uint64_t process_energy_dropped = 0;  // per-process GPU energy counters dropped since start
};

class GpuMetricsLoop {
 public:
  // Called once on the loop thread; an error turns GPU metrics off (logged
  // once, in StatsFromAnyThread().off_reason) and ends the thread.
  using SourceFactory = std::function<StatusOr<std::unique_ptr<GpuMetricsSource>>()>;

  GpuMetricsLoop(SourceFactory open_source, std::chrono::milliseconds interval, ProcFs procfs,
                 size_t max_pending_readings = 200'000, GpuProcessEnergyOptions energy = {});
  ~GpuMetricsLoop();  // Stop()s
  GpuMetricsLoop(const GpuMetricsLoop&) = delete;
  GpuMetricsLoop& operator=(const GpuMetricsLoop&) = delete;

  void Start();
  void Stop();

  // True once the source was opened or failed to open.
  bool WaitUntilOpenFromAnyThread(std::chrono::milliseconds timeout) const;
  // Every reading since the previous call, oldest first.
  std::vector<MetricReading> TakePendingFromAnyThread();
  // The newest reading of each series, plus per GPU the last XID code
  // ("gpu_xid_last") and XID counts since start ("gpu_xid_errors"), and the
  // energy counters (gpu_process_energy, gpu_idle_energy,
  // gpu_unattributed_energy: gpu_process_energy.h).
  std::vector<MetricReading> LatestFromAnyThread() const;
  GpuMetricsLoopStats StatsFromAnyThread() const;

 private:
  void RunLoop();
  // Adds "comm" to per-process readings (read once per pid while it lives).
  void LabelProcesses(std::vector<MetricReading>* readings);

  const SourceFactory open_source_;
  const std::chrono::milliseconds interval_;
  const ProcFs procfs_;
  const size_t max_pending_;
  std::map<uint32_t, std::string> comm_of_pid_;  // loop thread only

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool stop_ = false;
  bool opened_ = false;  // guarded by mu_
  std::deque<MetricReading> pending_;   // guarded by mu_
  // The newest reading of each (metric, labels) and the collect it came in:
  // some metrics are read only every few intervals (per-process
  // utilization), so a series stays until it is 10 collects old.
  std::map<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>,
           std::pair<uint64_t, MetricReading>>
      latest_;  // guarded by mu_
  std::map<std::vector<std::pair<std::string, std::string>>, MetricReading> xid_totals_, xid_last_;  // guarded by mu_
  GpuProcessEnergy process_energy_;     // guarded by mu_
  GpuMetricsLoopStats stats_;           // guarded by mu_
  std::thread thread_;
};

}  // namespace warpscope
