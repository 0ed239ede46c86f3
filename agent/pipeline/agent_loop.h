// AgentLoop: the one loop `record` and `run` share. It starts the
// collectors, then cuts time into windows that follow each other without
// gaps on the Unix clock: in each, it polls every collector until the
// window's end, has each finish the window in registration order, stamps
// its length and hands it to the sink. A stop (a signal, the targets gone,
// the only window of `record` over, an error) makes the window in progress
// the final one.
//
// Threading: constructed and run on the sampling (main) thread; the
// collectors' own threads are theirs to manage (collector.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "agent/pipeline/collector.h"
#include "agent/pipeline/window_sink.h"
#include "base/status.h"

namespace warpscope {

// Why the loop stopped.
enum class StopCause {
  kWindowsDone,     // the only window was over (AgentLoopOptions::single_window)
  kSignal,          // SIGINT or SIGTERM (StopCheck's verdict carries which)
  kTargetsExited,   // every --pid process exited
  kError,           // a collector failed (AgentLoopResult::error)
};

struct StopVerdict {
  StopCause cause = StopCause::kSignal;
  int signal = 0;  // kSignal: which
};

struct AgentLoopOptions {
  std::chrono::nanoseconds window_length = std::chrono::seconds(10);
  // `record`: the first window is the only one, and its end stops the loop.
  bool single_window = false;
  // Asked between polls: a verdict stops the loop (signals, targets gone).
  std::function<std::optional<StopVerdict>()> stop_check;
};

struct AgentLoopResult {
  StopVerdict stop;
  Status error;            // the first collector error (stop.cause == kError)
  uint64_t windows = 0;    // windows handed to the sink
  std::chrono::steady_clock::duration elapsed{};  // from the start of the first window
};

class AgentLoop {
 public:
  using Clock = std::chrono::steady_clock;

  // Collectors start, poll and finish windows in this order and stop in the
  // reverse one. `sink` must outlive the loop.
  AgentLoop(AgentLoopOptions options, std::vector<std::unique_ptr<Collector>> collectors, WindowSink* sink);
  ~AgentLoop();  // Stop()s
  AgentLoop(const AgentLoop&) = delete;
  AgentLoop& operator=(const AgentLoop&) = delete;

  // Starts every collector; on an error, stops the ones already started.
  Status Start();
  // Windows until a stop; the last window reaches the sink too.
  AgentLoopResult Run();
  // Stops every started collector, last first. Idempotent.
  void Stop();

 private:
  const AgentLoopOptions options_;
  std::vector<std::unique_ptr<Collector>> collectors_;
  WindowSink* const sink_;
  size_t started_ = 0;  // collectors_[0, started_) are started
};

}  // namespace warpscope
