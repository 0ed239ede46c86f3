// What one GPU activity is: a CUDA kernel, memcpy or memset as it ran (a
// CUPTI record on the host's Unix clock). The agent's trace
// (GpuActivityRecord, model/gpu_trace.h) and the stores' answers
// (storage::GpuActivity) are this plus how each names its process and
// kernel; the upload carries it as v1.GpuActivity, the injection library's
// socket as ws_cuda_kernel / ws_cuda_memop (proto/). Plain data; any thread.
#pragma once

#include <cctype>
#include <cstdint>
#include <string_view>

namespace warpscope {

// The numbers are v1.GpuActivityKind's (proto/warpscope/v1/ingest.proto).
enum class GpuActivityKind : uint8_t { kKernel = 0, kMemcpy = 1, kMemset = 2 };

// The API call that launched a kernel; the numbers are v1.GpuLaunchApi's.
enum class GpuLaunchApi : uint8_t {
  kUnknown = 0,
  kCudaLaunchKernel = 1,
  kCudaLaunchKernelEx = 2,
  kCudaLaunchCooperativeKernel = 3,
  kCudaGraphLaunch = 4,
  kCuLaunchKernel = 5,
  kCuLaunchKernelEx = 6,
  kCuLaunchCooperativeKernel = 7,
  kCuGraphLaunch = 8,
};
inline constexpr uint32_t kGpuLaunchApiCount = 9;

// "cudaLaunchKernel", ...; "" for kUnknown or a number out of range.
inline const char* GpuLaunchApiName(uint32_t api) {
  static constexpr const char* kNames[kGpuLaunchApiCount] = {
      "",       "cudaLaunchKernel",  "cudaLaunchKernelExC",       "cudaLaunchCooperativeKernel", "cudaGraphLaunch",
      "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cuGraphLaunch"};
  return api < kGpuLaunchApiCount ? kNames[api] : "";
}

// NCCL's kernels (collectives, send/recv): communication, not compute. By
// name, mangled or not ("ncclDevKernel_AllReduce_Sum_f32_RING_LL",
// "_Z20ncclDevKernel_GenericP11ncclDevComm").
inline bool IsNcclKernel(std::string_view name) {
  for (size_t i = 0; i + 4 <= name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(name[i])) == 'n' &&
        std::tolower(static_cast<unsigned char>(name[i + 1])) == 'c' &&
        std::tolower(static_cast<unsigned char>(name[i + 2])) == 'c' &&
        std::tolower(static_cast<unsigned char>(name[i + 3])) == 'l') {
      return true;
    }
  }
  return false;
}

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
  // Kernels: the launch call on the CPU (launch_start_ns 0: unknown).
  int64_t launch_start_ns = 0;  // unix nanoseconds, host clock
  int64_t launch_duration_ns = 0;
  uint32_t launch_tid = 0;  // the launching thread, in the process's own pid namespace
  GpuLaunchApi launch_api = GpuLaunchApi::kUnknown;
  friend bool operator==(const GpuActivityFields&, const GpuActivityFields&) = default;
};

}  // namespace warpscope
