#include "cuda/cupti_client_guard.h"

#include <cupti.h>

#include <atomic>

#include "cuda/got_patch.h"
#include "cuda/injection_state.h"

namespace warpscope::cuda {

namespace {

// The other client's subscription, so that its cuptiUnsubscribe is told
// apart from ours (which never goes through a patched slot anyway).
std::atomic<CUpti_SubscriberHandle> g_other_subscriber{nullptr};

CuptiSession* Session() noexcept {
  InjectionState* s = GetInjectionState();
  return s != nullptr ? &s->session : nullptr;
}
const CuptiFunctions* Functions() noexcept {
  InjectionState* s = GetInjectionState();
  return s != nullptr ? &s->cupti.fn : nullptr;
}
void StepAside() noexcept {
  if (CuptiSession* session = Session()) session->StepAsideFromAnyThread();
}

CUptiResult CUPTIAPI GuardedSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                      void* userdata) noexcept {
  StepAside();
  const CUptiResult r = Functions()->cuptiSubscribe(subscriber, callback, userdata);
  if (r == CUPTI_SUCCESS && subscriber != nullptr) g_other_subscriber.store(*subscriber);
  return r;
}

CUptiResult CUPTIAPI GuardedSubscribeV2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                        void* userdata, CUpti_SubscriberParams* params) noexcept {
  StepAside();
  const CUptiResult r = Functions()->cuptiSubscribe_v2(subscriber, callback, userdata, params);
  if (r == CUPTI_SUCCESS && subscriber != nullptr) g_other_subscriber.store(*subscriber);
  return r;
}

CUptiResult CUPTIAPI GuardedRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                              CUpti_BuffersCallbackCompleteFunc complete) noexcept {
  StepAside();
  return Functions()->cuptiActivityRegisterCallbacks(request, complete);
}

CUptiResult CUPTIAPI GuardedActivityEnable(CUpti_ActivityKind kind) noexcept {
  StepAside();
  return Functions()->cuptiActivityEnable(kind);
}

CUptiResult CUPTIAPI GuardedActivityEnableContext(CUcontext context, CUpti_ActivityKind kind) noexcept {
  StepAside();
  return Functions()->cuptiActivityEnableContext(context, kind);
}

CUptiResult CUPTIAPI GuardedUnsubscribe(CUpti_SubscriberHandle subscriber) noexcept {
  const CUptiResult r = Functions()->cuptiUnsubscribe(subscriber);
  CUpti_SubscriberHandle theirs = subscriber;
  if (r == CUPTI_SUCCESS && g_other_subscriber.compare_exchange_strong(theirs, nullptr)) {
    if (CuptiSession* session = Session()) session->OtherClientDoneFromAnyThread();
  }
  return r;
}

CUptiResult CUPTIAPI GuardedFinalize() noexcept {
  const CUptiResult r = Functions()->cuptiFinalize();
  g_other_subscriber.store(nullptr);
  if (CuptiSession* session = Session()) session->OtherClientDoneFromAnyThread();
  return r;
}

// Filled by InstallClientGuard (originals from the loaded CUPTI).
GotReplacement g_replacements[8];
size_t g_replacement_count = 0;
GotPatcher* g_patcher = nullptr;  // link thread; never freed, like the state
ClientGuardCounters g_totals;     // link thread

}  // namespace

bool InstallClientGuard(InjectionState& s) noexcept {
  const CuptiFunctions& fn = s.cupti.fn;
  if (g_patcher != nullptr) return true;
  size_t n = 0;
  auto add = [&](const char* name, void* original, void* replacement) {
    if (original != nullptr) g_replacements[n++] = GotReplacement{name, original, replacement};
  };
  add("cuptiSubscribe", reinterpret_cast<void*>(fn.cuptiSubscribe), reinterpret_cast<void*>(&GuardedSubscribe));
  add("cuptiSubscribe_v2", reinterpret_cast<void*>(fn.cuptiSubscribe_v2),
      reinterpret_cast<void*>(&GuardedSubscribeV2));
  add("cuptiActivityRegisterCallbacks", reinterpret_cast<void*>(fn.cuptiActivityRegisterCallbacks),
      reinterpret_cast<void*>(&GuardedRegisterCallbacks));
  add("cuptiActivityEnable", reinterpret_cast<void*>(fn.cuptiActivityEnable),
      reinterpret_cast<void*>(&GuardedActivityEnable));
  add("cuptiActivityEnableContext", reinterpret_cast<void*>(fn.cuptiActivityEnableContext),
      reinterpret_cast<void*>(&GuardedActivityEnableContext));
  add("cuptiUnsubscribe", reinterpret_cast<void*>(fn.cuptiUnsubscribe), reinterpret_cast<void*>(&GuardedUnsubscribe));
  add("cuptiFinalize", reinterpret_cast<void*>(fn.cuptiFinalize), reinterpret_cast<void*>(&GuardedFinalize));
  g_replacement_count = n;
  if (fn.cuptiSubscribe == nullptr || fn.cuptiUnsubscribe == nullptr) return false;
  // Neither this library nor CUPTI itself is patched.
  const uintptr_t skip[2] = {GotPatcher::BaseOf(reinterpret_cast<void*>(&InstallClientGuard)),
                             GotPatcher::BaseOf(reinterpret_cast<void*>(fn.cuptiSubscribe))};
  try {
    g_patcher = new GotPatcher(g_replacements, g_replacement_count, skip, 2);
  } catch (...) {
    return false;
  }
  PatchNewClients();
  return true;
}

void PatchNewClients() noexcept {
  if (g_patcher == nullptr) return;
  g_totals += g_patcher->PatchNewObjects();
}

ClientGuardCounters ClientGuardTotals() noexcept { return g_totals; }

}  // namespace warpscope::cuda
