// One upload window as the batches it is sent in.
//
// Each source of the window goes in batches of its own: the CPU profile
// (with the agent's counters), the off-CPU profile, the GPU-time profile, the GPU activity trace
// and the GPU metrics. So one source's size, or the server's refusal of one
// batch (400 for a bad record, 413 for size), never costs another source its
// data: the node's CPU samples never ride with what a local user can inflate
// through the CUDA socket. A source whose batch would be larger than
// max_batch_bytes (serialized) is cut into as many batches as it takes, by
// rows (samples, activities, points); counters and the trace's coverage rows
// travel with the source's first batch. A single row larger than the limit
// on its own is left out and counted (the server's limits on strings and
// stack depth keep rows far smaller).
//
// The batches come in sequence order (CPU first); the caller numbers them.
// Pure function; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/gpu_trace.h"
#include "agent/export/ingest_batch_encoder.h"
#include "model/metric_reading.h"
#include "model/profile.h"
#include "agent/process/process_labels.h"
#include "base/status.h"
#include "proto/warpscope/v1/ingest.pb.h"

namespace warpscope {

// Below the server's default limits on one request: 16 MiB as sent (zstd
// never makes a batch more than a fraction of a percent larger) and 64 MiB
// decompressed.
inline constexpr size_t kDefaultMaxBatchBytes = 12u << 20;

enum class WindowSource { kCpu, kOffCpu, kGpuTime, kGpuWait, kGpuPc, kGpuTrace, kGpuMetrics };
const char* WindowSourceName(WindowSource source);

struct WindowSources {
  const Profile* cpu = nullptr;       // required: the window's start and length, and the counters
  const Profile* gpu_time = nullptr;  // may be null; no batch without samples
  const GpuTrace* trace = nullptr;    // may be null; no batch when empty
  const std::vector<MetricReading>* metrics = nullptr;  // may be null; no batch when empty
  const Profile* off_cpu = nullptr;  // may be null; no batch without samples
  const Profile* gpu_wait = nullptr;  // may be null; no batch without samples
  const Profile* gpu_pc = nullptr;    // may be null; no batch without samples
};

struct WindowBatch {
  WindowSource source = WindowSource::kCpu;
  v1::IngestBatch batch;  // sequence 0: numbered by the caller, in order
};

// Added to, window after window.
struct WindowBatchStats {
  uint64_t batches = 0;         // made
  uint64_t split = 0;           // batches made beyond one per source: a source over the limit
  uint64_t rows_too_large = 0;  // rows left out: larger than the limit on their own
};

StatusOr<std::vector<WindowBatch>> EncodeWindowBatches(const WindowSources& sources, const IngestBatchHeader& header,
                                                       const ProcessLabelMap& labels, size_t max_batch_bytes,
                                                       WindowBatchStats* stats);

}  // namespace warpscope
