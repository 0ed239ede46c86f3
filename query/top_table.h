// The top-functions answer of the query API (GET /api/v1/top): which
// functions the profile's value went to, by self and by total.
//
//   {"version":1,"type":"cpu","unit":"samples","period_nanos":10000000,
//    "total":21,"function_count":57,
//    "functions":[{"name":"spin","binary":"worker","kind":0,"self":7,"total":7},...]}
//
//  * A function is a distinct (name, binary, kind) as frame_label.h names
//    frames; inlined functions are functions of their own. kind as in
//    flame_graph.h (0 native, 1 kernel, 2 Python).
//  * self: value of stacks whose leaf frame it is; total: value of stacks
//    containing it at least once (a recursive function counts once per stack).
//  * "total": the profile's total; "function_count": distinct functions
//    before the limit.
//  * Sorted by self (or total) descending, then by the other value
//    descending, then name, binary, kind: deterministic for ties.
//
// Pure function; safe on any thread.
#pragma once

#include <cstddef>
#include <string>

#include "storage/profile_store.h"

namespace warpscope::query {

struct TopOptions {
  enum class SortBy { kSelf, kTotal };
  SortBy sort_by = SortBy::kSelf;
  size_t limit = 100;  // rows in "functions"; 0 = all
};

std::string RenderTopJson(const storage::MergedProfile& profile, const TopOptions& options);

}  // namespace warpscope::query
