// The kernel table of GET /api/v1/gpu/kernels: per (kind, name) over a set
// of GPU activities, how often it ran and how long.
//
//  * Durations: total, mean (total / launches, rounded down), p50 and p95 by
//    nearest rank (the smallest duration with at least 50% / 95% of the
//    launches at or below it), max.
//  * Launch configuration: the most common (grid, block) pair (ties: the
//    smallest), and how many distinct pairs ran. Memcpy and memset rows have
//    none (zeros).
//  * share: total / the total of every row (0 when that is 0).
//  * Rows sorted by total descending, then kind, then name.
//
// Memory: one duration per activity while building (8 bytes each). Pure
// functions; any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "storage/store_types.h"

namespace warpscope::query {

struct KernelStats {
  storage::GpuActivityKind kind = storage::GpuActivityKind::kKernel;
  std::string name;
  std::string system_name;  // of the first launch seen
  uint64_t launches = 0;
  int64_t total_ns = 0;
  int64_t mean_ns = 0;
  int64_t p50_ns = 0;
  int64_t p95_ns = 0;
  int64_t max_ns = 0;
  std::array<uint32_t, 3> grid = {0, 0, 0};
  std::array<uint32_t, 3> block = {0, 0, 0};
  uint64_t configs = 0;  // distinct (grid, block) pairs
  double share = 0;
};

struct KernelTable {
  uint64_t activities = 0;
  int64_t total_ns = 0;  // sum of every activity's duration
  std::vector<KernelStats> kernels;
};

KernelTable BuildKernelTable(const storage::GpuActivities& activities);

// "kernel", "memcpy", "memset".
const char* GpuActivityKindName(storage::GpuActivityKind kind);

// /api/v1/gpu/kernels: the kernel table of `activities` with the range, the
// activity count, how many the libraries recorded and sent (coverage) and
// each kernel's row (docs/api.md).
std::string RenderKernelTableJson(const storage::GpuActivities& activities, int64_t from_ns, int64_t to_ns);

// Nearest-rank percentile of `sorted` (ascending, non-empty), p in (0, 100].
int64_t NearestRankPercentile(const std::vector<int64_t>& sorted, int p);

}  // namespace warpscope::query
