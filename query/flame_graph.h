// The flame-graph answer of the query API (GET /api/v1/profile?format=json):
// a MergedProfile as a compact call tree for the UI's canvas renderer, which
// must stay quick to transfer and parse at 50k+ nodes. Hence string tables
// and one small array per node rather than one object per node.
//
//   {"version":1,"type":"cpu","unit":"samples","period_nanos":10000000,
//    "total":21,"truncated":0,
//    "names":["total","main","compute",...],      // each distinct name once
//    "binaries":["","app","libc.so.6",...],        // each distinct binary once
//    "nodes":[[-1,0,0,3,0,21],[0,1,1,0,0,12],...]}
//
// nodes: [parent, name, binary, kind, self, total]
//  * parent: row index of the parent node, -1 for the root; rows are in
//    depth-first preorder, so a parent always comes before its children.
//  * name, binary: indices into "names" and "binaries" (frame_label.h says
//    what they contain; binary "" when unknown).
//  * kind: 0 native, 1 kernel, 2 Python, 3 not a frame: the root (row 0,
//    named "total") and "other" nodes.
//  * self, total: values in `unit` (samples for cpu; × period_nanos for time).
//    total = self + the sum of the children's totals; the root's total is
//    the profile's total.
//  * Siblings are sorted by name, then binary, then kind; an "other" node
//    comes last among its siblings.
//  * A node is a distinct (name, binary, kind) under its parent: frames of
//    one function at other lines or addresses are merged; inlined functions
//    are nodes of their own.
// When the tree has more than max_nodes nodes, the biggest (by total) are
// kept and the rest of each kept node's children are folded into one "other"
// child (self = total = their summed totals). "truncated" counts the nodes
// folded away; totals stay exact.
//
// Pure function; safe on any thread.
#pragma once

#include <cstddef>
#include <string>

#include "storage/profile_store.h"

namespace warpscope::query {

struct FlameGraphOptions {
  size_t max_nodes = 8192;  // rows in "nodes"; values below 2 count as 2
};

std::string RenderFlameGraphJson(const storage::MergedProfile& profile, const FlameGraphOptions& options);

}  // namespace warpscope::query
