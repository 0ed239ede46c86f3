// The link thread: the injection library's one thread of its own.
//
// Dormant: it tries to connect to the agent's socket every retry interval
// (2 s) and makes no CUPTI call at all. Connected: it sends HELLO, waits for
// CONFIG, turns CUPTI on (launch callbacks, activity), and then loops —
// flushing activity (cuptiActivityFlushAll), toggling kernel activity in duty
// mode, sending STATS and CLOCK, and writing queued messages with
// non-blocking sends. When the agent goes away, stalls past the stall timeout
// or sends garbage, it turns CUPTI off again and goes back to dormant.
// A CUPTI failure says one line on stderr and ends the thread for good.
//
// Threading: everything here runs on the link thread; it shares
// InjectionState (injection_state.h) with CUPTI's callbacks.
#pragma once

#include "cuda/injection_state.h"
#include "cuda/link_config.h"

namespace warpscope::cuda {

// The thread's body; returns only after a fatal error.
void RunLinkThread(InjectionState& state) noexcept;

// At process exit (an atexit handler registered when the first session
// starts, so it runs before CUPTI's and the driver's own exit handlers): while
// connected, asks the link thread to flush CUPTI (forced), queue the last
// launch records and a final STATS and send them, and waits for that at most
// 500 ms; a stuck CUPTI can delay exit by no more. Runs on the exiting thread.
void DrainAtExit() noexcept;

}  // namespace warpscope::cuda
