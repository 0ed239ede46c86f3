// InjectionState: the injection library's one state object (the exception
// CONTRIBUTING.md's "State and threads" rule allows: CUPTI's C callbacks
// carry no context we control). Created by InitializeInjection and never
// destroyed, so that a CUPTI callback or the detached link thread never sees
// it torn down at exit.
//
// Ownership and threads:
//   - `cupti` is written once by the link thread before any subscription and
//     read-only afterwards;
//   - the atomics are the only state application threads touch (launch and
//     wait callbacks), plus `launch_queue` and `wait_queue` through try_lock
//     and `launch_times` (lock-free);
//   - `pool` and `outbox` lock internally (CUPTI buffer callbacks, link thread);
//   - `session` holds CUPTI (cupti_session.h says who calls what);
//   - `pc_disable_state` hands the disabling of PC sampling to an
//     application thread when the session leaves.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "cuda/activity_buffer_pool.h"
#include "cuda/activity_converter.h"
#include "cuda/cupti_library.h"
#include "cuda/cupti_session.h"
#include "cuda/launch_sampler.h"
#include "cuda/launch_times.h"
#include "cuda/pc_sampling.h"
#include "cuda/wire_outbox.h"

namespace warpscope::cuda {

struct InjectionState {
  std::string socket_path;
  CuptiLibrary cupti;
  ActivityBufferPool pool;
  WireOutbox outbox;
  LaunchSampleQueue launch_queue{16384};
  // Every wait in a synchronisation call made while the callbacks are on.
  WaitQueue wait_queue{16384};
  // Every launch made while kernel activity is on: its time and thread.
  LaunchTimeTable launch_times;
  ConversionCounters conversion;
  // PC sampling and cubins (pc_sampling.h says which thread does what).
  PcSampling pc;

  // Completed buffers are converted only while a connection wants them.
  std::atomic<bool> records_wanted{false};
  // Launch callbacks do their work only while true (set after subscribing,
  // cleared before unsubscribing).
  std::atomic<bool> callbacks_live{false};
  // CONCURRENT_KERNEL activity is enabled (duty mode toggles it).
  std::atomic<bool> kernel_activity_on{false};
  std::atomic<uint32_t> samples_per_sec{200};
  std::atomic<uint32_t> sample_burst{200};
  // Bumped on every (re)configuration: thread-local launch state resets.
  std::atomic<uint32_t> epoch{1};

  alignas(64) std::atomic<uint64_t> launches_seen{0};
  alignas(64) std::atomic<uint64_t> launches_seen_activity_on{0};
  alignas(64) std::atomic<uint64_t> launches_seen_activity_off{0};
  alignas(64) std::atomic<uint64_t> launches_sampled{0};
  std::atomic<uint64_t> launch_records_dropped{0};
  alignas(64) std::atomic<uint64_t> waits_seen{0};
  std::atomic<uint64_t> waits_sampled{0};
  std::atomic<uint64_t> wait_records_dropped{0};
  std::atomic<uint64_t> cupti_dropped_records{0};
  std::atomic<uint64_t> activity_on_ns{0};  // link thread adds closed intervals
  std::atomic<uint64_t> kernel_on_since{0};  // MonotonicNs when turned on; 0 while off

  // Leaving CUPTI with PC sampling on: the link thread asks
  // (kPcDisableRequested) with the launch callbacks still enabled; the first
  // launch to exit claims it (kPcDisabling), disables PC sampling on every
  // context and sets kPcDisabled; the link thread then unsubscribes
  // (CuptiSession::Settle), or takes an unclaimed request back.
  enum PcDisableState : int { kPcDisableNone = 0, kPcDisableRequested = 1, kPcDisabling = 2, kPcDisabled = 3 };
  std::atomic<int> pc_disable_state{kPcDisableNone};
  // Launches of CUDA graphs seen (cudaGraphLaunch, cuGraphLaunch).
  alignas(64) std::atomic<uint64_t> graph_launches_seen{0};
  // Bumped each time the session enters CUPTI: the probe's keys and the
  // launch-time table are per entry.
  std::atomic<uint32_t> attach_epoch{1};
  // Windowed modes: the first correlation id launched in the open window (0:
  // none yet, or no window filter); kernel records with smaller ids were
  // launched before the window and are left out (counted).
  std::atomic<bool> window_filter{false};
  std::atomic<uint32_t> window_first_correlation{0};
  // The largest correlation id launched in the open window. Once the window
  // closes (window_draining), kernel activity stays on until its kernels
  // have run, and records of larger ids, launched after it, are left out too.
  std::atomic<uint32_t> window_last_correlation{0};
  std::atomic<bool> window_draining{false};

  // Our hold on CUPTI; process lifetime, like this object.
  CuptiSession session{*this};
  bool exit_handler_registered = false;
  // The connected socket, or -1; a forked child closes its copy (it has no
  // link thread, and its copy would keep the agent's end open).
  std::atomic<int> session_fd{-1};
  // Process exit (DrainAtExit): the exiting thread sets exit_requested and
  // writes wake_fd (an eventfd the link thread polls); the link thread sends
  // what it has and sets exit_drained under exit_mu.
  int wake_fd = -1;
  std::atomic<bool> exit_requested{false};
  std::mutex exit_mu;
  std::condition_variable exit_cv;
  bool exit_drained = false;  // guarded by exit_mu
};

// Null before InitializeInjection.
InjectionState* GetInjectionState() noexcept;

// Writes "warpscope-cuda: <message>\n" to stderr, only the first time in the
// process; later calls are silent.
void SayOnce(const std::string& message) noexcept;
// The same, with its own once: PC sampling's one line, said even after
// another (PC sampling off does not turn the library off).
void SayPcSamplingOnce(const std::string& message) noexcept;

uint64_t MonotonicNs() noexcept;

}  // namespace warpscope::cuda
