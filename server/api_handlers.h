// The routes of warpscope-server's API (docs/api.md): ingest and the queries,
// wired to a storage::ProfileStore and the renderers of query/. http::HttpServer
// (http_server.h) has already checked the token, the size limits and
// decompressed the body by the time a handler runs.
//
// Threading: handlers run on http::HttpServer's worker threads, several at once;
// ApiHandlers holds no mutable state of its own (the store is thread-safe).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "query/energy.h"
#include "server/api_params.h"
#include "server/query_limits.h"
#include "base/http/http_server.h"
#include "storage/profile_store.h"

namespace warpscope::server {

struct ApiOptions {
  // Unix nanoseconds now; tests pin it.
  std::function<int64_t()> now_ns;
  // Default and most nodes of a flame-graph answer (`max_nodes`).
  size_t default_max_nodes = 8192;
  size_t max_max_nodes = 200'000;
  // The flame chart's longest range and most (lane, time, stack) points.
  int64_t max_flame_chart_range_ns = 15 * 60 * int64_t{1'000'000'000};
  size_t max_flame_chart_points = 2'000'000;
  // GPU activities (gpu_handlers.h): the trace's longest range, and the most
  // activities the trace and the kernel table read (400 past them).
  int64_t max_gpu_trace_range_ns = 10 * int64_t{1'000'000'000};
  size_t max_gpu_trace_activities = 200'000;
  size_t max_gpu_kernel_activities = 1'000'000;
  // Every query stops (503) once it has run this long, and frees its worker.
  std::chrono::nanoseconds query_timeout = std::chrono::seconds(30);
  // The energy answer's coefficients when a query passes none
  // (docs/design/energy.md says where the defaults come from).
  query::EnergyCoefficients energy;
  // Carbon intensity by region (built-in table plus the server's flags).
  query::RegionTable regions;
  // The connection layer's counters, reported by /api/v1/status; may be null.
  const http::ConnectionCounters* http_counters = nullptr;
  // A query's memory follows the rows it reads (series points, GPU activity
  // rows): past max_query_rows of them it is a 400 naming the limit, before
  // the server builds an answer from them. At most max_heavy_queries heavy
  // queries (query_limits.h) run at once; one that waits heavy_query_wait
  // for a slot is a 503 with Retry-After.
  size_t max_query_rows = 2'000'000;
  int max_heavy_queries = 4;
  std::chrono::milliseconds heavy_query_wait = std::chrono::seconds(10);
  // Made by ApiRoutes for its routes (the counters /api/v1/status reports,
  // the gate); null before.
  QueryLimits* limits = nullptr;
};

// Every API route (ingest, profile, top, diff, series, flamechart, metrics,
// metric names, labels, label values, targets, types, status, gpu/kernels,
// gpu/trace, gpu/trace.json, gpu/cubins, insights, energy, and the MCP
// endpoint /mcp) plus /healthz. `store` must outlive the routes.
http::Routes ApiRoutes(storage::ProfileStore* store, const ApiOptions& options);


}  // namespace warpscope::server
