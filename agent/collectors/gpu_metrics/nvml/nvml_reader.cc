#include "agent/collectors/gpu_metrics/nvml/nvml_reader.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "agent/collectors/gpu_metrics/nvml/gpu_device_state.h"
#include "base/logging.h"

namespace warpscope {

using namespace nvml;  // NOLINT: the NVML names read best unqualified here
namespace m = gpu_metric;
using Source = GpuMetricSource;

namespace {

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A NUL-terminated string NVML wrote into `buffer`, or "" on failure.
std::string CString(const char* buffer, size_t size) { return std::string(buffer, strnlen(buffer, size)); }

// The bitmask as read, and a 0/1 gpu_clocks_throttled per reason (NVML's
// nvmlClocksEventReason* bits; the same in the legacy throttle reasons).
void EmitClockEventReasons(GpuReadingSink& sink, const GpuDeviceState& d, unsigned long long reasons) {
  constexpr unsigned long long kSwPowerCap = 0x4, kHwSlowdown = 0x8, kSwThermal = 0x20, kHwThermal = 0x40,
                               kHwPowerBrake = 0x80;
  sink.Emit(d, m::kClockEventReasons, static_cast<double>(reasons));
  sink.EmitWithLabel(d, m::kClocksThrottled, m::kLabelReason, "hw_slowdown", (reasons & kHwSlowdown) ? 1 : 0);
  sink.EmitWithLabel(d, m::kClocksThrottled, m::kLabelReason, "power", (reasons & (kSwPowerCap | kHwPowerBrake)) ? 1 : 0);
  sink.EmitWithLabel(d, m::kClocksThrottled, m::kLabelReason, "thermal", (reasons & (kSwThermal | kHwThermal)) ? 1 : 0);
}

}  // namespace

GpuSourceMetrics MetricsOfSource(GpuMetricSource source) {
  switch (source) {
    case Source::kUtilization: return {&m::kUtilization, &m::kMemoryUtilization};
    case Source::kMemory: return {&m::kMemoryUsed, &m::kMemoryTotal};
    case Source::kSmClock: return {&m::kSmClock, nullptr};
    case Source::kMemoryClock: return {&m::kMemoryClock, nullptr};
    case Source::kSmClockMax: return {&m::kSmClockMax, nullptr};
    case Source::kMemoryClockMax: return {&m::kMemoryClockMax, nullptr};
    case Source::kPower: return {&m::kPower, nullptr};
    case Source::kPowerLimit: return {&m::kPowerLimit, nullptr};
    case Source::kEnergy: return {&m::kEnergy, nullptr};
    case Source::kTemperature: return {&m::kTemperature, nullptr};
    case Source::kTemperatureSlowdown: return {&m::kTemperatureSlowdown, nullptr};
    case Source::kPcieTx: return {&m::kPcieTx, nullptr};
    case Source::kPcieRx: return {&m::kPcieRx, nullptr};
    case Source::kClockEventReasons: return {&m::kClockEventReasons, nullptr};
    case Source::kEccCorrected: return {&m::kEccCorrected, nullptr};
    case Source::kEccUncorrected: return {&m::kEccUncorrected, nullptr};
    case Source::kXid: return {&m::kXidErrors, nullptr};
    case Source::kGpmSmActivity: return {&m::kSmActivity, nullptr};
    case Source::kGpmSmOccupancy: return {&m::kSmOccupancy, nullptr};
    case Source::kGpmTensorActivity: return {&m::kTensorActivity, nullptr};
    case Source::kGpmDramBandwidth: return {&m::kDramBandwidth, nullptr};
    case Source::kProcessUtilization: return {&m::kProcessSmUtilization, &m::kProcessMemoryUtilization};
    case Source::kProcessMemory: return {&m::kProcessMemoryUsed, nullptr};
  }
  return {&m::kUtilization, nullptr};
}

GpuReading& GpuReadingSink::Next(const GpuDeviceState& device, const gpu_metric::MetricSpec& spec, double value) {
  if (count_ == out_->size()) out_->emplace_back();
  GpuReading& r = (*out_)[count_++];
  r.metric.assign(spec.name);
  r.unit.assign(spec.unit);
  r.labels = device.labels;  // element-wise assignment: keeps capacity
  r.value = value;
  r.time_unix_nanos = time_;
  return r;
}

GpuReading& GpuReadingSink::EmitWithLabel(const GpuDeviceState& device, const gpu_metric::MetricSpec& spec,
                                          std::string_view key, std::string_view label_value, double value) {
  GpuReading& r = Next(device, spec, value);
  auto at = std::lower_bound(r.labels.begin(), r.labels.end(), key,
                             [](const auto& label, std::string_view k) { return label.first < k; });
  r.labels.emplace(at, std::string(key), std::string(label_value));
  return r;
}

NvmlReader::NvmlReader(std::unique_ptr<NvmlLibrary> library, const GpuMetricsOptions& options)
    : library_(std::move(library)),
      fn_(library_->fn()),
      gpm_request_(std::make_unique<nvmlGpmMetricsGet_t>()),
      slow_metrics_every_(std::max(1, options.slow_metrics_every)),
      gpm_every_(std::max(1, options.gpm_every)),
      process_utilization_every_(std::max(1, options.process_utilization_every)) {}

NvmlReader::~NvmlReader() {
  for (auto& device : devices_) {
    if (device->gpm_previous != nullptr) fn_.nvmlGpmSampleFree(device->gpm_previous);
    if (device->gpm_current != nullptr) fn_.nvmlGpmSampleFree(device->gpm_current);
  }
  if (xid_event_set_ != nullptr) fn_.nvmlEventSetFree(xid_event_set_);
}

StatusOr<std::unique_ptr<NvmlReader>> NvmlReader::Open(const GpuMetricsOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<NvmlLibrary> library, NvmlLibrary::Open(options.library_path));
  const NvmlFunctions& fn = library->fn();
  if (fn.nvmlDeviceGetCount_v2 == nullptr || fn.nvmlDeviceGetHandleByIndex_v2 == nullptr) {
    return UnavailableError("GPU metrics off: " + library->path() + " lacks nvmlDeviceGetCount_v2 (driver too old)");
  }
  unsigned int count = 0;
  const nvmlReturn_t counted = fn.nvmlDeviceGetCount_v2(&count);
  if (counted != NVML_SUCCESS) {
    return UnavailableError("GPU metrics off: nvmlDeviceGetCount_v2: " + NvmlErrorName(counted));
  }
  if (count == 0) return UnavailableError("GPU metrics off: NVML reports no GPUs");

  std::unique_ptr<NvmlReader> collector(new NvmlReader(std::move(library), options));
  std::string last_failure;
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t handle = nullptr;
    const nvmlReturn_t got = fn.nvmlDeviceGetHandleByIndex_v2(i, &handle);
    if (got != NVML_SUCCESS) {
      // A GPU hidden by the container's cgroup, or one that fell off the bus.
      last_failure = "nvmlDeviceGetHandleByIndex_v2(" + std::to_string(i) + "): " + NvmlErrorName(got);
      LOG_WARNING() << "GPU " << i << " skipped: " << last_failure;
      continue;
    }
    collector->OpenDevice(i, handle);
  }
  if (collector->devices_.empty()) return UnavailableError("GPU metrics off: no GPU could be opened: " + last_failure);
  collector->OpenXidEvents();
  return collector;
}

void NvmlReader::OpenDevice(unsigned int index, nvmlDevice_t handle) {
  auto device = std::make_unique<GpuDeviceState>();
  device->index = index;
  device->handle = handle;

  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  nvmlPciInfo_t pci = {};
  // Labels stay empty where NVML cannot tell; the gpu index always identifies the series.
  if (fn_.nvmlDeviceGetName == nullptr || fn_.nvmlDeviceGetName(handle, name, sizeof(name)) != NVML_SUCCESS) name[0] = 0;
  if (fn_.nvmlDeviceGetUUID == nullptr || fn_.nvmlDeviceGetUUID(handle, uuid, sizeof(uuid)) != NVML_SUCCESS) uuid[0] = 0;
  if (fn_.nvmlDeviceGetPciInfo_v3 == nullptr || fn_.nvmlDeviceGetPciInfo_v3(handle, &pci) != NVML_SUCCESS) pci.busId[0] = 0;
  device->labels = {
      {m::kLabelGpu, std::to_string(index)},
      {m::kLabelGpuName, CString(name, sizeof(name))},
      {m::kLabelPciBusId, CString(pci.busId, sizeof(pci.busId))},
      {m::kLabelUuid, CString(uuid, sizeof(uuid))},
  };
  // Room for typical process counts, so that the first intervals do not grow them.
  device->utilization_samples.resize(16);
  device->running_processes.resize(16);

  devices_.push_back(std::move(device));
  GpuDeviceState& d = *devices_.back();
  DisableMissingFunctions(d);
  ReadStaticValues(d);
  OpenGpm(d);
  if (!d.pcie_from_gpm && fn_.nvmlDeviceGetPcieThroughput == nullptr) {
    const Source pcie[] = {Source::kPcieTx, Source::kPcieRx};
    DisableAll(d, pcie, 2, MissingReason("nvmlDeviceGetPcieThroughput"));
  }
}

std::string NvmlReader::MissingReason(const char* function) const {
  return std::string(function) + " missing from " + Basename(library_->path()) + " (older driver?)";
}

void NvmlReader::DisableMissingFunctions(GpuDeviceState& d) {
  struct Need {
    Source source;
    bool present;
    const char* function;
  };
  const Need needs[] = {
      {Source::kUtilization, fn_.nvmlDeviceGetUtilizationRates != nullptr, "nvmlDeviceGetUtilizationRates"},
      {Source::kMemory, fn_.nvmlDeviceGetMemoryInfo_v2 != nullptr || fn_.nvmlDeviceGetMemoryInfo != nullptr,
       "nvmlDeviceGetMemoryInfo_v2 and nvmlDeviceGetMemoryInfo"},
      {Source::kSmClock, fn_.nvmlDeviceGetClockInfo != nullptr, "nvmlDeviceGetClockInfo"},
      {Source::kMemoryClock, fn_.nvmlDeviceGetClockInfo != nullptr, "nvmlDeviceGetClockInfo"},
      {Source::kSmClockMax, fn_.nvmlDeviceGetMaxClockInfo != nullptr, "nvmlDeviceGetMaxClockInfo"},
      {Source::kMemoryClockMax, fn_.nvmlDeviceGetMaxClockInfo != nullptr, "nvmlDeviceGetMaxClockInfo"},
      {Source::kPower, fn_.nvmlDeviceGetPowerUsage != nullptr, "nvmlDeviceGetPowerUsage"},
      {Source::kPowerLimit, fn_.nvmlDeviceGetEnforcedPowerLimit != nullptr, "nvmlDeviceGetEnforcedPowerLimit"},
      {Source::kEnergy, fn_.nvmlDeviceGetTotalEnergyConsumption != nullptr, "nvmlDeviceGetTotalEnergyConsumption"},
      {Source::kTemperature,
       fn_.nvmlDeviceGetTemperatureV != nullptr || fn_.nvmlDeviceGetTemperature != nullptr,
       "nvmlDeviceGetTemperatureV and nvmlDeviceGetTemperature"},
      {Source::kTemperatureSlowdown, fn_.nvmlDeviceGetTemperatureThreshold != nullptr,
       "nvmlDeviceGetTemperatureThreshold"},
      {Source::kClockEventReasons,
       fn_.nvmlDeviceGetCurrentClocksEventReasons != nullptr || fn_.nvmlDeviceGetCurrentClocksThrottleReasons != nullptr,
       "nvmlDeviceGetCurrentClocksEventReasons and nvmlDeviceGetCurrentClocksThrottleReasons"},
      {Source::kEccCorrected,
       fn_.nvmlDeviceGetFieldValues != nullptr || fn_.nvmlDeviceGetTotalEccErrors != nullptr,
       "nvmlDeviceGetFieldValues and nvmlDeviceGetTotalEccErrors"},
      {Source::kEccUncorrected,
       fn_.nvmlDeviceGetFieldValues != nullptr || fn_.nvmlDeviceGetTotalEccErrors != nullptr,
       "nvmlDeviceGetFieldValues and nvmlDeviceGetTotalEccErrors"},
      {Source::kXid,
       fn_.nvmlEventSetCreate != nullptr && fn_.nvmlDeviceRegisterEvents != nullptr &&
           fn_.nvmlEventSetWait_v2 != nullptr && fn_.nvmlEventSetFree != nullptr,
       "nvmlEventSetCreate/nvmlDeviceRegisterEvents/nvmlEventSetWait_v2/nvmlEventSetFree"},
      {Source::kProcessUtilization, fn_.nvmlDeviceGetProcessUtilization != nullptr,
       "nvmlDeviceGetProcessUtilization"},
      {Source::kProcessMemory, fn_.nvmlDeviceGetComputeRunningProcesses_v3 != nullptr,
       "nvmlDeviceGetComputeRunningProcesses_v3"},
  };
  for (const Need& need : needs) {
    if (!need.present) Disable(d, need.source, MissingReason(need.function));
  }
  d.temperature_legacy = fn_.nvmlDeviceGetTemperatureV == nullptr;
  d.memory_legacy = fn_.nvmlDeviceGetMemoryInfo_v2 == nullptr;
  d.clock_reasons_legacy = fn_.nvmlDeviceGetCurrentClocksEventReasons == nullptr;
  d.ecc_legacy = fn_.nvmlDeviceGetFieldValues == nullptr;
}

void NvmlReader::ReadStaticValues(GpuDeviceState& d) {
  if (!d.IsOff(Source::kSmClockMax) && !d.have_sm_clock_max) {
    d.have_sm_clock_max = Check(d, Source::kSmClockMax, "nvmlDeviceGetMaxClockInfo(SM)",
                                fn_.nvmlDeviceGetMaxClockInfo(d.handle, NVML_CLOCK_SM, &d.sm_clock_max));
  }
  if (!d.IsOff(Source::kMemoryClockMax) && !d.have_memory_clock_max) {
    d.have_memory_clock_max = Check(d, Source::kMemoryClockMax, "nvmlDeviceGetMaxClockInfo(MEM)",
                                    fn_.nvmlDeviceGetMaxClockInfo(d.handle, NVML_CLOCK_MEM, &d.memory_clock_max));
  }
  if (!d.IsOff(Source::kTemperatureSlowdown) && !d.have_slowdown) {
    d.have_slowdown = Check(
        d, Source::kTemperatureSlowdown, "nvmlDeviceGetTemperatureThreshold(SLOWDOWN)",
        fn_.nvmlDeviceGetTemperatureThreshold(d.handle, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &d.slowdown_celsius));
  }
}

bool NvmlReader::Check(GpuDeviceState& d, GpuMetricSource source, const char* function,
                                nvmlReturn_t code) {
  if (code == NVML_SUCCESS) return true;
  if (NvmlMeansUnsupported(code)) {
    Disable(d, source, std::string(function) + ": " + NvmlErrorName(code));
  } else {
    ++error_count_;
    LOG_DEBUG() << "GPU " << d.index << ": " << function << ": " << NvmlErrorName(code);
  }
  return false;
}

void NvmlReader::Disable(GpuDeviceState& d, GpuMetricSource source, const std::string& reason) {
  DisableAll(d, &source, 1, reason);
}

void NvmlReader::DisableAll(GpuDeviceState& d, const GpuMetricSource* sources, size_t count,
                                     const std::string& reason) {
  std::string names;
  for (size_t i = 0; i < count; ++i) {
    bool& off = d.off[static_cast<int>(sources[i])];
    if (off) continue;
    off = true;
    const GpuSourceMetrics metrics = MetricsOfSource(sources[i]);
    for (const m::MetricSpec* spec : {metrics.first, metrics.second}) {
      if (spec == nullptr) continue;
      disabled_.push_back({static_cast<int>(d.index), spec->name, reason});
      names += (names.empty() ? "" : ", ") + std::string(spec->name);
    }
  }
  if (!names.empty()) LOG_INFO() << "GPU " << d.index << ": " << names << " off: " << reason;
}

std::vector<GpuReading> NvmlReader::Collect(int64_t now_unix_nanos) {
  std::vector<GpuReading> readings;
  CollectInto(now_unix_nanos, &readings);
  return readings;
}

void NvmlReader::CollectInto(int64_t now_unix_nanos, std::vector<GpuReading>* readings) {
  GpuReadingSink sink(readings, now_unix_nanos);
  const bool slow_turn = collect_count_ % static_cast<uint64_t>(slow_metrics_every_) == 0;
  const bool gpm_turn = collect_count_ % static_cast<uint64_t>(gpm_every_) == 0;
  const bool process_turn = collect_count_ % static_cast<uint64_t>(process_utilization_every_) == 0;
  ++collect_count_;
  for (auto& device : devices_) {
    CollectDeviceMetrics(*device, slow_turn, sink);
    CollectEcc(*device, sink);
    if (gpm_turn) CollectGpm(*device, sink);
    if (process_turn) CollectProcessUtilization(*device, sink, now_unix_nanos);
    CollectProcessMemory(*device, sink);
  }
  CollectXidEvents(sink);
  sink.Finish();
  readings_emitted_ += sink.count();
}

void NvmlReader::CollectDeviceMetrics(GpuDeviceState& d, bool slow_turn, GpuReadingSink& sink) {
  const nvmlDevice_t h = d.handle;
  if (!d.IsOff(Source::kUtilization)) {
    nvmlUtilization_t u = {};
    if (Check(d, Source::kUtilization, "nvmlDeviceGetUtilizationRates", fn_.nvmlDeviceGetUtilizationRates(h, &u))) {
      sink.Emit(d, m::kUtilization, u.gpu);
      sink.Emit(d, m::kMemoryUtilization, u.memory);
    }
  }
  if (!d.IsOff(Source::kMemory)) {
    if (!d.memory_legacy) {
      // v2 reports the driver's reservation apart, so "used" is what
      // nvidia-smi shows (v1's "used" includes the reservation).
      nvmlMemory_v2_t memory = {};
      memory.version = nvmlMemory_v2;
      const nvmlReturn_t code = fn_.nvmlDeviceGetMemoryInfo_v2(h, &memory);
      if (NvmlMeansUnsupported(code) && fn_.nvmlDeviceGetMemoryInfo != nullptr) {
        LOG_INFO() << "GPU " << d.index << ": nvmlDeviceGetMemoryInfo_v2: " << NvmlErrorName(code)
                   << "; using nvmlDeviceGetMemoryInfo";
        d.memory_legacy = true;
      } else if (Check(d, Source::kMemory, "nvmlDeviceGetMemoryInfo_v2", code)) {
        sink.Emit(d, m::kMemoryUsed, static_cast<double>(memory.used));
        sink.Emit(d, m::kMemoryReserved, static_cast<double>(memory.reserved));
        sink.Emit(d, m::kMemoryTotal, static_cast<double>(memory.total));
      }
    }
    nvmlMemory_t memory = {};
    if (d.memory_legacy &&
        Check(d, Source::kMemory, "nvmlDeviceGetMemoryInfo", fn_.nvmlDeviceGetMemoryInfo(h, &memory))) {
      sink.Emit(d, m::kMemoryUsed, static_cast<double>(memory.used));
      sink.Emit(d, m::kMemoryTotal, static_cast<double>(memory.total));
    }
  }
  unsigned int value = 0;
  if (!d.IsOff(Source::kSmClock) &&
      Check(d, Source::kSmClock, "nvmlDeviceGetClockInfo(SM)", fn_.nvmlDeviceGetClockInfo(h, NVML_CLOCK_SM, &value))) {
    sink.Emit(d, m::kSmClock, value);
  }
  if (!d.IsOff(Source::kMemoryClock) &&
      Check(d, Source::kMemoryClock, "nvmlDeviceGetClockInfo(MEM)",
            fn_.nvmlDeviceGetClockInfo(h, NVML_CLOCK_MEM, &value))) {
    sink.Emit(d, m::kMemoryClock, value);
  }
  ReadStaticValues(d);  // no NVML call once all three are read
  if (d.have_sm_clock_max) sink.Emit(d, m::kSmClockMax, d.sm_clock_max);
  if (d.have_memory_clock_max) sink.Emit(d, m::kMemoryClockMax, d.memory_clock_max);
  // NVML reports milliwatts and millijoules.
  if (!d.IsOff(Source::kPower) &&
      Check(d, Source::kPower, "nvmlDeviceGetPowerUsage", fn_.nvmlDeviceGetPowerUsage(h, &value))) {
    sink.Emit(d, m::kPower, value / 1000.0);
  }
  // Re-read every time: an administrator can change the limit at any moment.
  if (!d.IsOff(Source::kPowerLimit) &&
      Check(d, Source::kPowerLimit, "nvmlDeviceGetEnforcedPowerLimit", fn_.nvmlDeviceGetEnforcedPowerLimit(h, &value))) {
    sink.Emit(d, m::kPowerLimit, value / 1000.0);
  }
  unsigned long long value64 = 0;
  if (slow_turn && !d.IsOff(Source::kEnergy) &&
      Check(d, Source::kEnergy, "nvmlDeviceGetTotalEnergyConsumption",
            fn_.nvmlDeviceGetTotalEnergyConsumption(h, &value64))) {
    sink.Emit(d, m::kEnergy, static_cast<double>(value64) / 1000.0);
  }
  if (!d.IsOff(Source::kTemperature)) {
    if (!d.temperature_legacy) {
      // nvmlDeviceGetTemperature is deprecated in CUDA 13; the versioned call replaces it.
      nvmlTemperature_v1_t t = {};
      t.version = nvmlTemperature_v1;
      t.sensorType = NVML_TEMPERATURE_GPU;
      const nvmlReturn_t code = fn_.nvmlDeviceGetTemperatureV(h, &t);
      if (NvmlMeansUnsupported(code) && fn_.nvmlDeviceGetTemperature != nullptr) {
        LOG_INFO() << "GPU " << d.index << ": nvmlDeviceGetTemperatureV: " << NvmlErrorName(code)
                   << "; using nvmlDeviceGetTemperature";
        d.temperature_legacy = true;
      } else if (Check(d, Source::kTemperature, "nvmlDeviceGetTemperatureV", code)) {
        sink.Emit(d, m::kTemperature, t.temperature);
      }
    }
    if (d.temperature_legacy &&
        Check(d, Source::kTemperature, "nvmlDeviceGetTemperature",
              fn_.nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU, &value))) {
      sink.Emit(d, m::kTemperature, value);
    }
  }
  if (d.have_slowdown) sink.Emit(d, m::kTemperatureSlowdown, d.slowdown_celsius);
  // KB/s, each call counting bytes over 20 ms inside the driver. GPUs with
  // GPM get these from CollectGpm instead.
  const bool legacy_pcie_turn = slow_turn && !d.pcie_from_gpm;
  if (legacy_pcie_turn && !d.IsOff(Source::kPcieTx) &&
      Check(d, Source::kPcieTx, "nvmlDeviceGetPcieThroughput(TX)",
            fn_.nvmlDeviceGetPcieThroughput(h, NVML_PCIE_UTIL_TX_BYTES, &value))) {
    sink.Emit(d, m::kPcieTx, value * 1024.0);
  }
  if (legacy_pcie_turn && !d.IsOff(Source::kPcieRx) &&
      Check(d, Source::kPcieRx, "nvmlDeviceGetPcieThroughput(RX)",
            fn_.nvmlDeviceGetPcieThroughput(h, NVML_PCIE_UTIL_RX_BYTES, &value))) {
    sink.Emit(d, m::kPcieRx, value * 1024.0);
  }
  if (!d.IsOff(Source::kClockEventReasons)) {
    if (!d.clock_reasons_legacy) {
      const nvmlReturn_t code = fn_.nvmlDeviceGetCurrentClocksEventReasons(h, &value64);
      if (NvmlMeansUnsupported(code) && fn_.nvmlDeviceGetCurrentClocksThrottleReasons != nullptr) {
        d.clock_reasons_legacy = true;
      } else if (Check(d, Source::kClockEventReasons, "nvmlDeviceGetCurrentClocksEventReasons", code)) {
        EmitClockEventReasons(sink, d, value64);
      }
    }
    if (d.clock_reasons_legacy &&
        Check(d, Source::kClockEventReasons, "nvmlDeviceGetCurrentClocksThrottleReasons",
              fn_.nvmlDeviceGetCurrentClocksThrottleReasons(h, &value64))) {
      EmitClockEventReasons(sink, d, value64);
    }
  }
}

namespace {

double FieldNumber(const nvmlFieldValue_t& f) {
  switch (f.valueType) {
    case NVML_VALUE_TYPE_DOUBLE: return f.value.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT: return f.value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return static_cast<double>(f.value.ulVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return static_cast<double>(f.value.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT: return f.value.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: return f.value.usVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: break;
  }
  return static_cast<double>(f.value.ullVal);
}

}  // namespace

// Volatile counts: since the driver loaded, like the energy counter. One
// field-values call reads both (~60 us on an H200, where each
// nvmlDeviceGetTotalEccErrors costs ~500 us); older drivers use the latter.
void NvmlReader::CollectEcc(GpuDeviceState& d, GpuReadingSink& sink) {
  if (d.IsOff(Source::kEccCorrected) && d.IsOff(Source::kEccUncorrected)) return;
  const nvmlDevice_t h = d.handle;
  if (!d.ecc_legacy) {
    nvmlFieldValue_t fields[2] = {};
    fields[0].fieldId = NVML_FI_DEV_ECC_SBE_VOL_TOTAL;
    fields[1].fieldId = NVML_FI_DEV_ECC_DBE_VOL_TOTAL;
    const nvmlReturn_t code = fn_.nvmlDeviceGetFieldValues(h, 2, fields);
    if (code == NVML_SUCCESS) {
      const Source sources[2] = {Source::kEccCorrected, Source::kEccUncorrected};
      const m::MetricSpec* specs[2] = {&m::kEccCorrected, &m::kEccUncorrected};
      const char* names[2] = {"nvmlDeviceGetFieldValues(ECC_SBE_VOL_TOTAL)",
                              "nvmlDeviceGetFieldValues(ECC_DBE_VOL_TOTAL)"};
      for (int i = 0; i < 2; ++i) {
        if (!d.IsOff(sources[i]) && Check(d, sources[i], names[i], fields[i].nvmlReturn)) {
          sink.Emit(d, *specs[i], FieldNumber(fields[i]));
        }
      }
      return;
    }
    if (!NvmlMeansUnsupported(code)) {
      ++error_count_;
      LOG_DEBUG() << "GPU " << d.index << ": nvmlDeviceGetFieldValues: " << NvmlErrorName(code);
      return;
    }
    if (fn_.nvmlDeviceGetTotalEccErrors == nullptr) {
      const Source both[] = {Source::kEccCorrected, Source::kEccUncorrected};
      DisableAll(d, both, 2, "nvmlDeviceGetFieldValues: " + NvmlErrorName(code));
      return;
    }
    LOG_INFO() << "GPU " << d.index << ": nvmlDeviceGetFieldValues: " << NvmlErrorName(code)
               << "; using nvmlDeviceGetTotalEccErrors";
    d.ecc_legacy = true;
  }
  unsigned long long count = 0;
  if (!d.IsOff(Source::kEccCorrected) &&
      Check(d, Source::kEccCorrected, "nvmlDeviceGetTotalEccErrors(CORRECTED)",
            fn_.nvmlDeviceGetTotalEccErrors(h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &count))) {
    sink.Emit(d, m::kEccCorrected, static_cast<double>(count));
  }
  if (!d.IsOff(Source::kEccUncorrected) &&
      Check(d, Source::kEccUncorrected, "nvmlDeviceGetTotalEccErrors(UNCORRECTED)",
            fn_.nvmlDeviceGetTotalEccErrors(h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &count))) {
    sink.Emit(d, m::kEccUncorrected, static_cast<double>(count));
  }
}

}  // namespace warpscope
