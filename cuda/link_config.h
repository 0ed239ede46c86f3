// LinkConfig: the agent's ws_cuda_config with the library's defaults filled
// in (a zero field means "default") and every value clamped to a safe range,
// so that no config, however odd, makes the library unbounded.
//
// Threading: a plain value; built and used by the link thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "proto/cuda/cuda_wire.h"

namespace warpscope::cuda {

// ws_cuda_config with the library's defaults filled in and ranges clamped.
struct LinkConfig {
  uint32_t mode = WS_CUDA_MODE_EXACT;
  bool memcpy = false;
  bool memset = false;
  bool duty_callbacks = false;  // WS_CUDA_CONFIG_DUTY_CALLBACKS
  // Recording in windows with CUPTI detached between them (WS_CUDA_MODE_ADAPTIVE,
  // or WS_CUDA_MODE_DUTY with WS_CUDA_CONFIG_DUTY_DETACH).
  bool windowed = false;
  uint32_t overhead_budget_ppm = 10000;
  uint32_t samples_per_sec = 200;
  uint32_t sample_burst = 200;
  uint32_t duty_on_ms = 100;
  uint32_t duty_period_ms = 1000;
  uint32_t flush_interval_ms = 1000;
  uint32_t stats_interval_ms = 1000;
  size_t buffer_bytes = 1u << 20;
  size_t buffer_count = 16;
  size_t outbox_bytes = 8u << 20;
  uint32_t stall_timeout_ms = 10000;
  // WS_CUDA_CONFIG_PC_SAMPLING: PC sampling on every context while kernel
  // activity is recorded, one sample per SM every 2^pc_period_log2 cycles,
  // read pc_max_pcs PCs per CUPTI call.
  bool pc_sampling = false;
  uint32_t pc_period_log2 = 20;
  uint32_t pc_max_pcs = 4096;
};
LinkConfig ResolveLinkConfig(const ws_cuda_config& wire);

// What recording one launch costs the launching thread while CUPTI is
// attached (callbacks and kernel activity): exact mode runs a loop of ~110k
// launches/s at 0.78-0.83 of its speed on the H200 (docs/benchmarks.md),
// about 2-2.5 us per launch; the bound takes the higher cost.
constexpr uint64_t kAttachedLaunchCostNs = 2500;

// Adaptive mode: the period (window start to next window start) that keeps
// the estimated cost of recording within the budget, from the window just
// closed: `launches` seen in `on_ns` of recording, plus `fixed_ns` that
// attaching and detaching took. Never shorter than on_ns; at most max_period_ns.
// A result equal to on_ns means "record all the time" (nothing to detach for).
uint64_t PlanWindowPeriodNs(uint64_t on_ns, uint64_t launches, uint64_t fixed_ns, uint32_t budget_ppm,
                            uint64_t max_period_ns);

}  // namespace warpscope::cuda
