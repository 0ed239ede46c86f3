#include "cuda/cupti_session.h"

#include <time.h>

#include <cerrno>
#include <string>

#include "cuda/injection_state.h"
#include "cuda/launch_callbacks.h"
#include "cuda/wait_callbacks.h"

namespace warpscope::cuda {

namespace {

constexpr uint64_t kMs = 1'000'000ull;
// How long a step-aside waits for the link thread's CUPTI call in progress
// (a forced flush takes tens of milliseconds at most). Past it, the other
// client's call goes ahead anyway: it may then be refused, as it would be
// without the guard, but the application never waits longer for us.
constexpr uint64_t kStepAsideWaitNs = 2000 * kMs;

void SleepMs(uint32_t ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// Buffer callbacks: C entry points called by CUPTI.
void CUPTIAPI OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  *max_records = 0;
  InjectionState* s = GetInjectionState();
  if (s == nullptr) {
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = s->pool.Take(size);
}

void CUPTIAPI OnBufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) noexcept {
  InjectionState* s = GetInjectionState();
  if (s == nullptr || buffer == nullptr) return;
  if (valid_size > 0 && s->records_wanted.load(std::memory_order_acquire)) {
    KernelRecordFilter filter;
    filter.attach_epoch = s->attach_epoch.load(std::memory_order_relaxed);
    if (s->window_filter.load(std::memory_order_relaxed)) {
      filter.first_correlation = s->window_first_correlation.load(std::memory_order_acquire);
      if (s->window_draining.load(std::memory_order_acquire)) {
        filter.bounded = true;
        filter.last_correlation = s->window_last_correlation.load(std::memory_order_relaxed);
      }
    }
    ConvertActivityBuffer(s->cupti.fn, buffer, valid_size, s->outbox, s->conversion, filter, s->launch_times);
  }
  s->pool.Give(buffer);
}

}  // namespace

bool CuptiSession::Check(CUptiResult result, const char* what) noexcept {
  if (result == CUPTI_SUCCESS) return true;
  SayOnce(std::string(what) + " failed: " + CuptiResultText(s_.cupti.fn, result) + "; GPU profiling off");
  return false;
}

bool CuptiSession::Subscribe(bool* taken) noexcept {
  const CuptiFunctions& fn = s_.cupti.fn;
  *taken = false;
  CUptiResult r;
  char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  if (fn.cuptiSubscribe_v2 != nullptr) {
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "warpscope";
    params.oldSubscriberName = other;
    params.oldSubscriberSize = sizeof(other);
    r = fn.cuptiSubscribe_v2(&subscriber_, &OnLaunchCallback, nullptr, &params);
  } else {
    r = fn.cuptiSubscribe(&subscriber_, &OnLaunchCallback, nullptr);
  }
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    *taken = true;
    subscriber_ = nullptr;
    other[sizeof(other) - 1] = '\0';
    SayOnce(std::string("another CUPTI client is active (") + (other[0] != '\0' ? other : "unnamed") +
            "); GPU profiling of this process waits until it is done");
    return false;
  }
  return Check(r, fn.cuptiSubscribe_v2 != nullptr ? "cuptiSubscribe_v2" : "cuptiSubscribe");
}

CuptiSession::EnterResult CuptiSession::Enter(const LinkConfig& config) noexcept {
  std::lock_guard<std::mutex> lock(control_);
  config_ = config;
  if (other_client_.load(std::memory_order_acquire)) return EnterResult::kTaken;
  if (hold_.load(std::memory_order_acquire) == CuptiHold::kIn) return EnterResult::kIn;
  const CuptiFunctions& fn = s_.cupti.fn;
  if (!subscribed_) {
    bool taken = false;
    if (!Subscribe(&taken)) {
      if (!taken) return EnterResult::kFailed;
      // Someone we did not see coming holds CUPTI: nothing of ours was
      // registered; the scheduler tries again later.
      taken_on_enter_.fetch_add(1, std::memory_order_relaxed);
      if (hold_.exchange(CuptiHold::kAside, std::memory_order_acq_rel) != CuptiHold::kAside) {
        aside_since_ns_.store(MonotonicNs(), std::memory_order_release);
      }
      return EnterResult::kTaken;
    }
    subscribed_ = true;
  }
  // Our buffer callbacks only once the subscription is ours: registering
  // them while another client traces would take its records away.
  if (!buffers_registered_) {
    if (!Check(fn.cuptiActivityRegisterCallbacks(&OnBufferRequested, &OnBufferCompleted),
               "cuptiActivityRegisterCallbacks")) {
      return EnterResult::kFailed;
    }
    buffers_registered_ = true;
  }
  s_.attach_epoch.fetch_add(1, std::memory_order_relaxed);  // the probe's keys restart per entry
  if (s_.pc.wanted() && !resources_on_) {
    // Contexts being created or destroyed and modules being loaded (PC
    // sampling); a CUPTI without them leaves PC sampling to the launches'
    // contexts and without cubins.
    for (CUpti_CallbackId cbid : {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
                                  CUPTI_CBID_RESOURCE_MODULE_LOADED}) {
      (void)fn.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid);
    }
    resources_on_ = true;
  }
  if (!SetLaunchCallbacksLocked(true)) {
    SayOnce("cuptiEnableCallback failed for every launch API; GPU profiling off");
    return EnterResult::kFailed;
  }
  if (!SetMemopActivityLocked(true)) return EnterResult::kFailed;
  if (hold_.exchange(CuptiHold::kIn, std::memory_order_acq_rel) == CuptiHold::kAside) {
    const uint64_t since = aside_since_ns_.load(std::memory_order_acquire);
    const uint64_t now = MonotonicNs();
    if (since != 0 && now > since) aside_total_ns_.fetch_add(now - since, std::memory_order_relaxed);
  }
  enters_.fetch_add(1, std::memory_order_relaxed);
  return EnterResult::kIn;
}

bool CuptiSession::SetLaunchCallbacksLocked(bool on) noexcept {
  if (on == callbacks_on_) return true;
  const CuptiFunctions& fn = s_.cupti.fn;
  // The synchronisation APIs (waits) ride on the same subscription. The
  // launch callbacks are switched right next to kernel activity (on last,
  // off first), so a launch seen in duty mode finds kernel activity on.
  size_t wait_count = 0;
  const WaitApi* waits = WaitApis(&wait_count);
  auto set_waits = [&] {
    for (size_t i = 0; i < wait_count; ++i) {
      (void)fn.cuptiEnableCallback(on ? 1 : 0, subscriber_, waits[i].domain, waits[i].cbid);
    }
  };
  if (on) set_waits();
  size_t count = 0;
  const LaunchApi* apis = LaunchApis(&count);
  size_t changed = 0;
  for (size_t i = 0; i < count; ++i) {
    // An older CUPTI may not know every id: skip those.
    if (fn.cuptiEnableCallback(on ? 1 : 0, subscriber_, apis[i].domain, apis[i].cbid) == CUPTI_SUCCESS) changed++;
  }
  if (!on) set_waits();
  if (on && changed == 0) return false;
  callbacks_on_ = on;
  return true;
}

bool CuptiSession::SetMemopActivityLocked(bool on) noexcept {
  const CuptiFunctions& fn = s_.cupti.fn;
  auto set = [&](bool wanted, bool* state, CUpti_ActivityKind kind, const char* what) {
    if (on == *state || (on && !wanted)) return true;
    if (!on) {
      fn.cuptiActivityDisable(kind);
    } else if (!Check(fn.cuptiActivityEnable(kind), what)) {
      return false;
    }
    *state = on;
    return true;
  };
  return set(config_.memcpy, &memcpy_on_, CUPTI_ACTIVITY_KIND_MEMCPY, "cuptiActivityEnable(MEMCPY)") &&
         set(config_.memset, &memset_on_, CUPTI_ACTIVITY_KIND_MEMSET, "cuptiActivityEnable(MEMSET)");
}

bool CuptiSession::SetKernelActivityLocked(bool on, uint64_t now) noexcept {
  if (on == kernel_on_) return true;
  const CuptiFunctions& fn = s_.cupti.fn;
  if (on) {
    if (!Check(fn.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
               "cuptiActivityEnable(CONCURRENT_KERNEL)")) {
      return false;
    }
    s_.kernel_on_since.store(now, std::memory_order_relaxed);
  } else {
    fn.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    const uint64_t since = s_.kernel_on_since.exchange(0, std::memory_order_relaxed);
    if (since != 0 && now > since) s_.activity_on_ns.fetch_add(now - since, std::memory_order_relaxed);
  }
  kernel_on_ = on;
  s_.kernel_activity_on.store(on, std::memory_order_relaxed);
  return true;
}

// The scheduler's switches: under control_, and nothing once a step-aside
// (on another thread) has taken us out.
bool CuptiSession::SetKernelActivity(bool on, uint64_t now) noexcept {
  std::lock_guard<std::mutex> lock(control_);
  return !in() || SetKernelActivityLocked(on, now);
}

bool CuptiSession::SetMemopActivity(bool on) noexcept {
  std::lock_guard<std::mutex> lock(control_);
  return !in() || SetMemopActivityLocked(on);
}

bool CuptiSession::SetLaunchCallbacks(bool on) noexcept {
  std::lock_guard<std::mutex> lock(control_);
  return !in() || SetLaunchCallbacksLocked(on);
}

void CuptiSession::Flush(bool forced) noexcept {
  std::lock_guard<std::mutex> lock(control_);
  if (!in()) return;
  const CuptiFunctions& fn = s_.cupti.fn;
  fn.cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  size_t dropped = 0;
  if (fn.cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
    s_.cupti_dropped_records.fetch_add(dropped, std::memory_order_relaxed);
  }
}

void CuptiSession::ReadPcSamples(uint64_t now) noexcept {
  std::lock_guard<std::mutex> lock(control_);
  if (in()) s_.pc.Read(s_.cupti.fn, s_.outbox, now);
}

void CuptiSession::EnablePcSampling() noexcept {
  if (!s_.pc.wanted()) return;
  std::lock_guard<std::mutex> lock(control_);
  if (in() && kernel_on_) (void)s_.pc.Enable(s_.cupti.fn);
}

bool CuptiSession::UnsubscribeLocked() noexcept {
  const CuptiFunctions& fn = s_.cupti.fn;
  if (!subscribed_) return true;
  if (stay_subscribed_) return false;
  // Our callbacks off first: a subscription handed to the next client
  // carries nothing of ours.
  SetLaunchCallbacksLocked(false);
  if (resources_on_) {
    for (CUpti_CallbackId cbid : {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
                                  CUPTI_CBID_RESOURCE_MODULE_LOADED}) {
      (void)fn.cuptiEnableCallback(0, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid);
    }
    resources_on_ = false;
  }
  const CUptiResult r = fn.cuptiUnsubscribe(subscriber_);
  if (r != CUPTI_SUCCESS) {
    // Half-released CUPTI is worse than a held one: stay subscribed with
    // everything off from now on.
    stay_subscribed_ = true;
    SayOnce("cuptiUnsubscribe failed: " + CuptiResultText(fn, r) +
            "; recording goes on with CUPTI held between windows");
    return false;
  }
  subscriber_ = nullptr;
  subscribed_ = false;
  return true;
}

bool CuptiSession::LeaveLocked(bool from_application_thread) noexcept {
  const CuptiFunctions& fn = s_.cupti.fn;
  s_.callbacks_live.store(false, std::memory_order_release);
  const uint64_t now = MonotonicNs();
  if (kernel_on_) s_.pc.Read(fn, s_.outbox, now);
  SetKernelActivityLocked(false, now);
  SetMemopActivityLocked(false);
  // Buffers CUPTI still holds come back (and are converted while a
  // connection still wants them).
  fn.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (from_application_thread) s_.pc.DisableAll(fn, s_.outbox, now);
  const bool out = UnsubscribeLocked();
  if (!out) {
    SetLaunchCallbacksLocked(false);  // held between windows: nothing of ours on
  }
  hold_.store(CuptiHold::kOut, std::memory_order_release);
  return out;
}

void CuptiSession::Leave() noexcept {
  std::lock_guard<std::mutex> lock(control_);
  // In, or subscribed by an entry that failed half way: either way ours to undo.
  if (leave_pending_ || (hold_.load(std::memory_order_acquire) != CuptiHold::kIn && !subscribed_)) return;
  if (s_.pc.any_enabled()) {
    // PC sampling is disabled by an application thread inside a launch
    // callback (pc_sampling.h): callbacks stay on until one does it.
    s_.callbacks_live.store(false, std::memory_order_release);
    SetKernelActivityLocked(false, MonotonicNs());
    SetMemopActivityLocked(false);
    s_.pc_disable_state.store(InjectionState::kPcDisableRequested, std::memory_order_release);
    leave_pending_ = true;
    return;
  }
  LeaveLocked(false);
}

bool CuptiSession::Settle(uint32_t wait_ms) noexcept {
  if (!leave_pending_) return true;
  int expected = InjectionState::kPcDisableRequested;
  if (s_.pc_disable_state.compare_exchange_strong(expected, InjectionState::kPcDisableNone,
                                                  std::memory_order_acq_rel)) {
    leave_pending_ = false;  // taken back: still in, PC sampling still on
    return true;
  }
  const uint64_t deadline = MonotonicNs() + wait_ms * kMs;
  while (s_.pc_disable_state.load(std::memory_order_acquire) == InjectionState::kPcDisabling) {
    if (MonotonicNs() >= deadline) return false;
    SleepMs(1);
  }
  std::lock_guard<std::mutex> lock(control_);
  s_.pc_disable_state.store(InjectionState::kPcDisableNone, std::memory_order_release);
  leave_pending_ = false;
  LeaveLocked(false);
  return true;
}

void CuptiSession::StepAsideFromAnyThread() noexcept {
  other_client_.store(true, std::memory_order_release);
  buffers_registered_.store(false, std::memory_order_release);  // the client registers its own
  // The link thread's call in progress finishes first; never wait long.
  std::unique_lock<std::mutex> lock(control_, std::defer_lock);
  const uint64_t deadline = MonotonicNs() + kStepAsideWaitNs;
  bool locked = lock.try_lock();
  while (!locked && MonotonicNs() < deadline) {
    SleepMs(1);
    locked = lock.try_lock();
  }
  const CuptiHold was = hold_.load(std::memory_order_acquire);
  if (was == CuptiHold::kOff) return;
  if (locked && was == CuptiHold::kIn) {
    // This is an application thread: PC sampling may be disabled here.
    leave_pending_ = false;
    s_.pc_disable_state.store(InjectionState::kPcDisableNone, std::memory_order_release);
    LeaveLocked(true);
  } else if (was == CuptiHold::kIn) {
    leave_owed_.store(true, std::memory_order_release);  // the link thread leaves (SettleStepAside)
  }
  if (was != CuptiHold::kAside) {
    yields_.fetch_add(1, std::memory_order_relaxed);
    aside_since_ns_.store(MonotonicNs(), std::memory_order_release);
  }
  hold_.store(CuptiHold::kAside, std::memory_order_release);
}

void CuptiSession::SettleStepAside() noexcept {
  if (!leave_owed_.exchange(false, std::memory_order_acq_rel)) return;
  std::lock_guard<std::mutex> lock(control_);
  leave_pending_ = false;
  s_.pc_disable_state.store(InjectionState::kPcDisableNone, std::memory_order_release);
  LeaveLocked(false);
  hold_.store(CuptiHold::kAside, std::memory_order_release);  // LeaveLocked said out; a client has it
}

void CuptiSession::OtherClientDoneFromAnyThread() noexcept {
  if (!other_client_.exchange(false, std::memory_order_acq_rel)) return;
  // The scheduler enters again at its next window; the time aside ends then.
  CuptiHold expected = CuptiHold::kAside;
  if (hold_.compare_exchange_strong(expected, CuptiHold::kOut, std::memory_order_acq_rel)) {
    const uint64_t since = aside_since_ns_.load(std::memory_order_acquire);
    const uint64_t now = MonotonicNs();
    if (since != 0 && now > since) aside_total_ns_.fetch_add(now - since, std::memory_order_relaxed);
  }
}

uint64_t CuptiSession::aside_ns(uint64_t now) const noexcept {
  uint64_t total = aside_total_ns_.load(std::memory_order_relaxed);
  if (aside()) {
    const uint64_t since = aside_since_ns_.load(std::memory_order_acquire);
    if (since != 0 && now > since) total += now - since;
  }
  return total;
}

}  // namespace warpscope::cuda
