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
};

// OK, or InvalidArgument naming the field and index ("stacks[3].locations[7]:
// index 912 out of range, batch has 900 locations"). Profile types need a
// period >= 0 (negative periods mark metric types in the dictionary:
// dictionary_types.h), metric types a non-empty name, metric points a finite
// value, GPU activities a known kind and a duration >= 0, coverage rows
// sent <= recorded.
Status ValidateBatch(const warpscope::v1::IngestBatch& batch, const BatchLimits& limits = {});

}  // namespace warpscope::dictionary
