#include "agent/collectors/cpu/map_sizing.h"

#include <algorithm>

#include "bpf/intf/cpu_sampler.h"

namespace warpscope {
namespace {

uint32_t RoundUpPow2Clamped(uint64_t n, uint32_t lo, uint32_t hi) {
  uint64_t p = 1;
  while (p < n) p <<= 1;
  return static_cast<uint32_t>(std::clamp<uint64_t>(p, lo, hi));
}

// Bytes per preallocated hash-map element: key + value + the kernel's
// htab_elem header (about 48 bytes), rounded to 8.
uint64_t HashElemBytes(uint64_t key, uint64_t value) { return ((key + 7) / 8 + (value + 7) / 8) * 8 + 48; }

}  // namespace

CpuSamplerMapSizes ComputeCpuSamplerMapSizes(uint32_t frequency_hz, uint32_t num_cpus,
                                             std::chrono::milliseconds requested_drain_interval,
                                             uint32_t num_target_pids, uint32_t off_cpu_per_cpu) {
  CpuSamplerMapSizes sizes;
  const uint64_t cpus = std::max<uint32_t>(1, num_cpus);
  const uint64_t waits_per_second = uint64_t{off_cpu_per_cpu} * cpus;
  const uint64_t per_second = std::max<uint64_t>(1, uint64_t{frequency_hz} * cpus + waits_per_second);
  auto drain = std::max(requested_drain_interval, kMinDrainInterval);
  // Shorten the interval so that 2 * samples fits in kMaxStacksEntries.
  const uint64_t max_samples = kMaxStacksEntries / 2;
  const auto fitting = std::chrono::milliseconds(max_samples * 1000 / per_second);
  if (drain > fitting) drain = std::max(fitting, kMinDrainInterval);
  sizes.drain_interval = drain;

  const uint64_t samples = (per_second * static_cast<uint64_t>(drain.count()) + 999) / 1000;
  const uint64_t waits = (waits_per_second * static_cast<uint64_t>(drain.count()) + 999) / 1000;
  sizes.counts_entries = RoundUpPow2Clamped(2 * (samples - waits), kMinMapEntries, kMaxCountsEntries);
  sizes.off_cpu_counts_entries = waits == 0 ? 0 : RoundUpPow2Clamped(2 * waits, kMinMapEntries, kMaxCountsEntries);
  sizes.stacks_entries = RoundUpPow2Clamped(2 * samples, kMinMapEntries, kMaxStacksEntries);
  sizes.seen_pids_entries = 16384;
  sizes.target_pids_entries = std::max<uint32_t>(1, num_target_pids);

  sizes.approx_kernel_bytes =
      2 * (uint64_t{sizes.counts_entries} + sizes.off_cpu_counts_entries) *
          HashElemBytes(sizeof(ws_sample_key), sizeof(uint64_t)) +
      2 * sizes.stacks_entries * HashElemBytes(sizeof(uint64_t), sizeof(ws_stack)) +
      sizes.seen_pids_entries * HashElemBytes(sizeof(uint32_t), 1) + 256 * 1024 /* proc_events */;
  return sizes;
}

}  // namespace warpscope
