// Resolved (query-side) values every storage backend returns: stacks with
// their frames' names, label sets, profile types. Backends keep their own ids
// internally; nothing above storage/ sees them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/gpu_activity.h"
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

// GPU activities: CUDA kernels, memcpys and memsets that ran, as
// the agent's CUPTI trace sent them (IngestBatch.gpu_activities).
using GpuActivityKind = warpscope::GpuActivityKind;

// One activity, resolved: strings and label sets are indexes into the
// answer's tables (GpuActivities), so a kernel launched a million times
// carries its name once.
struct GpuActivity : GpuActivityFields {
  uint32_t labels = 0;       // index into GpuActivities::label_sets
  uint32_t name = 0;         // index into GpuActivities::names: demangled name ("" for memcpy/memset)
  uint32_t system_name = 0;  // index into GpuActivities::names: mangled name
  friend bool operator==(const GpuActivity&, const GpuActivity&) = default;
};

// How much of one process's (label set's) trace of one second was kept: the
// agent sends the first `sent` of `recorded` activities, so the trace is
// complete up to complete_until_ns.
struct GpuTraceCoverage {
  uint32_t labels = 0;  // index into GpuActivities::label_sets
  int64_t second_ns = 0;
  uint64_t recorded = 0;
  uint64_t sent = 0;
  int64_t complete_until_ns = 0;
  friend bool operator==(const GpuTraceCoverage&, const GpuTraceCoverage&) = default;
};

struct GpuActivities {
  std::vector<Labels> label_sets;  // each distinct label set once, sorted
  std::vector<std::string> names;  // each distinct string once, sorted
  std::vector<GpuActivity> activities;  // sorted by start, then labels, device, stream, correlation id
  std::vector<GpuTraceCoverage> coverage;  // sorted by labels, then second
};

}  // namespace warpscope::storage
