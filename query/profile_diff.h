// The diff answer of the query API (GET /api/v1/diff): two profiles of
// one type (base: e.g. last week, target: now) merged into one call tree so
// the UI can colour each node by its normalized change, e.g.
// target_total / target.total - base_total / base.total.
//
//   {"version":1,"type":"cpu","unit":"samples","period_nanos":10000000,
//    "base_total":100,"target_total":150,"truncated":0,
//    "names":[...],"binaries":[...],
//    "nodes":[[-1,0,0,3,0,100,0,150],[0,1,1,0,10,60,0,20],...]}
//
// nodes: [parent, name, binary, kind, base_self, base_total, target_self,
// target_total]; everything else as in flame_graph.h. A node present in one
// side only has zeros for the other. Type members come from the target (the
// base's when the target has no type); diffing two types is the caller's
// mistake to refuse. Folding to max_nodes keeps the nodes with the biggest
// share of either side's total: max(base_total / base.total,
// target_total / target.total); "other" nodes sum both sides.
//
// Pure function; safe on any thread.
#pragma once

#include <string>

#include "query/flame_graph.h"
#include "storage/profile_store.h"

namespace warpscope::query {

std::string RenderDiffJson(const storage::MergedProfile& base, const storage::MergedProfile& target,
                           const FlameGraphOptions& options);

}  // namespace warpscope::query
