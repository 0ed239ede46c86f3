// The one place that sizes the unwinder's BPF maps (bpf/include/ws_unwind.h).
// All four maps are preallocated, so their size is kernel memory held for the
// agent's lifetime: the budget is explicit and the rule is unit-tested.
#pragma once

#include <cstdint>

namespace warpscope {

struct UnwindMapSizes {
  uint32_t entries = 0;        // unwind rows (8 bytes each), all binaries together
  uint32_t pages = 0;          // page-index entries (one per 64 KiB of covered code)
  uint32_t exec_mappings = 0;  // executable mappings, all processes together
  uint32_t processes = 0;      // described processes
  uint64_t approx_kernel_bytes = 0;
};

inline constexpr uint64_t kDefaultUnwindTableBytes = 64ull << 20;

// Rule: entries = table_bytes / 8 (at least 64 Ki, at most 128 Mi rows).
// Pages: measured tables have one 64 KiB page per ~400 rows (libc, python3,
// libLLVM); entries / 64 gives 6x headroom, at least 4096. Mappings and
// processes are fixed: 64 Ki mappings (a node with 16 Ki processes averages 4
// executable mappings each; a PyTorch process has ~300), 16 Ki processes.
UnwindMapSizes ComputeUnwindMapSizes(uint64_t table_bytes = kDefaultUnwindTableBytes);

}  // namespace warpscope
