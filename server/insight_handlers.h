// GET /api/v1/insights (docs/api.md, "Insights"; docs/design/insights.md):
// the series every finder reads over the range at one step, the finders of
// query/insights.h, then each insight's evidence profiles (the top CPU
// functions of its ranges, the call sites of its waits).
//
// Threading: the handler holds no mutable state; http::HttpServer's workers
// call it concurrently.
#pragma once

#include "server/api_handlers.h"

namespace warpscope::server {

// Appends the route to *routes. `store` must outlive it; options.now_ns must be set.
void AddInsightRoutes(storage::ProfileStore* store, const ApiOptions& options, http::Routes* routes);

}  // namespace warpscope::server
