#include "agent/collectors/gpu_metrics/gpu_metrics_collector.h"

#include <utility>

namespace warpscope {

GpuMetricsCollector::GpuMetricsCollector(GpuMetricsLoop::SourceFactory open_source,
                                         std::chrono::milliseconds interval, std::chrono::milliseconds open_wait)
    : loop_(std::move(open_source), interval, ProcFs()) {
  loop_.Start();
  (void)loop_.WaitUntilOpenFromAnyThread(open_wait);
}

Status GpuMetricsCollector::FinishWindow(Window* window) {
  std::vector<MetricReading> readings = loop_.TakePendingFromAnyThread();
  window->metrics.insert(window->metrics.end(), std::make_move_iterator(readings.begin()),
                         std::make_move_iterator(readings.end()));
  const GpuMetricsLoopStats s = loop_.StatsFromAnyThread();
  SetCounter(&window->counters, "gpu_metric_readings", s.readings);
  SetCounter(&window->counters, "gpu_metric_errors", s.errors);
  SetCounter(&window->counters, "gpu_metric_dropped_readings", s.dropped_readings);
  return Status::Ok();
}

}  // namespace warpscope
