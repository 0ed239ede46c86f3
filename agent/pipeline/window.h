// Window: what the agent collected over one window of its loop (an upload
// interval for `run`, the whole recording for `record`), from every
// collector, handed to a sink in one piece. Plain data; the sampling thread
// fills it and the sink takes it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/gpu_trace.h"
#include "model/metric_reading.h"
#include "model/profile.h"

namespace warpscope {

// A CUDA module's binary that a library sent, named by its content hash
// (model/cubin_hash.h). The bytes are shared with whoever holds the cubin
// (the collector keeps it for symbolizing); nobody changes them.
struct WindowCubin {
  std::string hash;
  std::shared_ptr<const std::string> bytes;
};

struct Window {
  int64_t start_unix_nanos = 0;
  int64_t duration_nanos = 0;  // set by the loop once every collector finished the window
  // The last window: collectors hand over everything they still hold.
  bool final = false;

  Profile cpu;                      // the CPU sampler's profile of the window
  std::optional<Profile> off_cpu;   // blocked time under the stacks threads blocked in (when on)
  std::optional<Profile> gpu_time;  // CUDA kernels' GPU time under their launch stacks
  std::optional<Profile> gpu_wait;  // host threads' time blocked in CUDA synchronisation, under their stacks
  // PC samples inside kernels (estimated GPU cycles), under the kernels'
  // launch stacks, then kernel, source line, instruction and stall reason
  std::optional<Profile> gpu_pc;
  GpuTrace gpu_trace;               // the kernels, copies and sets as they ran
  // Cubins that arrived in the window, each once for the agent's life: the
  // gpu_pc profile's instruction frames name them (their mapping's build
  // id), and `run` uploads them to the server's cubin store.
  std::vector<WindowCubin> cubins;
  std::vector<MetricReading> metrics;
  // Every collector's counters (drops, errors, table sizes), in the order
  // they were set; a sink adds its own and reports them with the CPU profile.
  std::vector<ProfileCounter> counters;
};

}  // namespace warpscope
