// GpuMetricsCollector: GPU metrics as a collector of the agent loop. NVML is
// read on the GpuMetricsLoop's own thread (calls can take milliseconds);
// each window takes the readings made since the previous one.
//
// Threading: the Collector methods run on the sampling thread; loop() is
// shared with the Prometheus endpoint's threads through its …FromAnyThread
// methods.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "agent/collectors/gpu_metrics/gpu_metrics_loop.h"
#include "agent/pipeline/collector.h"

namespace warpscope {

class GpuMetricsCollector : public Collector {
 public:
  // Starts the loop's thread, which opens the source. Waits up to
  // `open_wait` for the open, so that "no GPU metrics, and why" is said
  // before profiling starts; a source that cannot be opened is an ordinary
  // outcome (loop().StatsFromAnyThread().off_reason), not an error.
  GpuMetricsCollector(GpuMetricsLoop::SourceFactory open_source, std::chrono::milliseconds interval,
                      std::chrono::milliseconds open_wait);

  const GpuMetricsLoop& loop() const { return loop_; }

  std::string_view name() const override { return "gpu_metrics"; }
  Status Start() override { return Status::Ok(); }
  Status Poll(Clock::time_point until) override { return Status::Ok(); }
  Status FinishWindow(Window* window) override;
  void Stop() override { loop_.Stop(); }

 private:
  GpuMetricsLoop loop_;
};

}  // namespace warpscope
