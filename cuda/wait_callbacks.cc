#include "cuda/wait_callbacks.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cuda/injection_state.h"
#include "cuda/launch_callbacks.h"

namespace warpscope::cuda {

namespace {

constexpr uint16_t kPtsz = WS_CUDA_WAIT_FLAG_PTSZ;
constexpr CUpti_CallbackDomain kRt = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr CUpti_CallbackDomain kDrv = CUPTI_CB_DOMAIN_DRIVER_API;

// The stream calls' parameter structs start with the stream (the
// generated_*_meta.h structs come with cupti.h).
static_assert(offsetof(cudaStreamSynchronize_v3020_params, stream) == 0);
static_assert(offsetof(cudaStreamSynchronize_ptsz_v7000_params, stream) == 0);
static_assert(offsetof(cuStreamSynchronize_params, hStream) == 0);
static_assert(offsetof(cuStreamSynchronize_ptsz_params, hStream) == 0);

// Names from cupti_runtime_cbid.h and cupti_driver_cbid.h (CUDA 13).
const WaitApi kWaitApis[] = {
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, WS_CUDA_WAIT_DEVICE_SYNCHRONIZE, 0, false},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020, WS_CUDA_WAIT_DEVICE_SYNCHRONIZE, 0, false},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, WS_CUDA_WAIT_STREAM_SYNCHRONIZE, 0, true},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000, WS_CUDA_WAIT_STREAM_SYNCHRONIZE, kPtsz, true},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, WS_CUDA_WAIT_EVENT_SYNCHRONIZE, 0, false},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, WS_CUDA_WAIT_MEMCPY, 0, false},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000, WS_CUDA_WAIT_MEMCPY, kPtsz, false},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, WS_CUDA_WAIT_MEMCPY, 0, false},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000, WS_CUDA_WAIT_MEMCPY, kPtsz, false},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020, WS_CUDA_WAIT_MEMCPY, 0, false},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_ptds_v7000, WS_CUDA_WAIT_MEMCPY, kPtsz, false},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020, WS_CUDA_WAIT_MEMCPY, 0, false},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000, WS_CUDA_WAIT_MEMCPY, kPtsz, false},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, WS_CUDA_WAIT_FREE, 0, false},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, WS_CUDA_WAIT_MALLOC, 0, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, WS_CUDA_WAIT_CU_CTX_SYNCHRONIZE, 0, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2, WS_CUDA_WAIT_CU_CTX_SYNCHRONIZE, 0, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, WS_CUDA_WAIT_CU_STREAM_SYNCHRONIZE, 0, true},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz, WS_CUDA_WAIT_CU_STREAM_SYNCHRONIZE, kPtsz, true},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, WS_CUDA_WAIT_CU_EVENT_SYNCHRONIZE, 0, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpy, WS_CUDA_WAIT_CU_MEMCPY, 0, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds, WS_CUDA_WAIT_CU_MEMCPY, kPtsz, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, WS_CUDA_WAIT_CU_MEMCPY, 0, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds, WS_CUDA_WAIT_CU_MEMCPY, kPtsz, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, WS_CUDA_WAIT_CU_MEMCPY, 0, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds, WS_CUDA_WAIT_CU_MEMCPY, kPtsz, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, WS_CUDA_WAIT_CU_MEMCPY, 0, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds, WS_CUDA_WAIT_CU_MEMCPY, kPtsz, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2, WS_CUDA_WAIT_CU_MEMCPY, 0, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2_ptds, WS_CUDA_WAIT_CU_MEMCPY, kPtsz, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2, WS_CUDA_WAIT_CU_MEMCPY, 0, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2_ptds, WS_CUDA_WAIT_CU_MEMCPY, kPtsz, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer, WS_CUDA_WAIT_CU_MEMCPY, 0, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer_ptds, WS_CUDA_WAIT_CU_MEMCPY, kPtsz, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, WS_CUDA_WAIT_CU_MEM_FREE, 0, false},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, WS_CUDA_WAIT_CU_MEM_ALLOC, 0, false},
};

// Per application thread; trivially destructible.
struct ThreadWaitState {
  ApiNesting nesting;
  bool timing = false;  // the outermost call was seen at its entry
  uint32_t tid = 0;
  ws_cuda_wait pending{};
  LaunchTokenBucket bucket;
};
constinit thread_local ThreadWaitState t_wait{};

uint64_t CuptiNow(const InjectionState& s) {
  uint64_t t = 0;
  if (s.cupti.fn.cuptiGetTimestamp == nullptr || s.cupti.fn.cuptiGetTimestamp(&t) != CUPTI_SUCCESS) return 0;
  return t;
}

uint32_t StreamId(const InjectionState& s, const WaitApi& api, const CUpti_CallbackData& cb) {
  if (!api.stream_first || cb.functionParams == nullptr || s.cupti.fn.cuptiGetStreamIdEx == nullptr) return 0;
  CUstream stream = *static_cast<CUstream const*>(cb.functionParams);
  uint32_t id = 0;
  const uint8_t per_thread = (api.flags & WS_CUDA_WAIT_FLAG_PTSZ) != 0 ? 1 : 0;
  if (s.cupti.fn.cuptiGetStreamIdEx(cb.context, stream, per_thread, &id) != CUPTI_SUCCESS) return 0;
  return id;
}

void OnEnter(InjectionState& s, const WaitApi& api, CUpti_CallbackDomain domain, const CUpti_CallbackData& cb) {
  ThreadWaitState& t = t_wait;
  const uint32_t epoch = s.epoch.load(std::memory_order_relaxed);
  if (!t.nesting.Enter(epoch, domain)) return;
  t.timing = false;
  const uint64_t start = CuptiNow(s);
  if (start == 0) return;
  if (t.tid == 0) t.tid = static_cast<uint32_t>(syscall(SYS_gettid));
  s.waits_seen.fetch_add(1, std::memory_order_relaxed);
  t.timing = true;
  t.pending = ws_cuda_wait{};
  t.pending.start_ns = start;
  t.pending.tid = t.tid;
  t.pending.correlation_id = cb.correlationId;
  t.pending.attach_epoch = s.attach_epoch.load(std::memory_order_relaxed);
  t.pending.stream_id = StreamId(s, api, cb);
  t.pending.context_id = cb.contextUid;
  t.pending.api = api.api;
  t.pending.flags = api.flags;
  if (!t.bucket.Take(CoarseMonotonicNs(), s.samples_per_sec.load(std::memory_order_relaxed),
                     s.sample_burst.load(std::memory_order_relaxed), epoch)) {
    return;
  }
  t.pending.flags |= WS_CUDA_WAIT_FLAG_SAMPLED;
  s.waits_sampled.fetch_add(1, std::memory_order_relaxed);
  const uint64_t key = static_cast<uint64_t>(t.pending.attach_epoch) << 32 | cb.correlationId;
  warpscope_cuda_launch_probe(key, WS_CUDA_PROBE_WAIT | api.api, 0);
}

void OnExit(InjectionState& s) {
  ThreadWaitState& t = t_wait;
  if (!t.nesting.Exit(s.epoch.load(std::memory_order_relaxed)) || !t.timing) return;
  t.timing = false;
  const uint64_t end = CuptiNow(s);
  t.pending.end_ns = end > t.pending.start_ns ? end : t.pending.start_ns;
  if (!s.wait_queue.TryPush(t.pending)) s.wait_records_dropped.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

const WaitApi* WaitApis(size_t* count) noexcept {
  *count = sizeof(kWaitApis) / sizeof(kWaitApis[0]);
  return kWaitApis;
}

const WaitApi* FindWaitApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) noexcept {
  for (const WaitApi& api : kWaitApis) {
    if (api.domain == domain && api.cbid == cbid) return &api;
  }
  return nullptr;
}

void OnWaitCallback(InjectionState& s, const WaitApi& api, CUpti_CallbackDomain domain,
                    const CUpti_CallbackData& cb) noexcept {
  if (cb.callbackSite == CUPTI_API_ENTER) {
    OnEnter(s, api, domain, cb);
  } else {
    OnExit(s);
  }
}

}  // namespace warpscope::cuda
