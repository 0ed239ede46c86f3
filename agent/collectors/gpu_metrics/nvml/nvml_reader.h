// NvmlReader: reads GPU and per-process GPU metrics from NVML, one
// call of Collect() per collection interval (names and units:
// gpu_metric_names.h).
//
// Every metric is optional per device. A call the device or driver does not
// support (NOT_SUPPORTED, NO_PERMISSION, FUNCTION_NOT_FOUND, a version
// mismatch, or a function missing from an older libnvidia-ml) turns off the
// metrics it feeds on that device only, once, with the reason kept for
// DisabledMetrics() and logged at info level; the other metrics keep coming.
// Any other error (GPU_IS_LOST, UNKNOWN, ...) skips that reading, is counted
// in ErrorCount(), and the call is tried again next time.
//
// Cost: handles and static facts (name, UUID, PCI bus id, max clocks,
// slowdown temperature, GPM support) are read once in Open(); a steady-state
// CollectInto() reuses its buffers and the caller's readings, so it does not
// allocate once the process set is stable.
//
// Threading: owned by one thread, the agent's GPU metrics thread, which makes
// every call, Open() and the destructor included. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/metric_reading.h"
#include "agent/collectors/gpu_metrics/nvml/nvml_library.h"
#include "base/status.h"

namespace warpscope {

// {metric, unit, labels sorted by key, value, time_unix_nanos}: the agent's
// one reading type, so the upload and Prometheus paths take these as they
// are. Labels: gpu, gpu_name, pci_bus_id, uuid, plus pid or xid.
using GpuReading = MetricReading;

struct DisabledGpuMetric {
  int gpu = 0;          // NVML device index
  std::string metric;   // "gpu_power"
  std::string reason;   // "nvmlDeviceGetPowerUsage: NVML_ERROR_NOT_SUPPORTED"
};

struct GpuMetricsOptions {
  // --nvml-library: a soname searched on the loader path, or a file path.
  std::string library_path = kDefaultNvmlLibrary;
  // gpu_energy, and gpu_pcie_tx/rx on GPUs without GPM, are read on the
  // first Collect() and then on every Nth only. On an H200 (r580) one energy
  // read costs ~4 ms of CPU and one legacy PCIe read ~1 ms of CPU plus 20 ms
  // asleep in the driver: at every interval they would cost more than all
  // other metrics together. Energy is a counter, so rates stay exact.
  int slow_metrics_every = 10;
  // GPM metrics (SM activity, occupancy, tensor, DRAM bandwidth; PCIe on GPM
  // GPUs) on every Nth Collect(), each reading covering the N intervals since
  // the previous one: a GPM sample plus a metrics request cost ~1.4 ms of CPU
  // per 1 s interval on an H200.
  int gpm_every = 1;
  // Per-process utilization on every Nth Collect(). One
  // nvmlDeviceGetProcessUtilization costs ~2.9 ms of CPU on an H200, more
  // than everything else together (all of it every second: 0.36 % of a core;
  // this every 5th: 0.12 %). On the H200 the driver returns one sample per
  // process per query, so these readings come every N intervals, stamped
  // with the second of the driver's sample. Per-process memory stays at
  // every interval (it is cheap).
  int process_utilization_every = 5;
};

// Internals, in gpu_device_state.h.
struct GpuDeviceState;
class GpuReadingSink;
enum class GpuMetricSource : uint8_t;

class NvmlReader {
 public:
  // Loads NVML and opens every GPU it reports. Fails (kUnavailable, message
  // "GPU metrics off: <why>") without a library, driver or any usable GPU;
  // the agent logs that once and runs without GPU metrics.
  static StatusOr<std::unique_ptr<NvmlReader>> Open(const GpuMetricsOptions& options);

  ~NvmlReader();
  NvmlReader(const NvmlReader&) = delete;
  NvmlReader& operator=(const NvmlReader&) = delete;

  // One reading per supported metric and device, per process with GPU
  // activity, and per XID seen since the previous call, all stamped
  // now_unix_nanos. GPM metrics need two samples, so they start with the
  // second call and cover the time between the last two calls.
  std::vector<GpuReading> Collect(int64_t now_unix_nanos);
  // The same into `readings` (replaced), reusing its strings and vectors.
  void CollectInto(int64_t now_unix_nanos, std::vector<GpuReading>* readings);

  int DeviceCount() const { return static_cast<int>(devices_.size()); }
  // In the order they were turned off.
  const std::vector<DisabledGpuMetric>& DisabledMetrics() const { return disabled_; }
  // Failed NVML calls that did not turn a metric off, since Open().
  uint64_t ErrorCount() const { return error_count_; }
  uint64_t ReadingsEmitted() const { return readings_emitted_; }

 private:
  NvmlReader(std::unique_ptr<NvmlLibrary> library, const GpuMetricsOptions& options);

  // Open() steps.
  void OpenDevice(unsigned int index, nvml::nvmlDevice_t handle);
  void DisableMissingFunctions(GpuDeviceState& device);
  void ReadStaticValues(GpuDeviceState& device);
  void OpenGpm(GpuDeviceState& device);
  // PCIe throughput back to nvmlDeviceGetPcieThroughput (or off without it).
  void StopGpmPcie(GpuDeviceState& device, const std::string& why);
  void OpenXidEvents();

  // Collect() steps, one NVML concern each.
  // slow_turn: this Collect() also reads the slow metrics.
  void CollectDeviceMetrics(GpuDeviceState& device, bool slow_turn, GpuReadingSink& sink);
  void CollectEcc(GpuDeviceState& device, GpuReadingSink& sink);
  void CollectGpm(GpuDeviceState& device, GpuReadingSink& sink);
  void CollectProcessUtilization(GpuDeviceState& device, GpuReadingSink& sink, int64_t now_unix_nanos);
  void CollectProcessMemory(GpuDeviceState& device, GpuReadingSink& sink);
  void CollectXidEvents(GpuReadingSink& sink);

  // True for NVML_SUCCESS. Otherwise turns `source` off on `device` when the
  // code means "not supported", or counts an error.
  bool Check(GpuDeviceState& device, GpuMetricSource source, const char* function, nvml::nvmlReturn_t code);
  void Disable(GpuDeviceState& device, GpuMetricSource source, const std::string& reason);
  // Several sources for one reason: one log line.
  void DisableAll(GpuDeviceState& device, const GpuMetricSource* sources, size_t count, const std::string& reason);
  std::string MissingReason(const char* function) const;

  // Declared first: destroyed last, after the GPM samples and event set.
  std::unique_ptr<NvmlLibrary> library_;
  const NvmlFunctions& fn_;
  std::vector<std::unique_ptr<GpuDeviceState>> devices_;
  nvml::nvmlEventSet_t xid_event_set_ = nullptr;
  std::unique_ptr<nvml::nvmlGpmMetricsGet_t> gpm_request_;  // 8 KiB, reused
  std::vector<DisabledGpuMetric> disabled_;
  const int slow_metrics_every_;
  const int gpm_every_;
  const int process_utilization_every_;
  uint64_t collect_count_ = 0;
  uint64_t error_count_ = 0;
  uint64_t readings_emitted_ = 0;
};

}  // namespace warpscope
