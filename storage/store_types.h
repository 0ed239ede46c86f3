// Resolved (query-side) values every storage backend returns: stacks with
// their frames' names, label sets, profile types. Backends keep their own ids
// internally; nothing above storage/ sees them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "proto/warpscope/v1/ingest.pb.h"

namespace warpscope::storage {

// One frame of a resolved stack. An inlined location expands to one frame per
// line, innermost first; a location without lines gives one frame with empty
// function fields.
struct ResolvedFrame {
  uint64_t location_id = 0;  // backend-specific; equal ids mean equal frames within one answer
  uint64_t address = 0;
  warpscope::v1::FrameKind kind = warpscope::v1::FRAME_KIND_NATIVE;
  std::string function_name;
  std::string system_name;
  std::string file;
  int64_t line = 0;
  std::string mapping_file;  // "" when the location has no mapping
  std::string build_id;
  bool inlined = false;  // true for every line of a location except its last (outermost)
  friend bool operator==(const ResolvedFrame&, const ResolvedFrame&) = default;
};

using Labels = std::vector<std::pair<std::string, std::string>>;  // sorted by name

struct ProfileTypeInfo {
  std::string name;
  std::string sample_unit;
  int64_t period_nanos = 0;
};

// A metric the agents send (IngestBatch.metric_types: GPU metrics from NVML).
// One name sent in two units is two MetricInfos.
struct MetricInfo {
  std::string name;  // "gpu_utilization", "gpu_power", ...
  std::string unit;  // "percent", "watts", ...
  friend bool operator==(const MetricInfo&, const MetricInfo&) = default;
};

}  // namespace warpscope::storage
