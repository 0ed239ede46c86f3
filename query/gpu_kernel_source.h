// Inside one kernel, from a merged gpu_pc profile (docs/design/gpu_pc.md):
// its sampled instructions in order, folded under their source lines, each
// with its cycles per stall reason, for the source/SASS view; and per kernel
// the share of stalls by class (memory, compute, synchronisation), for the
// insights that ask whether a kernel is memory bound.
//
// gpu_pc stacks run, leaf first: stall reason, instruction, source line
// (optional), kernel, then the launch stack. The view reads the frames
// leafward of the kernel and ignores the launch stacks (a kernel's
// instructions are the same whoever launched it).
//
// Threading: plain functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "query/insights.h"
#include "storage/profile_store.h"

namespace warpscope::query {

// What a stall reason is waiting for (CUPTI's name, with or without the
// smsp__pcsamp_warps_issue_stalled_ prefix and the _not_issued suffix).
enum class StallClass { kMemory, kCompute, kSync, kIssuing, kOther };
StallClass ClassifyStall(std::string_view cupti_name);
const char* StallClassName(StallClass c);  // "memory", "compute", "sync", "issuing", "other"

struct KernelStalls {
  std::string kernel;       // display name
  std::string system_name;  // mangled
  int64_t value = 0;        // cycles sampled in the kernel
  // Shares of `value` by StallClass (sum 1).
  double memory = 0, compute = 0, sync = 0, issuing = 0, other = 0;
};
// Every kernel of the profile, the most sampled first.
std::vector<KernelStalls> KernelStallShares(const storage::MergedProfile& profile);

// memory_bound from PC samples: each kernel of `profile` (the gpu_pc
// profile of the request's range and selector) that holds at least
// memory_bound_kernel_share of its cycles and was stalled on memory at
// least memory_bound_stall_share of them; a hint whose saving is not
// estimated (0), ranked by the kernel's share.
std::vector<Insight> FindMemoryBoundKernels(const storage::MergedProfile& profile, const InsightInputs& in,
                                            const InsightOptions& options, const std::string& selector);

// A cubin that a kernel's sampled instructions came from (their mapping's
// build id, model/cubin_hash.h), and whether the server's store holds it.
struct KernelCubin {
  std::string hash;
  bool stored = false;
  uint64_t bytes = 0;  // 0 when not stored
};

// The cubins of the kernel named `kernel`'s sampled instructions, sorted,
// each once (none for instructions without a cubin mapping).
std::vector<std::string> KernelCubinHashes(const storage::MergedProfile& profile, std::string_view kernel);

// The source/SASS view of the kernel named `kernel` (its mangled or display
// name) as JSON (docs/api.md, "Inside a kernel"), with `cubins` (from
// KernelCubinHashes and the store). NotFound when the profile has no
// samples in it.
StatusOr<std::string> RenderKernelSourceJson(const storage::MergedProfile& profile, std::string_view kernel,
                                             const std::vector<KernelCubin>& cubins = {});

}  // namespace warpscope::query
