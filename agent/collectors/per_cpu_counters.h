// Reads a BPF_MAP_TYPE_PERCPU_ARRAY of u64 counters (every collector's drop
// and event counters) as sums over all possible CPUs.
#pragma once

#include <bpf/libbpf.h>

#include <cstdint>
#include <vector>

namespace warpscope {

// Fills out[i] with the sum over CPUs of counter i, for i < n. Counters that
// cannot be read stay 0.
inline void SumPerCpuCounters(const bpf_map* map, uint32_t n, uint64_t* out) {
  const int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) return;
  std::vector<uint64_t> per_cpu(static_cast<size_t>(ncpus));
  for (uint32_t i = 0; i < n; ++i) {
    out[i] = 0;
    if (bpf_map__lookup_elem(map, &i, sizeof(i), per_cpu.data(), per_cpu.size() * sizeof(uint64_t), 0)) continue;
    for (uint64_t v : per_cpu) out[i] += v;
  }
}

}  // namespace warpscope
