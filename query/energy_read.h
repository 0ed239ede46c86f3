// Reads from a store what the energy answers need (query/energy.h): the GPU
// metrics, the per-process GPU readings, the injection library's GPU time,
// RAPL counters and CPU samples, on one grid of whole-second steps padded
// on both sides. Shared by GET /api/v1/energy and the gpu_energy profile
// type (query/energy_profile.h).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "query/energy.h"
#include "storage/profile_store.h"

namespace warpscope::query {

// The grid over [from_ns, to_ns): 1 s steps, coarser only where the range
// would pass the store's step limit with the padding; padded by at least a
// minute on each side, so that NVML's energy counter (read every 10 s by
// default) has readings on both sides of the range's edges.
EnergyInputs EnergyGrid(int64_t from_ns, int64_t to_ns);

// The selector's matchers on labels every GPU's series has (node, gpu):
// which GPUs to read, whatever the selector says of processes.
Selector GpuSelector(const Selector& selector);
// Whether the selector picks processes (matchers on other labels).
bool SelectsProcesses(const Selector& selector);

struct EnergyReads {
  bool cpu = true;        // CPU samples and RAPL
  bool processes = true;  // per-process GPU readings and GPU time
};

// Fills `in` (made by EnergyGrid) for q's range and selector. GPU metrics
// and every process's GPU readings and GPU time are read with GpuSelector
// (a GPU's joules are shared by every process on it); CPU samples with the
// whole selector. With `selected` set, it receives the (node, pid) of the
// processes the whole selector picks.
Status ReadEnergyInputs(storage::ProfileStore* store, const storage::ProfileQuery& q, const EnergyReads& reads,
                        EnergyInputs* in, std::set<std::pair<std::string, std::string>>* selected = nullptr);

}  // namespace warpscope::query
