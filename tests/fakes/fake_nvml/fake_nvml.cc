// libws_fake_nvml.so: a stand-in for libnvidia-ml.so.1 that serves scripted
// values and errors (fake_nvml_script.h, tests/fakes/README.md), so that the
// NVML collector's tests and benchmark run on machines without a GPU through
// the same dlopen path as in production.
//
// It exports the NVML functions of agent/collectors/gpu_metrics/nvml/nvml_abi.h with the exact
// signatures of that list, and checks what a careless caller would get wrong
// on a real driver: struct versions, buffer sizes, handles, sample pairs,
// calls before nvmlInit_v2 or after nvmlShutdown.
//
// Built twice: WS_FAKE_NVML_OLD_DRIVER leaves out what older drivers lack
// (GPM, nvmlDeviceGetProcessUtilization, nvmlDeviceGetCurrentClocksEventReasons,
// nvmlDeviceGetTemperatureV, nvmlDeviceGetFieldValues).
//
// State: one process-wide object (fake_nvml_state.h), locked by every entry
// point, re-read from the script file whenever the file changes.
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "agent/collectors/gpu_metrics/nvml/nvml_abi.h"
#include "tests/fakes/fake_nvml/fake_nvml_script.h"
#include "tests/fakes/fake_nvml/fake_nvml_state.h"

using namespace warpscope::nvml;  // NOLINT: exports the NVML names
using warpscope::fake_nvml::FakeDevice;
using warpscope::fake_nvml::FakeScript;
using warpscope::fake_nvml::Fn;
using warpscope::fake_nvml::kFnCount;
using warpscope::fake_nvml::Value;

#define WS_FAKE_EXPORT __attribute__((visibility("default")))

// Every NVML function the collector may look up, declared from the shared
// list: a definition below with another signature fails to compile.
extern "C" {
#define WS_FAKE_DECLARE(ret, name, params) WS_FAKE_EXPORT ret name params;
WS_NVML_FUNCTION_LIST(WS_FAKE_DECLARE)
#undef WS_FAKE_DECLARE
// Test hooks, not NVML: calls of one function since load; event sets and
// GPM samples allocated and not yet freed.
WS_FAKE_EXPORT unsigned long long ws_fake_nvml_call_count(const char* function);
WS_FAKE_EXPORT int ws_fake_nvml_live_objects(void);
}

namespace {

using warpscope::fake_nvml::FakeNvml;
using warpscope::fake_nvml::State;

// A value, or what the device's power cycle makes of it now.
double V(const FakeDevice& d, Value v) {
  const double set = d.values[static_cast<int>(v)];
  const warpscope::fake_nvml::PowerCycle& c = d.cycle;
  if (!c.on || (v != Value::utilization_gpu && v != Value::power_mw && v != Value::energy_mj)) return set;
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const double now = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  const double period = c.busy_s + c.idle_s;
  const double cycles = std::floor(now / period);
  const double phase = now - cycles * period;
  const bool busy = phase < c.busy_s;
  if (v == Value::utilization_gpu) return busy ? (set > 0 ? set : 100) : 0;
  if (v == Value::power_mw) return busy ? c.busy_mw : c.idle_mw;
  // mW × s = mJ.
  return set + cycles * (c.busy_s * c.busy_mw + c.idle_s * c.idle_mw) + std::min(phase, c.busy_s) * c.busy_mw +
         std::max(0.0, phase - c.busy_s) * c.idle_mw;
}
unsigned int U32(const FakeDevice& d, Value v) { return static_cast<unsigned int>(V(d, v)); }
unsigned long long U64(const FakeDevice& d, Value v) { return static_cast<unsigned long long>(V(d, v)); }

nvmlReturn_t CopyString(const std::string& s, char* out, unsigned int length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < s.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

[[maybe_unused]] unsigned long long NowMicros() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<unsigned long long>(ts.tv_sec) * 1000000ULL + static_cast<unsigned long long>(ts.tv_nsec) / 1000;
}

}  // namespace

// Locks the state and runs the common prologue; returns its error, if any.
#define WS_FAKE_ENTER_GLOBAL(fn)                                   \
  FakeNvml& state = State();                                       \
  std::lock_guard<std::mutex> lock(state.mu);                      \
  if (nvmlReturn_t entered = state.Enter(Fn::fn, nullptr, nullptr); \
      entered != NVML_SUCCESS)                                     \
    return entered;
#define WS_FAKE_ENTER_DEVICE(fn, handle)                              \
  FakeNvml& state = State();                                          \
  std::lock_guard<std::mutex> lock(state.mu);                         \
  FakeDevice* dev = nullptr;                                          \
  if (nvmlReturn_t entered = state.Enter(Fn::fn, handle, &dev);       \
      entered != NVML_SUCCESS)                                        \
    return entered;                                                   \
  const FakeDevice& d = *dev;                                         \
  (void)d;

extern "C" {

nvmlReturn_t nvmlInit_v2(void) {
  FakeNvml& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  ++state.calls[static_cast<int>(Fn::nvmlInit_v2)];
  return state.Init();
}

nvmlReturn_t nvmlShutdown(void) {
  FakeNvml& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  ++state.calls[static_cast<int>(Fn::nvmlShutdown)];
  return state.Shutdown();
}

const char* nvmlErrorString(nvmlReturn_t result) {
  return result == NVML_SUCCESS ? "Success" : "Fake NVML error";
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  WS_FAKE_ENTER_GLOBAL(nvmlSystemGetDriverVersion)
  return CopyString(state.script().driver_version, version, length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  WS_FAKE_ENTER_GLOBAL(nvmlSystemGetCudaDriverVersion)
  if (cudaDriverVersion == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = state.script().cuda_driver_version;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  WS_FAKE_ENTER_GLOBAL(nvmlSystemGetCudaDriverVersion_v2)
  if (cudaDriverVersion == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = state.script().cuda_driver_version;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  WS_FAKE_ENTER_GLOBAL(nvmlDeviceGetCount_v2)
  if (deviceCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *deviceCount = static_cast<unsigned int>(state.script().devices.size());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  FakeNvml& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  if (nvmlReturn_t e = state.Enter(Fn::nvmlDeviceGetHandleByIndex_v2, nullptr, nullptr); e != NVML_SUCCESS) return e;
  if (device == nullptr || index >= state.script().devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  FakeDevice* dev = nullptr;
  if (nvmlReturn_t e = state.EnterDevice(Fn::nvmlDeviceGetHandleByIndex_v2, state.Handle(index), &dev);
      e != NVML_SUCCESS) {
    return e;
  }
  *device = state.Handle(index);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetName, device)
  return CopyString(d.name, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetUUID, device)
  return CopyString(d.uuid, uuid, length);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetPciInfo_v3, device)
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::memset(pci, 0, sizeof(*pci));
  std::snprintf(pci->busId, sizeof(pci->busId), "%s", d.pci_bus_id.c_str());
  unsigned int bus = 0;
  unsigned int dev_number = 0;
  unsigned int function = 0;
  std::sscanf(d.pci_bus_id.c_str(), "%x:%x:%x.%x", &pci->domain, &bus, &dev_number, &function);
  pci->bus = bus;
  pci->device = dev_number;
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.0", pci->domain & 0xffff, bus,
                dev_number);
  pci->pciDeviceId = 0x233510DE;  // an H200's device and vendor id
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetUtilizationRates, device)
  if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  utilization->gpu = U32(d, Value::utilization_gpu);
  utilization->memory = U32(d, Value::utilization_memory);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetMemoryInfo, device)
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = U64(d, Value::memory_total);
  memory->used = U64(d, Value::memory_used) + U64(d, Value::memory_reserved);  // v1 counts the reservation
  memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
  return NVML_SUCCESS;
}

#ifndef WS_FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetMemoryInfo_v2, device)
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  // The v1 call's scripted error applies here too: one switch for "memory".
  if (d.errors[static_cast<int>(Fn::nvmlDeviceGetMemoryInfo)] != NVML_SUCCESS) {
    return d.errors[static_cast<int>(Fn::nvmlDeviceGetMemoryInfo)];
  }
  memory->total = U64(d, Value::memory_total);
  memory->reserved = U64(d, Value::memory_reserved);
  memory->used = U64(d, Value::memory_used);
  const unsigned long long taken = memory->used + memory->reserved;
  memory->free = memory->total > taken ? memory->total - taken : 0;
  return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetClockInfo, device)
  if (clock == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (type == NVML_CLOCK_SM || type == NVML_CLOCK_GRAPHICS) {
    *clock = U32(d, Value::clock_sm);
  } else if (type == NVML_CLOCK_MEM) {
    *clock = U32(d, Value::clock_mem);
  } else {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetMaxClockInfo, device)
  if (clock == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (type == NVML_CLOCK_SM || type == NVML_CLOCK_GRAPHICS) {
    *clock = U32(d, Value::max_clock_sm);
  } else if (type == NVML_CLOCK_MEM) {
    *clock = U32(d, Value::max_clock_mem);
  } else {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetPowerUsage, device)
  if (power == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *power = U32(d, Value::power_mw);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetEnforcedPowerLimit, device)
  if (limit == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *limit = U32(d, Value::power_limit_mw);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetTotalEnergyConsumption, device)
  if (energy == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *energy = U64(d, Value::energy_mj);
  return NVML_SUCCESS;
}

#ifndef WS_FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_v1_t* temperature) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetTemperatureV, device)
  if (temperature == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (temperature->version != nvmlTemperature_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (temperature->sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  // The deprecated call's scripted error applies here too: one switch for "temperature".
  if (d.errors[static_cast<int>(Fn::nvmlDeviceGetTemperature)] != NVML_SUCCESS) {
    return d.errors[static_cast<int>(Fn::nvmlDeviceGetTemperature)];
  }
  temperature->temperature = static_cast<int>(V(d, Value::temperature));
  return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType, unsigned int* temp) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetTemperature, device)
  if (temp == nullptr || sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  *temp = U32(d, Value::temperature);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, nvmlTemperatureThresholds_t thresholdType,
                                               unsigned int* temp) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetTemperatureThreshold, device)
  if (temp == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (thresholdType == NVML_TEMPERATURE_THRESHOLD_SLOWDOWN) {
    *temp = U32(d, Value::temperature_slowdown);
  } else if (thresholdType == NVML_TEMPERATURE_THRESHOLD_SHUTDOWN) {
    *temp = U32(d, Value::temperature_slowdown) + 5;
  } else {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, nvmlPcieUtilCounter_t counter, unsigned int* value) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetPcieThroughput, device)
  if (value == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (counter == NVML_PCIE_UTIL_TX_BYTES) {
    *value = U32(d, Value::pcie_tx_kbps);
  } else if (counter == NVML_PCIE_UTIL_RX_BYTES) {
    *value = U32(d, Value::pcie_rx_kbps);
  } else {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return NVML_SUCCESS;
}

#ifndef WS_FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long* clocksEventReasons) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetCurrentClocksEventReasons, device)
  if (clocksEventReasons == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *clocksEventReasons = U64(d, Value::clock_event_reasons);
  return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long* clocksThrottleReasons) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetCurrentClocksThrottleReasons, device)
  if (clocksThrottleReasons == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *clocksThrottleReasons = U64(d, Value::clock_event_reasons);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                         nvmlEccCounterType_t counterType, unsigned long long* eccCounts) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetTotalEccErrors, device)
  if (eccCounts == nullptr || (counterType != NVML_VOLATILE_ECC && counterType != NVML_AGGREGATE_ECC)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED) {
    *eccCounts = U64(d, Value::ecc_corrected);
  } else if (errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED) {
    *eccCounts = U64(d, Value::ecc_uncorrected);
  } else {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return NVML_SUCCESS;
}

#ifndef WS_FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t* values) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetFieldValues, device)
  if (values == nullptr || valuesCount < 0) return NVML_ERROR_INVALID_ARGUMENT;
  // ECC fields answer like nvmlDeviceGetTotalEccErrors: one switch for "ECC".
  const nvmlReturn_t ecc = d.errors[static_cast<int>(Fn::nvmlDeviceGetTotalEccErrors)];
  for (int i = 0; i < valuesCount; ++i) {
    nvmlFieldValue_t& f = values[i];
    f.timestamp = static_cast<long long>(NowMicros());
    f.latencyUsec = 0;
    f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    f.value.ullVal = 0;
    if (f.fieldId == NVML_FI_DEV_ECC_SBE_VOL_TOTAL) {
      f.nvmlReturn = ecc;
      f.value.ullVal = U64(d, Value::ecc_corrected);
    } else if (f.fieldId == NVML_FI_DEV_ECC_DBE_VOL_TOTAL) {
      f.nvmlReturn = ecc;
      f.value.ullVal = U64(d, Value::ecc_uncorrected);
    } else {
      f.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    }
  }
  return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  WS_FAKE_ENTER_GLOBAL(nvmlEventSetCreate)
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *set = state.NewEventSet();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceRegisterEvents, device)
  if (!state.IsEventSet(set)) return NVML_ERROR_INVALID_ARGUMENT;
  // Like a driver without other event sources: XID events only.
  if (eventTypes != nvmlEventTypeXidCriticalError) return NVML_ERROR_NOT_SUPPORTED;
  set->registered[device->index] = true;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms) {
  WS_FAKE_ENTER_GLOBAL(nvmlEventSetWait_v2)
  if (data == nullptr || !state.IsEventSet(set)) return NVML_ERROR_INVALID_ARGUMENT;
  int device = 0;
  unsigned long long xid = 0;
  // Never sleeps, whatever the timeout: no event pending is TIMEOUT at once.
  if (!state.PopXid(set, &device, &xid)) return NVML_ERROR_TIMEOUT;
  data->device = state.Handle(static_cast<unsigned int>(device));
  data->eventType = nvmlEventTypeXidCriticalError;
  data->eventData = xid;
  data->gpuInstanceId = 0xFFFFFFFF;
  data->computeInstanceId = 0xFFFFFFFF;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  WS_FAKE_ENTER_GLOBAL(nvmlEventSetFree)
  if (!state.IsEventSet(set)) return NVML_ERROR_INVALID_ARGUMENT;
  state.FreeEventSet(set);
  return NVML_SUCCESS;
}

#ifndef WS_FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* gpmSupport) {
  WS_FAKE_ENTER_DEVICE(nvmlGpmQueryDeviceSupport, device)
  if (gpmSupport == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  gpmSupport->isSupportedDevice = d.gpm ? 1 : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* gpmSample) {
  WS_FAKE_ENTER_GLOBAL(nvmlGpmSampleAlloc)
  if (gpmSample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *gpmSample = state.NewGpmSample();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
  WS_FAKE_ENTER_GLOBAL(nvmlGpmSampleFree)
  if (!state.IsGpmSample(gpmSample)) return NVML_ERROR_INVALID_ARGUMENT;
  state.FreeGpmSample(gpmSample);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
  WS_FAKE_ENTER_DEVICE(nvmlGpmSampleGet, device)
  if (!state.IsGpmSample(gpmSample)) return NVML_ERROR_INVALID_ARGUMENT;
  if (!d.gpm) return NVML_ERROR_NOT_SUPPORTED;
  gpmSample->device = device->index;
  gpmSample->sequence = state.NextGpmSequence();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metricsGet) {
  WS_FAKE_ENTER_GLOBAL(nvmlGpmMetricsGet)
  if (metricsGet == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (metricsGet->numMetrics > NVML_GPM_METRIC_MAX) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlGpmSample_t first = metricsGet->sample1;
  nvmlGpmSample_t second = metricsGet->sample2;
  // Two filled samples of one device, the earlier one first.
  if (!state.IsGpmSample(first) || !state.IsGpmSample(second) || first == second || first->device < 0 ||
      first->device != second->device || first->sequence >= second->sequence) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (first->device >= static_cast<int>(state.script().devices.size())) return NVML_ERROR_GPU_IS_LOST;
  const FakeDevice& d = state.script().devices[first->device];
  for (unsigned int i = 0; i < metricsGet->numMetrics; ++i) {
    nvmlGpmMetric_t& metric = metricsGet->metrics[i];
    Value value;
    double scale = 1;
    switch (metric.metricId) {
      case NVML_GPM_METRIC_SM_UTIL: value = Value::gpm_sm_util; break;
      case NVML_GPM_METRIC_SM_OCCUPANCY: value = Value::gpm_sm_occupancy; break;
      case NVML_GPM_METRIC_ANY_TENSOR_UTIL: value = Value::gpm_any_tensor_util; break;
      case NVML_GPM_METRIC_DRAM_BW_UTIL: value = Value::gpm_dram_bw_util; break;
      // The same traffic as nvmlDeviceGetPcieThroughput, in MiB/s.
      case NVML_GPM_METRIC_PCIE_TX_PER_SEC: value = Value::pcie_tx_kbps; scale = 1 / 1024.0; break;
      case NVML_GPM_METRIC_PCIE_RX_PER_SEC: value = Value::pcie_rx_kbps; scale = 1 / 1024.0; break;
      default:
        metric.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        continue;
    }
    metric.nvmlReturn = d.value_errors[static_cast<int>(value)];
    metric.value = metric.nvmlReturn == NVML_SUCCESS ? V(d, value) * scale : 0;
    metric.metricInfo.shortName = nullptr;
    metric.metricInfo.longName = nullptr;
    metric.metricInfo.unit = nullptr;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
                                             unsigned int* processSamplesCount, unsigned long long lastSeenTimeStamp) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetProcessUtilization, device)
  if (processSamplesCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int n = 0;
  for (const auto& p : d.processes) n += p.has_utilization ? 1 : 0;
  // A scripted process uses the GPU all the time: fresh samples, newer than
  // lastSeenTimeStamp, on every call.
  if (n == 0) return NVML_ERROR_NOT_FOUND;
  if (utilization == nullptr || *processSamplesCount < n) {
    *processSamplesCount = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  const unsigned long long now = std::max(NowMicros(), lastSeenTimeStamp + 1);
  unsigned int i = 0;
  for (const auto& p : d.processes) {
    if (!p.has_utilization) continue;
    utilization[i] = {};
    utilization[i].pid = p.pid;
    utilization[i].timeStamp = now;
    utilization[i].smUtil = p.sm;
    utilization[i].memUtil = p.mem;
    ++i;
  }
  *processSamplesCount = n;
  return NVML_SUCCESS;
}
#endif  // WS_FAKE_NVML_OLD_DRIVER

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) {
  WS_FAKE_ENTER_DEVICE(nvmlDeviceGetComputeRunningProcesses_v3, device)
  if (infoCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int n = 0;
  for (const auto& p : d.processes) n += p.has_used ? 1 : 0;
  if (*infoCount < n) {
    *infoCount = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (n > 0 && infos == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int i = 0;
  for (const auto& p : d.processes) {
    if (!p.has_used) continue;
    infos[i] = {};
    infos[i].pid = p.pid;
    infos[i].usedGpuMemory = p.used;
    infos[i].gpuInstanceId = 0xFFFFFFFF;
    infos[i].computeInstanceId = 0xFFFFFFFF;
    ++i;
  }
  *infoCount = n;
  return NVML_SUCCESS;
}

unsigned long long ws_fake_nvml_call_count(const char* function) {
  FakeNvml& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  for (int i = 0; i < kFnCount; ++i) {
    if (std::strcmp(function, warpscope::fake_nvml::FnName(static_cast<Fn>(i))) == 0) return state.calls[i];
  }
  return 0;
}

int ws_fake_nvml_live_objects(void) {
  FakeNvml& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  return state.LiveObjects();
}

}  // extern "C"
