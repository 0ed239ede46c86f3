// GPU activities as a Chrome trace (Trace Event Format JSON, loadable in
// Perfetto and chrome://tracing): GET /api/v1/gpu/trace.json.
//
//   {"displayTimeUnit":"ns","otherData":{"origin_unix_ns":F,"from_ns":F,"to_ns":T},
//    "traceEvents":[
//      {"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"train (100) on n1"}},
//      {"ph":"M","name":"thread_name","pid":1,"tid":7,"args":{"name":"GPU 0 stream 7"}},
//      {"ph":"X","name":"gemm","cat":"kernel","pid":1,"tid":7,"ts":1.5,"dur":0.7,
//       "args":{"grid":[1,1,1],"block":[128,1,1],"registers_per_thread":32,...}}, ...]}
//
//  * pid: the process's label set, numbered from 1 in label order (two nodes
//    may reuse a pid, so the label's value cannot be the key). Its name is
//    "comm (pid) on node", with whichever of the three labels are present.
//  * tid: device * 1000000 + stream (CUDA stream ids are small per-context
//    counters), named "GPU d stream s".
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

#include "storage/store_types.h"

namespace warpscope::query {

std::string RenderChromeTrace(const storage::GpuActivities& activities, int64_t from_ns, int64_t to_ns);

// "1.500": nanoseconds as microseconds with exactly three decimals.
std::string MicrosecondsText(int64_t ns);

}  // namespace warpscope::query
