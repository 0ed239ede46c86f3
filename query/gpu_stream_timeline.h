// The per-stream GPU timeline of GET /api/v1/gpu/trace: activities grouped
// into lanes of (process label set, device, stream), each with how long the
// stream was busy in the range.
//
//  * Lanes sorted by label set (GpuActivities keeps label sets sorted, so by
//    index), then device, then stream; activities in a lane by start.
//  * busy_ns: the length of the union of the lane's [start, start + duration)
//    intervals clipped to [from_ns, to_ns): overlapping activities (a
//    stream's kernels never overlap, but a clock skew could) count once.
//
// Memory: one index per activity. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/store_types.h"

namespace warpscope::query {

struct GpuStreamLane {
  uint32_t labels = 0;  // index into GpuActivities::label_sets
  uint32_t device = 0;
  uint32_t stream = 0;
  int64_t busy_ns = 0;
  std::vector<uint32_t> activities;  // indexes into GpuActivities::activities, by start
};

std::vector<GpuStreamLane> BuildStreamTimeline(const storage::GpuActivities& in, int64_t from_ns, int64_t to_ns);

// The whole /api/v1/gpu/trace answer (docs/api.md).
std::string RenderGpuTraceJson(const storage::GpuActivities& in, int64_t from_ns, int64_t to_ns);

}  // namespace warpscope::query
