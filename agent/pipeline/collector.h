// Collector: one source of the agent's data (CPU samples, GPU metrics, GPU
// time), driven by the agent loop (agent_loop.h) through one lifecycle:
//
//   Start -> { BeginWindow -> Poll ... Poll -> FinishWindow } ... -> Stop
//
// Threading: every method is called on the sampling thread, the loop's. A
// collector that needs threads of its own (the NVML loop, the CUDA socket)
// starts them when it is created or in Start, joins them in Stop, and hands
// their data over through its own bounded queues (…FromAnyThread,
// Post…FromSocketThread).
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "agent/pipeline/window.h"
#include "base/status.h"

namespace warpscope {

class Collector {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~Collector() = default;

  // A short name for logs ("cpu", "gpu_metrics", "gpu_time").
  virtual std::string_view name() const = 0;
  // Begins producing data (attaches probes, enables sampling). Once, before
  // the first window; an error stops the agent before it profiles.
  virtual Status Start() = 0;
  // A window begins at `start_unix_nanos` (the previous one's end).
  virtual void BeginWindow(int64_t start_unix_nanos) {}
  // The work due before `until`. The loop calls every collector's Poll in
  // turn, over and over; a collector may wait in it for its own events, for
  // at most 100 ms, so the loop notices signals.
  virtual Status Poll(Clock::time_point until) = 0;
  // Adds what the window collected to `window` (its profile, trace, readings
  // and counters). On `window->final`, everything still held. An error ends
  // the loop; the collector must have stopped producing by then.
  virtual Status FinishWindow(Window* window) = 0;
  // Stops producing and joins the collector's threads. Once, after the last
  // window; the collector is destroyed afterwards.
  virtual void Stop() = 0;
};

}  // namespace warpscope
