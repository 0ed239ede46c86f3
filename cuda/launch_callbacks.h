// The CUPTI callback on kernel-launch APIs, run on application threads (it
// hands the synchronisation APIs to wait_callbacks.h).
//
// Each launch is counted once: a runtime launch nests a driver launch on the
// same thread, and a thread_local depth makes the inner one only note its
// own correlation id (CUPTI gives the runtime and driver calls different
// ids; the kernel record carries one of them, the agent joins on both).
// At the outermost API_ENTER, while kernel activity is on, the thread's token
// bucket decides whether to sample; a sampled launch calls
// warpscope_cuda_launch_probe (the agent's uprobe captures the stack there)
// and, at API_EXIT, queues a ws_cuda_launch record. Every launch made while
// kernel activity is on, sampled or not, leaves its entry time, duration and
// thread in the launch-time table at API_EXIT (two clock reads per launch),
// for the kernel record to carry (launch_times.h).
//
// Never blocks: atomics, a thread_local, a try_lock on the launch queue, and
// the launch-time table's lock-free slots.
#pragma once

#include <cupti.h>

#include <cstdint>

#include "proto/cuda/cuda_wire.h"

namespace warpscope::cuda {

struct LaunchApi {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  uint16_t kind;   // ws_cuda_launch_kind
  uint16_t flags;  // WS_CUDA_LAUNCH_FLAG_*
};

// Every API the library subscribes to.
const LaunchApi* LaunchApis(size_t* count) noexcept;

void CUPTIAPI OnLaunchCallback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                               const void* data) noexcept;

}  // namespace warpscope::cuda

extern "C" {
// The uprobe target. Exported, never inlined and never elided.
__attribute__((visibility("default"), noinline, used)) void warpscope_cuda_launch_probe(
    uint64_t correlation_id, uint32_t launch_kind, uint64_t graph_exec_id) noexcept;
}
