// The cubin store's routes (docs/api.md, "Cubins"; storage/cubin_store.h):
//   PUT  /api/v1/gpu/cubins/<hash>  an agent uploads a cubin (the body, zstd
//                                   or plain), checked against its hash
//   HEAD /api/v1/gpu/cubins/<hash>  an agent asks whether the server has it
//   GET  /api/v1/gpu/cubins/<hash>  its bytes, application/octet-stream
// PUT and HEAD serve the agents on the ingest lane, GET the query lane; all
// three under /api/, behind the token. And the ingest side of retention:
// after a batch is stored, the cubins its instruction frames name count as
// used.
//
// Threading: the handlers hold no mutable state; http::HttpServer's workers
// call them concurrently.
#pragma once

#include <string>
#include <vector>

#include "proto/warpscope/v1/ingest.pb.h"
#include "server/api_handlers.h"

namespace warpscope::server {

inline constexpr char kCubinsPath[] = "/api/v1/gpu/cubins/";

// Appends the routes to *routes. `store` must outlive them.
void AddCubinRoutes(storage::ProfileStore* store, http::Routes* routes);

// The cubin hashes that `batch`'s instruction frames carry as their
// mappings' build ids, each once.
std::vector<std::string> CubinHashesOf(const warpscope::v1::IngestBatch& batch);

// After `batch` was stored: its cubins count as used now. A failure is
// logged; the batch is stored regardless.
void NoteCubinUses(storage::ProfileStore* store, const warpscope::v1::IngestBatch& batch);

}  // namespace warpscope::server
