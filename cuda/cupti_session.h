// CuptiSession: the injection library's hold on CUPTI, apart from the socket
// link and the recording schedule. It enters CUPTI (subscribe first, then
// our activity-buffer callbacks, launch and synchronisation callbacks,
// memcpy/memset activity), switches kernel activity and the callbacks for
// the scheduler, and leaves again (everything off, our buffers flushed back,
// cuptiUnsubscribe). It never calls cuptiFinalize: tearing CUPTI down while
// the application holds CUDA graphs that CUPTI instrumented crashes the
// application at a later replay, and threads that launched before a teardown
// are not traced again afterwards (docs/design/cuda_injection.md, "Leaving
// CUPTI between windows").
//
// Another CUPTI client (torch.profiler's Kineto, a tool in the process) may
// want CUPTI while we hold it; CUPTI takes one subscriber and one pair of
// buffer callbacks per process. The client guard (cupti_client_guard.h)
// calls StepAsideFromAnyThread before the other client's first CUPTI call
// goes through: we leave at once, on that thread, and stay out until the
// client lets go (OtherClientDoneFromAnyThread). A client we cannot see
// coming (one that reaches CUPTI through dlsym) finds us subscribed and is
// refused only while a window is open; when we find CUPTI taken, Enter
// answers kTaken and the scheduler tries again at its next window.
//
// If leaving ever fails in a way that would leave CUPTI half-released
// (cuptiUnsubscribe refused), the session stops leaving: it stays
// subscribed with everything off between windows (`stays_subscribed`),
// counts it, and says so once.
//
// Threading: every CUPTI control call is made under `control_`: by the
// link thread, or by the application thread that steps aside (which waits
// for it a bounded time, polling try_lock: std::timed_mutex would need a
// newer glibc than the library's floor). PC sampling is disabled only by an application thread inside a
// launch callback (pc_sampling.h): a leave with PC sampling on hands that to
// the next launch to exit and completes on the link thread afterwards.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "cuda/link_config.h"

namespace warpscope::cuda {

struct InjectionState;

// What STATS reports as the library's state (ws_cuda_stats::cupti_state).
enum class CuptiHold : uint32_t {
  kOut = WS_CUDA_CUPTI_OUT,            // not subscribed: between windows, or dormant
  kIn = WS_CUDA_CUPTI_IN,              // subscribed and recording
  kAside = WS_CUDA_CUPTI_ASIDE,        // another CUPTI client has it; we wait
  kOff = WS_CUDA_CUPTI_OFF,            // a CUPTI failure turned the library off
};

class CuptiSession {
 public:
  explicit CuptiSession(InjectionState& s) noexcept : s_(s) {}
  CuptiSession(const CuptiSession&) = delete;
  CuptiSession& operator=(const CuptiSession&) = delete;

  enum class EnterResult { kIn, kTaken, kFailed };
  // Link thread. Subscribes and turns on what every recording needs before
  // its kernels (callbacks, memcpy/memset activity); kernel activity is the
  // scheduler's. kTaken: another client holds CUPTI (nothing of ours was
  // registered). kFailed: a CUPTI error, said once; the library stays off.
  EnterResult Enter(const LinkConfig& config) noexcept;
  // Link thread; each takes control_ and does nothing once a step-aside
  // has taken the session out (true then).
  bool SetKernelActivity(bool on, uint64_t now) noexcept;
  bool SetMemopActivity(bool on) noexcept;
  // Every launch-API and synchronisation-API callback; false when none could
  // be enabled.
  bool SetLaunchCallbacks(bool on) noexcept;
  // Link thread: asynchronous flush (0) or forced, and CUPTI's drop count.
  void Flush(bool forced) noexcept;
  // Reads PC samples while in (link thread).
  void ReadPcSamples(uint64_t now) noexcept;
  // Turns on PC sampling for contexts noted since (link thread, while in).
  void EnablePcSampling() noexcept;
  // Link thread: everything off, our buffers flushed back, then
  // unsubscribed, now or (PC sampling on) once a launch has disabled PC
  // sampling; Settle completes that.
  void Leave() noexcept;
  // Completes or takes back a pending leave; false while a launch is still
  // disabling PC sampling (make no CUPTI call then).
  bool Settle(uint32_t wait_ms) noexcept;

  // True when CUPTI calls of ours may be made now (in, nothing pending).
  bool in() const noexcept { return hold_.load(std::memory_order_acquire) == CuptiHold::kIn && !leave_pending_; }
  CuptiHold hold() const noexcept { return hold_.load(std::memory_order_acquire); }
  bool aside() const noexcept { return hold() == CuptiHold::kAside; }
  // A client the guard saw holds CUPTI: nothing to try until it lets go
  // (a client found only by a refused subscribe is tried again instead).
  bool waiting_for_client() const noexcept { return other_client_.load(std::memory_order_acquire); }
  bool kernel_activity_on() const noexcept { return kernel_on_; }
  // When the last step-aside happened (MonotonicNs), 0 if never.
  uint64_t aside_since_ns() const noexcept { return aside_since_ns_.load(std::memory_order_acquire); }
  void MarkOff() noexcept { hold_.store(CuptiHold::kOff, std::memory_order_release); }
  bool stays_subscribed() const noexcept { return stay_subscribed_; }

  // Any thread (the client guard): another client is about to call CUPTI.
  // Leaves now if in, and keeps us out until OtherClientDoneFromAnyThread.
  void StepAsideFromAnyThread() noexcept;
  // Any thread: the other client let CUPTI go (unsubscribed or finalized).
  void OtherClientDoneFromAnyThread() noexcept;
  // Link thread: a step-aside that could not wait for the link thread's call
  // in progress left the leave to it; done here.
  void SettleStepAside() noexcept;

  // Counters for STATS.
  uint64_t yields() const noexcept { return yields_.load(std::memory_order_relaxed); }
  uint64_t taken_on_enter() const noexcept { return taken_on_enter_.load(std::memory_order_relaxed); }
  uint64_t aside_ns(uint64_t now) const noexcept;
  uint64_t enters() const noexcept { return enters_.load(std::memory_order_relaxed); }

 private:
  bool Subscribe(bool* taken) noexcept;
  // With control_ held.
  bool SetKernelActivityLocked(bool on, uint64_t now) noexcept;
  bool SetMemopActivityLocked(bool on) noexcept;
  bool SetLaunchCallbacksLocked(bool on) noexcept;
  bool Check(CUptiResult result, const char* what) noexcept;
  // Under control_: everything of ours off and out; returns false when the
  // unsubscribe was refused.
  bool LeaveLocked(bool from_application_thread) noexcept;
  bool UnsubscribeLocked() noexcept;
  void NoteAsideLocked() noexcept;

  InjectionState& s_;
  std::mutex control_;
  std::atomic<CuptiHold> hold_{CuptiHold::kOut};
  CUpti_SubscriberHandle subscriber_ = nullptr;  // ours; under control_
  bool subscribed_ = false;
  // Ours are the registered buffer callbacks; a client that stepped in
  // registers its own (so any thread may clear this).
  std::atomic<bool> buffers_registered_{false};
  bool callbacks_on_ = false, kernel_on_ = false, memcpy_on_ = false, memset_on_ = false;
  bool resources_on_ = false;
  bool stay_subscribed_ = false;  // unsubscribing failed once: toggle instead
  // Waiting for a launch to disable PC sampling (the link thread's; a
  // step-aside clears it).
  std::atomic<bool> leave_pending_{false};
  LinkConfig config_;
  std::atomic<bool> other_client_{false};
  std::atomic<bool> leave_owed_{false};  // a step-aside could not take control_
  std::atomic<uint64_t> yields_{0}, taken_on_enter_{0}, enters_{0};
  std::atomic<uint64_t> aside_since_ns_{0}, aside_total_ns_{0};
};

}  // namespace warpscope::cuda
