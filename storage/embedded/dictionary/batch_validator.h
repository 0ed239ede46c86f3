// Checks an IngestBatch before anything of it is stored: every index in
// range, label sets well formed, sizes within limits. Pure function of the
// batch; any thread.
#pragma once

#include <cstddef>

#include "base/status.h"
#include "proto/warpscope/v1/ingest.pb.h"

namespace warpscope::dictionary {

struct BatchLimits {
  size_t max_string_bytes = 4096;
  size_t max_labels_per_set = 64;
  size_t max_stack_depth = 1024;
  size_t max_lines_per_location = 64;
  // Metric types in one batch (an agent sends a few dozen NVML metrics).
  size_t max_metric_types = 1024;
  // A sample's value: a count of samples, or nanoseconds (gpu_time) of one
  // (second, label set, stack). 2^50 ns is 13 days in one second, far above
  // any real value and far enough below INT64_MAX that the sums of a
  // store's merges and queries (saturating anyway) stay exact in practice.
  int64_t max_sample_value = int64_t{1} << 50;
  // A profile type's sampling period: 0 (none, e.g. gpu_time in
  // nanoseconds) or within [1 µs, 1 h] (19 Hz is 52.6 ms).
  int64_t min_period_nanos = 1'000;
  int64_t max_period_nanos = 3600LL * 1'000'000'000;
  // A GPU activity's duration: at most a day.
  int64_t max_gpu_duration_nanos = 24LL * 3600 * 1'000'000'000;
};

// OK, or InvalidArgument naming the field and index ("stacks[3].locations[7]:
// index 912 out of range, batch has 900 locations"). Profile types need a
// period of 0 or within the limits (negative periods mark metric types in
// the dictionary: dictionary_types.h), samples a value in [1,
// max_sample_value] whose value x period is at most max_sample_value too
// (nanoseconds), metric types a non-empty name, metric points a finite
// value, GPU activities a known kind and a duration in [0,
// max_gpu_duration_nanos], coverage rows sent <= recorded. Times are not
// checked here: rows outside what a store keeps are dropped and counted by
// the store (storage/ingest_time_bounds.h).
Status ValidateBatch(const warpscope::v1::IngestBatch& batch, const BatchLimits& limits = {});

}  // namespace warpscope::dictionary
