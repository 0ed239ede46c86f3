// RecordingScheduler: when the injection library records, apart from how
// (cupti_session.h) and from the socket (agent_link.h). Pure timing: the
// link thread asks what is due at `now`, does it, and reports back; the
// scheduler makes no CUPTI call and reads no clock, so its rules are tested
// on their own (recording_scheduler_test.cc).
//
// Windowed modes (adaptive; duty with CUPTI left between windows): a window
// opens (enter CUPTI, kernel activity on), closes after duty_on_ms (no
// launch is recorded after it), drains until the kernels launched in it
// have run and their records are in (at least 20 ms, at most 1 s; a GPU
// that runs behind the launches still executes them), then kernel activity
// goes off, a forced flush, and the session leaves CUPTI until the next
// window. Adaptive mode plans the next
// start from the window just closed (PlanWindowPeriodNs); a period no
// longer than the window means back-to-back windows without leaving. A
// window interrupted by a step-aside (another CUPTI client) ends there, and
// none opens until the client is done (Resume).
// Duty mode without leaving: kernel activity on for the first duty_on_ms of
// every duty_period_ms (DutyPhase).
//
// Threading: a plain value owned by the link thread.
#pragma once

#include <cstdint>

#include "cuda/link_config.h"

namespace warpscope::cuda {

class RecordingScheduler {
 public:
  enum class Step { kNone, kOpen, kClose, kFinishDrain };

  // The window open now, or the one draining or planned.
  struct Window {
    bool open = false;
    uint64_t start_ns = 0;
    uint64_t attach_ns = 0;       // entering CUPTI took this long
    uint64_t end_ns = 0;          // activity off
    uint64_t covers_until_ns = 0;  // the period this window stands for ends here
    uint64_t drain_until_ns = 0;  // != 0: closed, records still to flush
    uint64_t next_open_ns = 0;    // != 0: closed and drained, opens again at this time
  };

  // A new configuration; windowed modes open their first window at `now`.
  void Reset(const LinkConfig& config, uint64_t now);
  // What the link thread should do now (one step at a time).
  Step Due(uint64_t now) const;
  // When the next step falls due (UINT64_MAX: none planned).
  uint64_t NextDeadline() const;

  // The window opened at `start_ns` (entering took `attach_ns`).
  void Opened(uint64_t start_ns, uint64_t attach_ns);
  // Opening could not happen now (a leave still settling, or CUPTI taken by
  // a client we did not see coming): try again at `at_ns`.
  void RetryOpenAt(uint64_t at_ns);

  // Closing the open window at `now` after `launches` launches in it, with
  // `leave_ns` the last leave's cost. Continuous: the window is renewed in
  // place (start at now) and nothing is left.
  struct Close {
    bool continuous = false;
    uint64_t period_ns = 0;
  };
  Close CloseAt(uint64_t now, uint64_t launches, uint64_t leave_ns);
  // The window's kernels are not all in yet at `now`: the drain goes on
  // (the next kFinishDrain a step later), unless it has lasted its most;
  // false then.
  bool DrainMore(uint64_t now);
  // The drain is done: the window's record ends here; the next opens at
  // covers_until_ns.
  void Drained();
  // A step-aside ended the window (the link queued its record up to there);
  // no window opens until Resume.
  void Interrupted();
  bool interrupted() const { return interrupted_; }
  // The other client is done: the next window opens at `now`.
  void Resume(uint64_t now);

  // Duty mode without leaving: whether kernel activity is wanted at `now`,
  // and when that changes.
  struct DutyPhase {
    bool on = false;
    uint64_t next_change_ns = 0;
  };
  DutyPhase Duty(uint64_t now);

  const Window& window() const { return window_; }
  bool windowed() const { return config_.windowed && config_.mode != WS_CUDA_MODE_OFF; }

 private:
  LinkConfig config_;
  Window window_;
  bool interrupted_ = false;
  uint64_t duty_start_ns_ = 0;
};

}  // namespace warpscope::cuda
