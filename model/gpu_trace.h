// The GPU activity trace of one upload window: CUDA kernels, memcpy and
// memset as they ran (CUPTI records, on the host's Unix clock), for the
// server's kernel table, per-stream timeline and trace export. The gpu_time
// profile counts every kernel; this trace may be thinned (per process and
// second only the first `trace_per_second` activities are kept), and the
// coverage rows say how much. Plain data; built on the sampling thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/gpu_activity.h"

namespace warpscope {

struct KernelName {
  std::string name;         // demangled
  std::string system_name;  // as CUPTI reported it (mangled)
};

// An activity of the agent's trace: its process and its kernel's name.
struct GpuActivityRecord : GpuActivityFields {
  uint32_t pid = 0;
  std::shared_ptr<const KernelName> name;  // kernels only; null for memcpy/memset
};

// Per process and second: activities recorded by the library and kept in the
// trace; the trace of that second is complete up to complete_until_unix_nanos.
struct GpuTraceCoverageRow {
  uint32_t pid = 0;
  int64_t second_unix_nanos = 0;
  uint64_t recorded = 0;
  uint64_t sent = 0;
  int64_t complete_until_unix_nanos = 0;
};

struct GpuTrace {
  std::vector<GpuActivityRecord> activities;
  std::vector<GpuTraceCoverageRow> coverage;
  std::map<uint32_t, std::string> comms;  // process name per pid (the "comm" label)
  bool empty() const { return activities.empty() && coverage.empty(); }
};

}  // namespace warpscope
