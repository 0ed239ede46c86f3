#include "cuda/activity_converter.h"

#include <cupti_activity.h>

#include <cstddef>

namespace warpscope::cuda {

namespace {

// The fields read below (the last is graphId) must sit in the prefix that
// CUpti_ActivityKernel8 (CUDA 12.0, 200 bytes) and later versions share, at
// the same offsets (checked against cupti_activity_deprecated.h of CUDA 13:
// graphId at 156 in versions 8, 9 and 10).
static_assert(offsetof(CUpti_ActivityKernel10, graphId) + sizeof(uint32_t) <= 200,
              "kernel fields used come from the shared prefix");
static_assert(offsetof(CUpti_ActivityKernel10, graphId) == 156 && offsetof(CUpti_ActivityKernel10, name) == 104,
              "CUpti_ActivityKernel10 layout changed: re-check older CUPTI versions");

ws_cuda_kernel FromKernel(const CUpti_ActivityKernel10& k) {
  ws_cuda_kernel out{};
  out.start_ns = k.start;
  out.end_ns = k.end;
  out.graph_node_id = k.graphNodeId;
  out.correlation_id = k.correlationId;
  out.device_id = k.deviceId;
  out.context_id = k.contextId;
  out.stream_id = k.streamId;
  out.graph_id = k.graphId;
  out.grid_x = k.gridX;
  out.grid_y = k.gridY;
  out.grid_z = k.gridZ;
  out.block_x = k.blockX;
  out.block_y = k.blockY;
  out.block_z = k.blockZ;
  out.static_shared_memory = k.staticSharedMemory;
  out.dynamic_shared_memory = k.dynamicSharedMemory;
  out.registers_per_thread = k.registersPerThread;
  out.launch_type = k.launchType;
  if (k.start == 0 || k.end < k.start) out.flags |= WS_CUDA_RECORD_FLAG_NO_TIME;
  return out;
}

ws_cuda_memop FromMemcpy(const CUpti_ActivityMemcpy6& m) {
  ws_cuda_memop out{};
  out.start_ns = m.start;
  out.end_ns = m.end;
  out.bytes = m.bytes;
  out.graph_node_id = m.graphNodeId;
  out.correlation_id = m.correlationId;
  out.device_id = m.deviceId;
  out.context_id = m.contextId;
  out.stream_id = m.streamId;
  out.graph_id = m.graphId;
  out.op = WS_CUDA_MEMOP_MEMCPY;
  out.kind = m.copyKind;
  out.src_kind = m.srcKind;
  out.dst_kind = m.dstKind;
  return out;
}

ws_cuda_memop FromMemset(const CUpti_ActivityMemset4& m) {
  ws_cuda_memop out{};
  out.start_ns = m.start;
  out.end_ns = m.end;
  out.bytes = m.bytes;
  out.graph_node_id = m.graphNodeId;
  out.correlation_id = m.correlationId;
  out.device_id = m.deviceId;
  out.context_id = m.contextId;
  out.stream_id = m.streamId;
  out.graph_id = m.graphId;
  out.op = WS_CUDA_MEMOP_MEMSET;
  out.kind = static_cast<uint8_t>(m.memoryKind);
  return out;
}

}  // namespace

void ConvertActivityBuffer(const CuptiFunctions& fn, uint8_t* buffer, size_t valid_size, WireOutbox& outbox,
                           ConversionCounters& counters, const KernelRecordFilter& filter,
                           const LaunchTimeTable& launches) noexcept {
  try {
    CUpti_Activity* record = nullptr;
    uint64_t kernels = 0, memops = 0, before = 0;
    while (fn.cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
      switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
          const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
          if ((filter.first_correlation != 0 && k->correlationId < filter.first_correlation) ||
              (filter.bounded && k->correlationId > filter.last_correlation)) {
            before++;
            break;
          }
          ws_cuda_kernel out = FromKernel(*k);
          out.attach_epoch = filter.attach_epoch;
          LaunchTime launch;
          if (launches.Find(filter.attach_epoch, k->correlationId, &launch)) {
            out.launch_host_ns = launch.enter_ns;
            out.launch_duration_ns = launch.duration_ns;
            out.launch_tid = launch.tid;
            out.launch_kind = launch.kind;
            out.launch_flags = launch.flags;
          }
          outbox.AddKernel(out, k->name);
          kernels++;
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY:
          outbox.AddMemop(FromMemcpy(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(record)));
          memops++;
          break;
        case CUPTI_ACTIVITY_KIND_MEMSET:
          outbox.AddMemop(FromMemset(*reinterpret_cast<const CUpti_ActivityMemset4*>(record)));
          memops++;
          break;
        default:
          break;
      }
    }
    counters.kernel_records.fetch_add(kernels, std::memory_order_relaxed);
    counters.memop_records.fetch_add(memops, std::memory_order_relaxed);
    counters.kernels_before_window.fetch_add(before, std::memory_order_relaxed);
  } catch (...) {
    // Out of memory inside the outbox: the rest of this buffer is lost; the
    // stats show fewer records than launches.
  }
}

}  // namespace warpscope::cuda
