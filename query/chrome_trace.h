// GPU activities as a Chrome trace (Trace Event Format JSON, loadable in
// Perfetto and chrome://tracing): GET /api/v1/gpu/trace.json.
//
//   {"displayTimeUnit":"ns","otherData":{"origin_unix_ns":F,"from_ns":F,"to_ns":T},
//    "traceEvents":[
//      {"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"train (100) on n1"}},
//      {"ph":"M","name":"thread_name","pid":1,"tid":1000000007,"args":{"name":"GPU 0 stream 7"}},
//      {"ph":"M","name":"thread_name","pid":1,"tid":4242,"args":{"name":"thread 4242 (CPU)"}},
//      {"ph":"X","name":"cudaLaunchKernel","cat":"cuda_api","pid":1,"tid":4242,"ts":1.0,"dur":0.004,
//       "args":{"correlation_id":9}},
//      {"ph":"s","name":"launch","cat":"launch","id":1,"pid":1,"tid":4242,"ts":1.002},
//      {"ph":"f","bp":"e","name":"launch","cat":"launch","id":1,"pid":1,"tid":1000000007,"ts":1.5},
//      {"ph":"X","name":"gemm","cat":"kernel","pid":1,"tid":1000000007,"ts":1.5,"dur":0.7,
//       "args":{"grid":[1,1,1],"block":[128,1,1],"registers_per_thread":32,...}}, ...]}
//
//  * pid: the process's label set, numbered from 1 in label order (two nodes
//    may reuse a pid, so the label's value cannot be the key). Its name is
//    "comm (pid) on node", with whichever of the three labels are present.
//  * tid of a GPU lane: 1000000000 + device * 1000000 + stream (CUDA stream
//    ids are small per-context counters), named "GPU d stream s"; above any
//    Linux thread id, so it never meets a launching thread's.
//  * The CPU side, for kernels whose launch call the injection library timed:
//    the call as an "X" event (cat "cuda_api", named by its API) on the
//    launching thread (tid: its id in the process's pid namespace, named
//    "thread T (CPU)"), once per correlation id, and a flow ("s" in the
//    middle of the call, "f" bound to the kernel) per kernel, so Perfetto
//    draws an arrow from each launch to what it ran.
//  * CPU samples (when `cpu` is given: the traced processes' threads, from
//    the store's stack timeline grouped by node, pid, comm, thread): one
//    track per thread (tid 2000000000 + lane, named "CPU samples · NAME")
//    in its process, each agent bucket (a second) laid out as the flame
//    chart does: the bucket's stacks sorted by their root-first path, one
//    after another from its start, each as long as the CPU time it stands
//    for (squeezed into the second when they add up to more), frames as
//    nested "X" events (cat "cpu_sample"), a prefix shared with the stack
//    before it as one event; clipped to [from_ns, to_ns). At most
//    kMaxCpuEvents such events; a top-level "cpu_events_left_out" counts
//    the rest when there are more.
//  * ts, dur: microseconds with three decimals (exact nanoseconds), ts
//    relative to from_ns (otherData.origin_unix_ns): absolute Unix
//    microseconds as doubles would lose the nanoseconds.
//  * name: the demangled kernel name; memcpy/memset are "memcpy HtoD" etc.
//    (CUPTI copy kinds) and "memset". args: kernels grid, block, registers,
//    shared memory, correlation_id, graph_id; copies and sets bytes too.
//
// Pure function; any thread.
#pragma once

#include <cstdint>
#include <string>

#include "storage/profile_store.h"
#include "storage/store_types.h"

namespace warpscope::query {

inline constexpr size_t kMaxCpuEvents = 300'000;

// `cpu`: the CPU samples of the traced processes (null: GPU side only).
std::string RenderChromeTrace(const storage::GpuActivities& activities, int64_t from_ns, int64_t to_ns,
                              const storage::StackTimeline* cpu = nullptr);

// "1.500": nanoseconds as microseconds with exactly three decimals.
std::string MicrosecondsText(int64_t ns);

}  // namespace warpscope::query
