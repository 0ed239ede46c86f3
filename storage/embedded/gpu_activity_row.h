// How the embedded store keeps GPU activities (IngestBatch.gpu_activities)
// and trace coverage rows: in global dictionary ids, beside the sample rows of
// the same WAL record (head_record.h), head and segment (segment_gpu_section.h).
//
// Unlike sample rows they are never merged: every activity is one row, and a
// segment holds exactly the activities of its WAL records (the duplicate
// check on (agent, sequence) keeps a re-sent batch out).
//
// Plain values; any thread.
#pragma once

#include <cstdint>
#include <vector>

namespace warpscope {

struct GpuActivityRow {
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  uint64_t series_id = 0;       // the process's label set
  uint64_t name_id = 0;         // dictionary string id
  uint64_t system_name_id = 0;  // dictionary string id
  uint64_t stack_id = 0;        // launch stack; 0 = not sampled
  uint64_t correlation_id = 0;
  uint64_t graph_id = 0;
  uint64_t bytes = 0;
  uint32_t device = 0;
  uint32_t stream = 0;
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t dynamic_shared_bytes = 0;
  uint32_t copy_kind = 0;
  uint32_t kind = 0;  // storage::GpuActivityKind
  // Kernels: the launch call (launch_start_ns 0: unknown).
  int64_t launch_start_ns = 0;
  int64_t launch_duration_ns = 0;
  uint32_t launch_tid = 0;
  uint32_t launch_api = 0;  // GpuLaunchApi
  friend bool operator==(const GpuActivityRow&, const GpuActivityRow&) = default;
};

struct GpuCoverageRow {
  int64_t second_ns = 0;
  uint64_t series_id = 0;
  uint64_t recorded = 0;
  uint64_t sent = 0;
  int64_t complete_until_ns = 0;
  friend bool operator==(const GpuCoverageRow&, const GpuCoverageRow&) = default;
};

// The GPU part of one batch, a head, or a segment.
struct GpuRows {
  std::vector<GpuActivityRow> activities;
  std::vector<GpuCoverageRow> coverage;
  bool empty() const { return activities.empty() && coverage.empty(); }
  size_t size() const { return activities.size() + coverage.size(); }
  void Append(const GpuRows& other) {
    activities.insert(activities.end(), other.activities.begin(), other.activities.end());
    coverage.insert(coverage.end(), other.coverage.begin(), other.coverage.end());
  }
};

}  // namespace warpscope
