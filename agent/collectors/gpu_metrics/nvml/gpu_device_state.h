// Internals of NvmlReader shared by its two source files
// (gpu_metrics_collector.cc: devices; gpu_process_metrics.cc: processes,
// XID events and GPM). Owned and used by the collector's thread only.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/collectors/gpu_metrics/nvml/gpu_metric_names.h"
#include "agent/collectors/gpu_metrics/nvml/nvml_reader.h"
#include "agent/collectors/gpu_metrics/nvml/nvml_abi.h"

namespace warpscope {

// One NVML query and the metrics it feeds: the unit that is turned off when
// a device does not support the query.
enum class GpuMetricSource : uint8_t {
  kUtilization,  // gpu_utilization, gpu_memory_utilization
  kMemory,       // gpu_memory_used, gpu_memory_total
  kSmClock,
  kMemoryClock,
  kSmClockMax,
  kMemoryClockMax,
  kPower,
  kPowerLimit,
  kEnergy,
  kTemperature,
  kTemperatureSlowdown,
  kPcieTx,
  kPcieRx,
  kClockEventReasons,
  kEccCorrected,
  kEccUncorrected,
  kXid,
  kGpmSmActivity,
  kGpmSmOccupancy,
  kGpmTensorActivity,
  kGpmDramBandwidth,
  kProcessUtilization,  // gpu_process_sm_utilization, gpu_process_memory_utilization
  kProcessMemory,       // gpu_process_memory_used
};
inline constexpr int kGpuMetricSourceCount = static_cast<int>(GpuMetricSource::kProcessMemory) + 1;

// The metrics of a source, for DisabledMetrics() (one or two).
struct GpuSourceMetrics {
  const gpu_metric::MetricSpec* first;
  const gpu_metric::MetricSpec* second;  // or null
};
GpuSourceMetrics MetricsOfSource(GpuMetricSource source);

// Codes that say the call will never work on this device and driver; all
// others may pass later (a GPU that fell off the bus can come back after a
// reset), so they are counted, not acted on.
inline bool NvmlMeansUnsupported(nvml::nvmlReturn_t code) {
  return code == nvml::NVML_ERROR_NOT_SUPPORTED || code == nvml::NVML_ERROR_NO_PERMISSION ||
         code == nvml::NVML_ERROR_FUNCTION_NOT_FOUND || code == nvml::NVML_ERROR_ARGUMENT_VERSION_MISMATCH ||
         code == nvml::NVML_ERROR_DEPRECATED;
}

using GpuLabels = std::vector<std::pair<std::string, std::string>>;

struct GpuDeviceState {
  unsigned int index = 0;
  nvml::nvmlDevice_t handle = nullptr;
  GpuLabels labels;  // gpu, gpu_name, pci_bus_id, uuid

  std::array<bool, kGpuMetricSourceCount> off{};
  bool IsOff(GpuMetricSource source) const { return off[static_cast<int>(source)]; }

  // Static values read in Open(); a transient failure there leaves them
  // unread and Collect() tries again.
  bool have_sm_clock_max = false;
  bool have_memory_clock_max = false;
  bool have_slowdown = false;
  unsigned int sm_clock_max = 0;
  unsigned int memory_clock_max = 0;
  unsigned int slowdown_celsius = 0;

  // Deprecated-API fallbacks: set when the current call is missing or
  // unsupported and the older one exists.
  bool temperature_legacy = false;
  bool memory_legacy = false;  // nvmlDeviceGetMemoryInfo (v1) instead of _v2
  bool clock_reasons_legacy = false;
  bool ecc_legacy = false;  // nvmlDeviceGetTotalEccErrors instead of field values
  // PCIe throughput from GPM (averaged over the interval, no extra driver
  // call) instead of nvmlDeviceGetPcieThroughput (a 20 ms window).
  bool pcie_from_gpm = false;

  // GPM: two sample buffers, swapped after each interval.
  nvml::nvmlGpmSample_t gpm_previous = nullptr;
  nvml::nvmlGpmSample_t gpm_current = nullptr;
  bool gpm_have_previous = false;

  // Per-process queries. lastSeenTimeStamp of the next utilization query:
  // the newest sample timestamp returned so far (CPU microseconds).
  unsigned long long process_last_seen_us = 0;
  std::vector<nvml::nvmlProcessUtilizationSample_t> utilization_samples;
  std::vector<nvml::nvmlProcessInfo_t> running_processes;

  // XID events of the current interval: (xid, count).
  std::vector<std::pair<unsigned long long, uint32_t>> xid_counts;
};

// Writes readings into the caller's vector, reusing the readings (and their
// strings' and label vectors' capacity) left there by the previous interval.
class GpuReadingSink {
 public:
  GpuReadingSink(std::vector<GpuReading>* out, int64_t time_unix_nanos) : out_(out), time_(time_unix_nanos) {}

  void Emit(const GpuDeviceState& device, const gpu_metric::MetricSpec& spec, double value) {
    Next(device, spec, value);
  }
  // With one label beyond the device's, kept in key order.
  GpuReading& EmitWithLabel(const GpuDeviceState& device, const gpu_metric::MetricSpec& spec, std::string_view key,
                            std::string_view label_value, double value);
  // Drops the readings of earlier intervals that this one did not reuse.
  void Finish() { out_->resize(count_); }
  size_t count() const { return count_; }

 private:
  GpuReading& Next(const GpuDeviceState& device, const gpu_metric::MetricSpec& spec, double value);

  std::vector<GpuReading>* out_;
  int64_t time_;
  size_t count_ = 0;
};

}  // namespace warpscope
