// The one place that decides how big the CPU sampler's BPF maps are
// (CONTRIBUTING.md, "BPF"). Kernel memory for the maps must stay bounded on any
// machine, so when a large machine would need more than the caps allow, the
// drain interval shrinks instead of the maps growing.
#pragma once

#include <chrono>
#include <cstdint>

namespace warpscope {

struct CpuSamplerMapSizes {
  uint32_t counts_entries = 0;       // per buffer (there are two)
  uint32_t off_cpu_counts_entries = 0;  // per buffer; 0 without off-CPU time
  uint32_t stacks_entries = 0;       // per buffer (there are two)
  uint32_t seen_pids_entries = 0;
  uint32_t target_pids_entries = 0;
  std::chrono::milliseconds drain_interval{0};  // may be shorter than requested
  uint64_t approx_kernel_bytes = 0;  // preallocated map memory, for logs and the benchmark
};

inline constexpr uint32_t kMinMapEntries = 1024;
inline constexpr uint32_t kMaxCountsEntries = 1u << 17;
inline constexpr uint32_t kMaxStacksEntries = 1u << 14;
inline constexpr std::chrono::milliseconds kMinDrainInterval{100};

// Sizing rule, per buffer: in the worst case every sample of a drain interval
// is a new key with a new user and a new kernel stack. With
//   samples = frequency_hz * num_cpus * drain_interval
// counts hold 2 * samples and stacks hold 2 * samples (headroom for a late
// drain), both rounded up to a power of two and clamped to
// [kMinMapEntries, kMax*Entries]. If 2 * samples exceeds kMaxStacksEntries the
// drain interval is shortened (not below kMinDrainInterval) to fit.
// With off-CPU time (`off_cpu_per_cpu`: the timed waits per CPU per second
// that its sampling aims at, 0 without it), each timed wait counts as a
// sample too: its counts map holds 2 * waits, and the stacks map, which both
// share, 2 * (samples + waits).
CpuSamplerMapSizes ComputeCpuSamplerMapSizes(uint32_t frequency_hz, uint32_t num_cpus,
                                             std::chrono::milliseconds requested_drain_interval,
                                             uint32_t num_target_pids, uint32_t off_cpu_per_cpu = 0);

}  // namespace warpscope
