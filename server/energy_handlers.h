// GET /api/v1/energy (docs/api.md, "Energy"; docs/design/energy.md): the GPU
// energy, power, utilization and per-process SM series plus the CPU samples
// over the range, read on one grid padded on both sides so that the energy
// counter's readings around the range's edges bound the intervals crossing
// them; query/energy.h turns them into joules, CO₂ and cost per group.
//
// Threading: the handler holds no mutable state; http::HttpServer's workers
// call it concurrently.
#pragma once

#include "server/api_handlers.h"

namespace warpscope::server {

// Appends the route to *routes. `store` must outlive it; options.now_ns must be set.
void AddEnergyRoutes(storage::ProfileStore* store, const ApiOptions& options, http::Routes* routes);

}  // namespace warpscope::server
