// What one GPU activity is: a CUDA kernel, memcpy or memset as it ran (a
// CUPTI record on the host's Unix clock). The agent's trace
// (GpuActivityRecord, model/gpu_trace.h) and the stores' answers
// (storage::GpuActivity) are this plus how each names its process and
// kernel; the upload carries it as v1.GpuActivity, the injection library's
// socket as ws_cuda_kernel / ws_cuda_memop (proto/). Plain data; any thread.
#pragma once

#include <cstdint>

namespace warpscope {

// The numbers are v1.GpuActivityKind's (proto/warpscope/v1/ingest.proto).
enum class GpuActivityKind : uint8_t { kKernel = 0, kMemcpy = 1, kMemset = 2 };

struct GpuActivityFields {
  int64_t start_ns = 0;  // unix nanoseconds, host clock
  int64_t duration_ns = 0;
  GpuActivityKind kind = GpuActivityKind::kKernel;
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t correlation_id = 0;
  uint64_t graph_id = 0;  // 0 unless launched from a CUDA graph
  // Kernels: the launch configuration and resources.
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t dynamic_shared_bytes = 0;
  // Memcpy and memset.
  uint64_t bytes = 0;
  uint32_t copy_kind = 0;  // memcpy: CUpti_ActivityMemcpyKind
  friend bool operator==(const GpuActivityFields&, const GpuActivityFields&) = default;
};

}  // namespace warpscope
