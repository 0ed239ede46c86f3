#include "cuda/launch_callbacks.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>

#include "cuda/injection_state.h"
#include "cuda/wait_callbacks.h"

namespace warpscope::cuda {

namespace {

// Graph launches: every parameter struct starts with the executable graph
// (the generated_*_meta.h structs come with cupti.h).
static_assert(offsetof(cudaGraphLaunch_v10000_params, graphExec) == 0);
static_assert(offsetof(cudaGraphLaunch_ptsz_v10000_params, graphExec) == 0);
static_assert(offsetof(cuGraphLaunch_params, hGraph) == 0);
static_assert(offsetof(cuGraphLaunch_ptsz_params, hGraphExec) == 0);

constexpr uint16_t kDriver = WS_CUDA_LAUNCH_FLAG_DRIVER_API;
constexpr uint16_t kPtsz = WS_CUDA_LAUNCH_FLAG_PTSZ;
constexpr CUpti_CallbackDomain kRt = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr CUpti_CallbackDomain kDrv = CUPTI_CB_DOMAIN_DRIVER_API;

// Names from cupti_runtime_cbid.h and cupti_driver_cbid.h (CUDA 13).
const LaunchApi kLaunchApis[] = {
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, WS_CUDA_LAUNCH_KERNEL, 0},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000, WS_CUDA_LAUNCH_KERNEL, kPtsz},
    {kRt, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, WS_CUDA_LAUNCH_KERNEL, 0},
    {kRt, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000, WS_CUDA_LAUNCH_KERNEL, kPtsz},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, WS_CUDA_LAUNCH_KERNEL_EX, 0},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060, WS_CUDA_LAUNCH_KERNEL_EX, kPtsz},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, WS_CUDA_LAUNCH_COOPERATIVE, 0},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000, WS_CUDA_LAUNCH_COOPERATIVE, kPtsz},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, WS_CUDA_LAUNCH_GRAPH, 0},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, WS_CUDA_LAUNCH_GRAPH, kPtsz},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, WS_CUDA_LAUNCH_KERNEL, kDriver},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, WS_CUDA_LAUNCH_KERNEL, kDriver | kPtsz},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, WS_CUDA_LAUNCH_KERNEL_EX, kDriver},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, WS_CUDA_LAUNCH_KERNEL_EX, kDriver | kPtsz},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, WS_CUDA_LAUNCH_COOPERATIVE, kDriver},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz, WS_CUDA_LAUNCH_COOPERATIVE, kDriver | kPtsz},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, WS_CUDA_LAUNCH_GRAPH, kDriver},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, WS_CUDA_LAUNCH_GRAPH, kDriver | kPtsz},
};

const LaunchApi* FindLaunchApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  for (const LaunchApi& api : kLaunchApis) {
    if (api.domain == domain && api.cbid == cbid) return &api;
  }
  return nullptr;
}

// Per application thread; trivially destructible (no TLS destructor runs at
// thread exit).
struct ThreadLaunchState {
  ApiNesting nesting;
  bool sampled = false;
  // Timed: the outermost call was made while kernel activity was on, so its
  // kernel will have a record; its time goes into the launch-time table at
  // API_EXIT, under its own and its nested driver call's correlation ids.
  bool timed = false;
  uint32_t timed_id = 0;
  uint32_t timed_inner_id = 0;
  uint64_t timed_enter_ns = 0;
  uint16_t timed_kind = 0;
  uint16_t timed_flags = 0;
  uint32_t tid = 0;
  ws_cuda_launch pending{};
  LaunchTokenBucket bucket;
};
// constinit: no lazy-initialisation guard on the launch path.
constinit thread_local ThreadLaunchState t_launch{};

uint64_t GraphExecId(const InjectionState& s, const CUpti_CallbackData& cb) {
  if (cb.functionParams == nullptr) return 0;
  CUgraphExec exec = *static_cast<CUgraphExec const*>(cb.functionParams);
  uint32_t id = 0;
  if (exec != nullptr && s.cupti.fn.cuptiGetGraphExecId != nullptr &&
      s.cupti.fn.cuptiGetGraphExecId(exec, &id) == CUPTI_SUCCESS) {
    return id;
  }
  return 0;
}

// The open window's largest correlation id so far (injection_state.h).
void NoteWindowLast(InjectionState& s, uint32_t correlation) {
  uint32_t last = s.window_last_correlation.load(std::memory_order_relaxed);
  while (correlation > last &&
         !s.window_last_correlation.compare_exchange_weak(last, correlation, std::memory_order_relaxed)) {
  }
}

void OnEnter(InjectionState& s, const LaunchApi& api, CUpti_CallbackDomain domain, const CUpti_CallbackData& cb) {
  ThreadLaunchState& t = t_launch;
  const uint32_t epoch = s.epoch.load(std::memory_order_relaxed);
  if (!t.nesting.Enter(epoch, domain)) {
    if (t.timed && t.timed_inner_id == 0 && cb.correlationId != t.timed_id) {
      t.timed_inner_id = cb.correlationId;
      // The kernel's record may carry the nested driver call's id.
      if (s.window_filter.load(std::memory_order_relaxed)) NoteWindowLast(s, cb.correlationId);
    }
    if (t.sampled && t.pending.inner_correlation_id == 0 && cb.correlationId != t.pending.correlation_id) {
      t.pending.inner_correlation_id = cb.correlationId;
    }
    return;
  }
  t.sampled = false;
  t.timed = false;
  s.launches_seen.fetch_add(1, std::memory_order_relaxed);
  if (api.kind == WS_CUDA_LAUNCH_GRAPH) s.graph_launches_seen.fetch_add(1, std::memory_order_relaxed);
  const bool activity_on = s.kernel_activity_on.load(std::memory_order_relaxed);
  if (!activity_on) {
    s.launches_seen_activity_off.fetch_add(1, std::memory_order_relaxed);
    return;  // no kernel record will exist to join a stack with
  }
  s.launches_seen_activity_on.fetch_add(1, std::memory_order_relaxed);
  s.pc.NoteContext(cb.context);
  if (t.tid == 0) t.tid = static_cast<uint32_t>(syscall(SYS_gettid));
  t.timed = true;
  t.timed_id = cb.correlationId;
  t.timed_inner_id = 0;
  t.timed_enter_ns = MonotonicNs();
  t.timed_kind = api.kind;
  t.timed_flags = api.flags;
  // The window's first launch: records of smaller ids were launched before it.
  if (s.window_first_correlation.load(std::memory_order_relaxed) == 0) {
    uint32_t none = 0;
    s.window_first_correlation.compare_exchange_strong(none, cb.correlationId, std::memory_order_acq_rel);
  }
  // And its last: records of larger ids were launched after it (windowed
  // modes only: nothing reads it otherwise).
  if (s.window_filter.load(std::memory_order_relaxed)) NoteWindowLast(s, cb.correlationId);
  if (!t.bucket.Take(CoarseMonotonicNs(), s.samples_per_sec.load(std::memory_order_relaxed),
                     s.sample_burst.load(std::memory_order_relaxed), epoch)) {
    return;
  }
  t.sampled = true;
  t.pending = ws_cuda_launch{};
  t.pending.host_time_ns = t.timed_enter_ns;
  t.pending.graph_exec_id = api.kind == WS_CUDA_LAUNCH_GRAPH ? GraphExecId(s, cb) : 0;
  t.pending.tid = t.tid;
  t.pending.correlation_id = cb.correlationId;
  t.pending.launch_kind = api.kind;
  t.pending.flags = api.flags;
  s.launches_sampled.fetch_add(1, std::memory_order_relaxed);
  // The session's entry in the upper half: the key is unique per entry.
  const uint64_t key = static_cast<uint64_t>(s.attach_epoch.load(std::memory_order_relaxed)) << 32 | cb.correlationId;
  warpscope_cuda_launch_probe(key, api.kind, t.pending.graph_exec_id);
}

void OnExit(InjectionState& s) {
  ThreadLaunchState& t = t_launch;
  if (!t.nesting.Exit(s.epoch.load(std::memory_order_relaxed))) return;
  if (t.timed) {
    t.timed = false;
    LaunchTime time;
    time.enter_ns = t.timed_enter_ns;
    time.duration_ns = static_cast<uint32_t>(std::min<uint64_t>(MonotonicNs() - t.timed_enter_ns, UINT32_MAX));
    time.tid = t.tid;
    time.kind = t.timed_kind;
    time.flags = t.timed_flags;
    const uint32_t attach = s.attach_epoch.load(std::memory_order_relaxed);
    s.launch_times.Put(attach, t.timed_id, time);
    if (t.timed_inner_id != 0) s.launch_times.Put(attach, t.timed_inner_id, time);
  }
  if (!t.sampled) return;
  t.sampled = false;
  if (!s.launch_queue.TryPush(t.pending)) s.launch_records_dropped.fetch_add(1, std::memory_order_relaxed);
}

// The session is leaving with PC sampling on: the first launch or
// synchronisation API to exit disables it here, on an application thread
// inside a callback, never on the link thread: there, cuptiPCSamplingDisable
// deadlocks against a launch in flight on the context (seen on an H100).
void DisablePcSamplingAtApiExit(InjectionState& s) {
  int expected = InjectionState::kPcDisableRequested;
  if (!s.pc_disable_state.compare_exchange_strong(expected, InjectionState::kPcDisabling, std::memory_order_acq_rel)) {
    return;
  }
  s.pc.DisableAll(s.cupti.fn, s.outbox, MonotonicNs());
  s.pc_disable_state.store(InjectionState::kPcDisabled, std::memory_order_release);
}

// Contexts and modules, for PC sampling (pc_sampling.h).
void OnResourceCallback(InjectionState& s, CUpti_CallbackId cbid, const CUpti_ResourceData& data) {
  if (!s.pc.wanted()) return;
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
      s.pc.NoteContext(data.context);
      break;
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
      s.pc.OnContextDestroying(s.cupti.fn, data.context, s.outbox);
      break;
    case CUPTI_CBID_RESOURCE_MODULE_LOADED:
      if (data.resourceDescriptor != nullptr) {
        s.pc.OnModuleLoaded(s.cupti.fn, *static_cast<const CUpti_ModuleResourceData*>(data.resourceDescriptor));
      }
      break;
    default:
      break;
  }
}

}  // namespace

const LaunchApi* LaunchApis(size_t* count) noexcept {
  *count = sizeof(kLaunchApis) / sizeof(kLaunchApis[0]);
  return kLaunchApis;
}

void CUPTIAPI OnLaunchCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) noexcept {
  InjectionState* s = GetInjectionState();
  if (s == nullptr || data == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    OnResourceCallback(*s, cbid, *static_cast<const CUpti_ResourceData*>(data));
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto& cb = *static_cast<const CUpti_CallbackData*>(data);
  if (cb.callbackSite == CUPTI_API_EXIT &&
      s->pc_disable_state.load(std::memory_order_acquire) == InjectionState::kPcDisableRequested) {
    DisablePcSamplingAtApiExit(*s);
    return;
  }
  if (!s->callbacks_live.load(std::memory_order_acquire)) return;
  const LaunchApi* api = FindLaunchApi(domain, cbid);
  if (api == nullptr) {
    if (const WaitApi* wait = FindWaitApi(domain, cbid)) OnWaitCallback(*s, *wait, domain, cb);
    return;
  }
  if (cb.callbackSite == CUPTI_API_ENTER) {
    OnEnter(*s, *api, domain, cb);
  } else {
    OnExit(*s);
  }
}

}  // namespace warpscope::cuda

extern "C" void warpscope_cuda_launch_probe(uint64_t correlation_id, uint32_t launch_kind,
                                            uint64_t graph_exec_id) noexcept {
  // The agent's uprobe reads the arguments and the stack here.
  asm volatile("" : : "r"(correlation_id), "r"(launch_kind), "r"(graph_exec_id) : "memory");
}
