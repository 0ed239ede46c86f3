// POST /mcp (docs/api.md, "MCP"; docs/design/mcp.md): the Model Context
// Protocol endpoint, so a coding assistant can ask why a job is slow and get
// warpscope's evidence. Its tools (get_insights, top_functions,
// flame_graph_summary, gpu_kernels, gpu_metrics_summary, list_targets,
// list_profile_types) are answered by the API's own GET routes, called in
// process with the tool's arguments as query parameters: one query path,
// one set of limits and errors. mcp_endpoint.h speaks the protocol.
//
// The route needs the API's bearer token although it is outside /api/.
//
// Threading: the route holds no mutable state; http::HttpServer's workers
// call it concurrently.
#pragma once

#include "server/api_handlers.h"

namespace warpscope::server {

// Appends POST /mcp to *routes, whose GET /api/v1/ routes (insights, top,
// profile, gpu/kernels, metrics, metric_names, targets, types) must already
// be there. options.now_ns must be set.
void AddMcpRoutes(const ApiOptions& options, http::Routes* routes);

}  // namespace warpscope::server
