// libws_fake_cupti_client.so: another CUPTI client inside the application,
// the way torch.profiler's Kineto is one: linked against CUPTI (here the
// fake, by its soname) and calling it through its own imports, with a
// subscription, launch callbacks, its own activity buffers and kernel
// activity. The injection tests load it into cuda_injection_host to check
// that such a client gets CUPTI exactly as it would without warpscope, and
// that warpscope records again once it is done.
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace {

CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<uint64_t> g_records{0};
std::atomic<uint64_t> g_callbacks{0};

void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite == CUPTI_API_ENTER) g_callbacks.fetch_add(1);
}

void CUPTIAPI OnRequest(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI OnComplete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) g_records.fetch_add(1);
  }
  std::free(buffer);
}

}  // namespace

extern "C" {

// Kineto's order: subscribe, callbacks, buffer callbacks, kernel activity.
// Returns the first CUPTI error, 0 when the client has CUPTI.
__attribute__((visibility("default"))) int ws_fake_client_start(void) {
  CUptiResult r = cuptiSubscribe(&g_subscriber, &OnCallback, nullptr);
  if (r != CUPTI_SUCCESS) return r;
  r = cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  if (r != CUPTI_SUCCESS) return r;
  r = cuptiActivityRegisterCallbacks(&OnRequest, &OnComplete);
  if (r != CUPTI_SUCCESS) return r;
  return cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

// Activity off, its buffers back, unsubscribed (and, with `finalize`,
// CUPTI torn down, as Kineto's teardown does).
__attribute__((visibility("default"))) int ws_fake_client_stop(int finalize) {
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  CUptiResult r = cuptiUnsubscribe(g_subscriber);
  g_subscriber = nullptr;
  if (r == CUPTI_SUCCESS && finalize != 0) r = cuptiFinalize();
  return r;
}

__attribute__((visibility("default"))) uint64_t ws_fake_client_records(void) { return g_records.load(); }
__attribute__((visibility("default"))) uint64_t ws_fake_client_callbacks(void) { return g_callbacks.load(); }

}  // extern "C"
