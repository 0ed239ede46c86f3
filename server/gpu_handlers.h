// The GPU activity routes of the API (docs/api.md, "GPU kernels and trace"):
//   GET /api/v1/gpu/kernels     kernel table (query/gpu_kernel_table.h)
//   GET /api/v1/gpu/trace       per-stream timeline (query/gpu_stream_timeline.h)
//   GET /api/v1/gpu/trace.json  Chrome trace download (query/chrome_trace.h)
//   GET /api/v1/gpu/kernel_source, /api/v1/gpu/stalls
//                               inside a kernel, from the gpu_pc profile
//                               (query/gpu_kernel_source.h)
// Each reads storage::ProfileStore::SelectGpuActivities once, with the
// common from/to/selector parameters; the trace ranges are capped
// (ApiOptions::max_gpu_trace_range_ns) and every answer's activity count too.
//
// Threading: the handlers hold no mutable state; http::HttpServer's workers call
// them concurrently.
#pragma once

#include "server/api_handlers.h"

namespace warpscope::server {

// Appends the routes to *routes. `store` must outlive them;
// options.now_ns must be set.
void AddGpuRoutes(storage::ProfileStore* store, const ApiOptions& options, http::Routes* routes);

}  // namespace warpscope::server
