// The GPU activity rows of an ingest batch are checked one by one before the
// store sees the batch: a row the store would refuse (a duration past a day,
// an unknown kind or launch API, an index out of range, a launch more than a
// day from its kernel) is dropped and counted, and the batch's other rows,
// every other process's kernels among them, are stored. One process's bad
// record used to cost its node the whole batch (a 400 the agent cannot retry).
// The bounds are the store's (storage/embedded/dictionary/batch_validator.h,
// BatchLimits' defaults); the agent checks the same where records enter it
// (agent/collectors/gpu_time/socket/cuda_record_bounds.h) and never sends
// such rows.
//
// Pure function of the batch; any thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "proto/warpscope/v1/ingest.pb.h"

namespace warpscope::server {

inline constexpr int64_t kMaxGpuActivityNanos = 24LL * 3600 * 1'000'000'000;  // a day

// Removes the rows of batch->gpu_activities that are out of bounds, keeping
// the others in order; returns how many were removed.
size_t DropBadGpuActivities(warpscope::v1::IngestBatch* batch);

}  // namespace warpscope::server
