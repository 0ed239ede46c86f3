// Conversion of one completed CUPTI activity buffer into wire records.
//
// Each kernel record gets its launch call's time and thread from `launches`
// (by correlation id). Kernel records are read as CUpti_ActivityKernel10 (CUDA 13 headers); every
// field used sits in the prefix that older record versions share, so records
// of an older CUPTI read the same. Memcpy: CUpti_ActivityMemcpy6; memset:
// CUpti_ActivityMemset4.
//
// Threading: called from the buffer-completed callback, on whatever thread
// CUPTI uses; touches only the outbox (locked) and atomic counters.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "cuda/cupti_library.h"
#include "cuda/launch_times.h"
#include "cuda/wire_outbox.h"

namespace warpscope::cuda {

struct ConversionCounters {
  std::atomic<uint64_t> kernel_records{0};
  std::atomic<uint64_t> memop_records{0};
  std::atomic<uint64_t> kernels_before_window{0};  // left out by the window filter (launched outside the window)
};

// Which kernel records to keep, and the epoch to stamp on them.
struct KernelRecordFilter {
  uint32_t attach_epoch = 0;
  uint32_t first_correlation = 0;  // 0: keep all; else drop smaller ids (launched before the window)
  bool bounded = false;            // the window closed: drop ids above last_correlation (launched after it)
  uint32_t last_correlation = 0;
};

void ConvertActivityBuffer(const CuptiFunctions& fn, uint8_t* buffer, size_t valid_size, WireOutbox& outbox,
                           ConversionCounters& counters, const KernelRecordFilter& filter,
                           const LaunchTimeTable& launches) noexcept;

}  // namespace warpscope::cuda
