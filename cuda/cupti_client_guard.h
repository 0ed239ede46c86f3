// The client guard: lets the application's own CUPTI clients (torch.profiler
// through Kineto, a tool linked against libcupti) have CUPTI whenever they
// ask for it, as if the library were not there.
//
// CUPTI serves one subscriber and one pair of activity-buffer callbacks per
// process (before CUPTI's multi-subscriber mode). The guard points every
// other loaded object's imports of cuptiSubscribe, cuptiSubscribe_v2,
// cuptiActivityRegisterCallbacks, cuptiActivityEnable (and ...Context),
// cuptiUnsubscribe and cuptiFinalize at functions of
// ours (got_patch.h). The first four make the session step aside
// (CuptiSession::StepAsideFromAnyThread: everything of ours off, our
// buffers back, unsubscribed) on the calling thread before forwarding the
// call, so the client's call succeeds as it would without us. The last two
// forward, then tell the session that the client let CUPTI go, and
// recording resumes at the next window.
//
// Objects loaded later are patched when the link thread next looks
// (PatchNewObjects, every loop iteration: one dl_iterate_phdr when nothing
// was loaded). A client that calls before that, or that reaches CUPTI
// through dlsym (XLA's profiler in JAX does), is not seen: its subscribe is
// refused while one of our windows is open, and our next window finds
// CUPTI taken and waits (CuptiSession::Enter's kTaken). The way round is
// one line: WARPSCOPE_CUDA_DISABLE=1 in that process's environment
// (docs/design/cuda_injection.md).
//
// Threading: Install and PatchNewObjects on the link thread; the
// replacement functions on any application thread.
#pragma once

#include <cstddef>

#include "cuda/got_patch.h"

namespace warpscope::cuda {

struct InjectionState;

// The patcher's results summed over every pass.
using ClientGuardCounters = GotPatchResult;

// Link thread, once CUPTI is loaded: patches the objects loaded so far.
// False where the guard cannot work (a CUPTI without the functions).
bool InstallClientGuard(InjectionState& s) noexcept;
// Link thread: patches objects loaded since the last call.
void PatchNewClients() noexcept;
ClientGuardCounters ClientGuardTotals() noexcept;

}  // namespace warpscope::cuda
