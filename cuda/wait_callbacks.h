// The CUPTI callback on CUDA synchronisation APIs (device, stream and event
// synchronize, synchronous copies, cudaMalloc/cudaFree), run on application
// threads: how long a host thread waited in each call.
//
// At the outermost API_ENTER the callback reads cuptiGetTimestamp (the clock
// of the kernel records, so the agent finds the kernels that ran during the
// wait without converting clocks) and, for the stream calls, the CUPTI id of
// the stream waited on; a per-thread token bucket (its own, so launches do
// not use up the waits' samples) decides whether to sample the call's stack:
// a sampled wait calls warpscope_cuda_launch_probe with launch_kind
// WS_CUDA_PROBE_WAIT | api. At API_EXIT it reads the clock again and queues
// one ws_cuda_wait record, sampled or not. A runtime call nests the driver's
// on the same thread; a thread_local depth counts the wait once.
//
// Never blocks: atomics, a thread_local and a try_lock on the wait queue
// (a record that finds it busy or full is dropped and counted).
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>

#include "proto/cuda/cuda_wire.h"

namespace warpscope::cuda {

struct WaitApi {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  uint16_t api;    // ws_cuda_wait_api
  uint16_t flags;  // WS_CUDA_WAIT_FLAG_PTSZ, or 0
  // The parameter struct starts with the stream waited on (CUstream).
  bool stream_first;
};

// Every synchronisation API the library subscribes to.
const WaitApi* WaitApis(size_t* count) noexcept;
// The entry for (domain, cbid), or null.
const WaitApi* FindWaitApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) noexcept;

struct InjectionState;
// API_ENTER / API_EXIT of a WaitApi, with the callbacks live.
void OnWaitCallback(InjectionState& s, const WaitApi& api, CUpti_CallbackDomain domain,
                    const CUpti_CallbackData& cb) noexcept;

}  // namespace warpscope::cuda
