// LinkConfig: the agent's ws_cuda_config with the library's defaults filled
// in (a zero field means "default") and every value clamped to a safe range,
// so that no config, however odd, makes the library unbounded.
//
// Threading: a plain value; built and used by the link thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/protocol/cuda_wire.h"

namespace warpscope::cuda {

// ws_cuda_config with the library's defaults filled in and ranges clamped.
struct LinkConfig {
  uint32_t mode = WS_CUDA_MODE_EXACT;
  bool memcpy = false;
  bool memset = false;
  bool duty_callbacks = false;  // WS_CUDA_CONFIG_DUTY_CALLBACKS
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
};
LinkConfig ResolveLinkConfig(const ws_cuda_config& wire);

}  // namespace warpscope::cuda
