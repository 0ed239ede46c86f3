// The flame-chart answer of the query API (GET /api/v1/flamechart): which
// stacks ran when, per lane (a thread by default), for the UI's time-ordered
// chart. Like the flame graph's JSON it uses string tables and small arrays:
//
//   {"version":1,"type":"cpu","unit":"samples","period_nanos":52631578,
//    "from_ms":1795975758000,"to_ms":1795975768000,"total":1234,
//    "names":["main","load",...], "binaries":["","app",...],
//    "frames":[[name, binary, kind],...],     // kind as in the flame graph: 0 native, 1 kernel, 2 Python
//    "stacks":[[frame, frame, ...],...],      // frame indexes, ROOT FIRST (outermost caller first)
//    "lanes":[{"labels":{"pid":"7","thread":"main"},"total":600,
//              "points":[[t_ms, stack, value],...]}],   // ascending t_ms, then stack
//    "truncated_lanes":0, "truncated_total":0}
//
// t_ms is the start of the time bucket the samples were stored under (the
// agent's second). Lanes are sorted by total, largest first; past max_lanes
// the rest are left out and counted ("truncated_lanes", their value in
// "truncated_total"); "total" counts every lane. Stacks and frames are the
// ones the kept lanes use, each once.
//
// Pure function; safe on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "storage/profile_store.h"

namespace warpscope::query {

struct FlameChartOptions {
  size_t max_lanes = 32;
  int64_t from_ns = 0;  // the range asked for, echoed as from_ms / to_ms
  int64_t to_ns = 0;
};

std::string RenderFlameChartJson(const storage::StackTimeline& timeline, const FlameChartOptions& options);

// The timeline's lanes by their totals: the flame chart's lane order, and
// the groups' of a grouped profile (grouped_profile.h).
struct LaneRanking {
  std::vector<int64_t> total;   // per lane index, saturating
  std::vector<uint32_t> order;  // lane indexes, largest total first; ties keep the store's order (by labels)
};
LaneRanking LanesByTotal(const storage::StackTimeline& timeline);

}  // namespace warpscope::query
