#include "cuda/link_config.h"

#include <algorithm>

namespace warpscope::cuda {

namespace {
uint32_t Or(uint32_t value, uint32_t fallback) { return value != 0 ? value : fallback; }
}  // namespace

LinkConfig ResolveLinkConfig(const ws_cuda_config& wire) {
  LinkConfig c;
  c.mode = wire.mode;
  c.memcpy = (wire.flags & WS_CUDA_CONFIG_MEMCPY) != 0;
  c.memset = (wire.flags & WS_CUDA_CONFIG_MEMSET) != 0;
  c.duty_callbacks = (wire.flags & WS_CUDA_CONFIG_DUTY_CALLBACKS) != 0;
  c.windowed = wire.mode == WS_CUDA_MODE_ADAPTIVE ||
               (wire.mode == WS_CUDA_MODE_DUTY && (wire.flags & WS_CUDA_CONFIG_DUTY_DETACH) != 0);
  c.overhead_budget_ppm = std::clamp<uint32_t>(Or(wire.overhead_budget_ppm, 10000), 100, 500000);
  c.samples_per_sec = std::min<uint32_t>(Or(wire.launch_samples_per_sec, 200), 1000000);
  c.sample_burst = std::min<uint32_t>(Or(wire.launch_sample_burst, c.samples_per_sec), 1000000);
  const bool adaptive = wire.mode == WS_CUDA_MODE_ADAPTIVE;
  c.duty_period_ms = std::clamp<uint32_t>(Or(wire.duty_period_ms, adaptive ? 10000 : 1000), 10, 3600000);
  c.duty_on_ms = std::clamp<uint32_t>(Or(wire.duty_on_ms, adaptive ? 200 : 100), 1, c.duty_period_ms);
  c.flush_interval_ms = std::clamp<uint32_t>(Or(wire.flush_interval_ms, 1000), 10, 60000);
  c.stats_interval_ms = std::clamp<uint32_t>(Or(wire.stats_interval_ms, 1000), 10, 60000);
  c.buffer_bytes = std::clamp<size_t>(Or(wire.activity_buffer_bytes, 1u << 20), 64u << 10, 8u << 20);
  c.buffer_bytes &= ~size_t{7};
  c.buffer_count = std::clamp<size_t>(Or(wire.activity_buffer_count, 16), 1, 64);
  c.outbox_bytes = std::clamp<size_t>(Or(wire.outbox_bytes, 8u << 20), 256u << 10, 256u << 20);
  c.stall_timeout_ms = std::clamp<uint32_t>(Or(wire.stall_timeout_ms, 10000), 100, 600000);
  c.pc_sampling = (wire.flags & WS_CUDA_CONFIG_PC_SAMPLING) != 0;
  c.pc_period_log2 = std::clamp<uint32_t>(Or(wire.pc_sampling_period_log2, 20), 5, 31);
  c.pc_max_pcs = std::clamp<uint32_t>(Or(wire.pc_sampling_max_pcs, 4096), 64, 65536);
  return c;
}

uint64_t PlanWindowPeriodNs(uint64_t on_ns, uint64_t launches, uint64_t fixed_ns, uint32_t budget_ppm,
                            uint64_t max_period_ns) {
  if (on_ns == 0 || budget_ppm == 0) return std::max(on_ns, max_period_ns);
  const double cost_ns = static_cast<double>(launches) * kAttachedLaunchCostNs + static_cast<double>(fixed_ns);
  const double period = cost_ns * 1e6 / budget_ppm;
  // Within a tenth of the window: not worth detaching for.
  if (period <= static_cast<double>(on_ns) * 1.1) return on_ns;
  return std::min<uint64_t>(std::max<uint64_t>(on_ns, max_period_ns), static_cast<uint64_t>(period));
}

}  // namespace warpscope::cuda
