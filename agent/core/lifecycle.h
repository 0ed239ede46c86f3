// How a recording or a continuous run ends: SIGINT/SIGTERM, or the exit of
// every --pid target. Shared by `record` and `run`; both objects belong to the
// main (sampling) thread.
#pragma once

#include <signal.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "agent/pipeline/agent_loop.h"
#include "base/status.h"

namespace warpscope {

// The target processes of --pid, watched through pidfds so that profiling ends
// when the last one exits (like `perf record -p`).
class TargetWatch {
 public:
  TargetWatch() = default;
  ~TargetWatch();
  TargetWatch(const TargetWatch&) = delete;
  TargetWatch& operator=(const TargetWatch&) = delete;

  // NotFound when the pid does not exist.
  Status Add(uint32_t pid);
  bool empty() const { return fds_.empty(); }
  // True once every watched process has exited (false when none is watched).
  bool AllExited() const;

 private:
  std::vector<int> fds_;
};

// SIGINT/SIGTERM end profiling gracefully; they are read through a signalfd so
// no handler or global flag is needed. The signals are blocked in the
// constructing thread, and threads started afterwards inherit the mask: build
// this before starting any thread (the uploader), or a SIGTERM delivered to
// that thread would kill the process before the last window is saved.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // True if a stop signal arrived since the last call (non-blocking).
  bool Received();
  // The signal that arrived, for logs (0 before any).
  int last_signal() const { return last_signal_; }

 private:
  sigset_t mask_{};
  sigset_t old_{};
  int fd_ = -1;
  int last_signal_ = 0;
};

// The agent loop's stop check (AgentLoopOptions::stop_check) over both: a
// signal, then every target gone. Both must outlive the check.
std::function<std::optional<StopVerdict>()> StopCheckOf(StopSignals* signals, const TargetWatch* targets);

// Prints "warpscope-agent: <message>" to stderr and returns exit_code (cli.h).
int ReportFailure(int exit_code, const Status& status);

// The exit code for a failure to start profiling: kExitPermission for missing
// privileges, otherwise `otherwise`.
int ExitCodeForStartFailure(const Status& status, int otherwise);

}  // namespace warpscope
