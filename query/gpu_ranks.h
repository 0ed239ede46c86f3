// GET /api/v1/gpu/ranks: the processes of a multi-GPU job side by side
// (docs/api.md). A rank is one (node, pid, device) of the GPU activities; a
// data-parallel job (torchrun) runs one per GPU.
//
//  * Per rank: kernels, GPU time, of it NCCL's (communication).
//  * Per kernel (the heaviest `max_kernels` by total GPU time over all ranks):
//    each rank's launches, mean and p50 duration, and the spread (the
//    slowest rank's mean over the fastest's).
//  * Steps: each collective (an NCCL kernel) ends on every rank at about the
//    same time, because no rank can finish it before all have joined. NCCL
//    kernels of different ranks whose ends lie within `step_tolerance_ns` of
//    the group's first end form one step; the rank that started its kernel
//    last is that step's straggler, and the others waited (in the
//    collective) from their own start to its start. A rank that kept others
//    waiting most often is the job's straggler.
//
// Pure functions; any thread. Memory: the kernels of the range, a few
// words each.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "storage/store_types.h"

namespace warpscope::query {

struct RankKey {
  std::string node, pid, comm;
  uint32_t device = 0;
  friend bool operator<(const RankKey& a, const RankKey& b) {
    return std::tie(a.node, a.pid, a.device, a.comm) < std::tie(b.node, b.pid, b.device, b.comm);
  }
};

struct RankStats {
  RankKey rank;
  uint64_t kernels = 0;
  int64_t gpu_ns = 0;
  int64_t communication_ns = 0;
  uint64_t straggler_steps = 0;  // steps this rank was last to join
  int64_t caused_wait_ns = 0;    // the others' waiting in those steps, summed
};

struct RankKernelRow {
  size_t rank = 0;  // index into RankComparison::ranks
  uint64_t launches = 0;
  int64_t mean_ns = 0;
  int64_t p50_ns = 0;
};

struct RankKernel {
  std::string name, system_name;
  int64_t total_ns = 0;
  double spread = 0;  // slowest mean / fastest mean (1 with one rank)
  std::vector<RankKernelRow> rows;
};

struct RankStep {
  int64_t end_ns = 0;        // the first end of the step's collective
  size_t straggler = 0;      // index into RankComparison::ranks
  int64_t wait_ns = 0;       // the last start less the first
  uint32_t ranks = 0;        // ranks in the step
};

struct RankComparison {
  std::vector<RankStats> ranks;  // by node, pid, device
  std::vector<RankKernel> kernels;
  std::vector<RankStep> steps;   // by time
  int straggler = -1;            // index into ranks: last in most steps (-1: no steps)
};

struct RankOptions {
  int64_t step_tolerance_ns = 2'000'000;
  size_t max_kernels = 20;
  size_t max_steps = 2000;  // the latest steps listed (all are counted)
};

RankComparison CompareRanks(const storage::GpuActivities& activities, const RankOptions& options = {});
std::string RenderRanksJson(const RankComparison& comparison, int64_t from_ns, int64_t to_ns);

}  // namespace warpscope::query
