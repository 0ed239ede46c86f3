// The subset of the NVML C ABI that warpscope calls, declared by hand because
// the build machines have no nvml.h (and the agent must not need one): the
// library is loaded with dlopen at run time (nvml_library.h).
//
// Everything here must match libnvidia-ml.so.1 of driver r580 (CUDA 13.0,
// NVML_API_VERSION 13) byte for byte: a wrong size or field offset makes the
// driver write past our buffers on a real GPU machine. Each struct carries a
// static size check; the values were checked field by field against the
// CUDA 13.0 nvml.h of the H200 machine (/usr/local/cuda-13.0/include/nvml.h)
// and against NVIDIA's cuda-python bindings (cynvml.pxd, 12.9.1 to 13.2).
// Add a function or struct only together with that check.
//
// The types live in warpscope::nvml so that a translation unit may include
// the real nvml.h beside this header (the layout check does).
#pragma once

#include <cstddef>
#include <cstdint>

namespace warpscope::nvml {

// nvmlReturn_t: a C enum, 4 bytes, returned in a register.
enum nvmlReturn_t : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
  NVML_ERROR_UNKNOWN = 999,
};
static_assert(sizeof(nvmlReturn_t) == 4);

// The argument enums below are C enums too: 4 bytes when passed by value.
enum nvmlClockType_t : unsigned int {
  NVML_CLOCK_GRAPHICS = 0,
  NVML_CLOCK_SM = 1,
  NVML_CLOCK_MEM = 2,
  NVML_CLOCK_VIDEO = 3,
};

enum nvmlTemperatureSensors_t : unsigned int {
  NVML_TEMPERATURE_GPU = 0,
};

enum nvmlTemperatureThresholds_t : unsigned int {
  NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
  NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
};

enum nvmlPcieUtilCounter_t : unsigned int {
  NVML_PCIE_UTIL_TX_BYTES = 0,  // KB/s
  NVML_PCIE_UTIL_RX_BYTES = 1,
};

enum nvmlMemoryErrorType_t : unsigned int {
  NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
  NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
};

enum nvmlEccCounterType_t : unsigned int {
  NVML_VOLATILE_ECC = 0,   // reset when the driver loads
  NVML_AGGREGATE_ECC = 1,  // lifetime
};

// nvmlGpmMetricId_t: the GPM metrics warpscope reads.
enum nvmlGpmMetricId_t : unsigned int {
  NVML_GPM_METRIC_SM_UTIL = 2,           // % of SMs busy
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,      // % of warps active vs the maximum
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,   // % of time SMs ran any tensor op
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10,     // % of DRAM bandwidth used
  NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,  // MiB/s from the GPU
  NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,  // MiB/s to the GPU
};

enum nvmlValueType_t : unsigned int {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};

// Field ids of nvmlDeviceGetFieldValues (NVML_FI_*) that warpscope reads.
inline constexpr unsigned int NVML_FI_DEV_ECC_SBE_VOL_TOTAL = 3;  // corrected, volatile
inline constexpr unsigned int NVML_FI_DEV_ECC_DBE_VOL_TOTAL = 4;  // uncorrected, volatile

// Opaque handles: pointers to incomplete structs in the real header.
struct nvmlDevice_st;
struct nvmlEventSet_st;
struct nvmlGpmSample_st;
using nvmlDevice_t = nvmlDevice_st*;
using nvmlEventSet_t = nvmlEventSet_st*;
using nvmlGpmSample_t = nvmlGpmSample_st*;

inline constexpr unsigned int NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;
inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;
// usedGpuMemory when the driver cannot tell (NVML_VALUE_NOT_AVAILABLE).
inline constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE_ULL = ~0ULL;
inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x0000000000000008ULL;

// Filled by nvmlDeviceGetPciInfo_v3.
struct nvmlPciInfo_t {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  // "00000000:01:00.0"
};
static_assert(sizeof(nvmlPciInfo_t) == 68);
static_assert(offsetof(nvmlPciInfo_t, busId) == 36);

struct nvmlUtilization_t {
  unsigned int gpu;     // %
  unsigned int memory;  // %
};
static_assert(sizeof(nvmlUtilization_t) == 8);

// The v1 struct of nvmlDeviceGetMemoryInfo (no version field).
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(nvmlMemory_t) == 24);

// nvmlDeviceGetMemoryInfo_v2 (r510+): "used" is allocated memory only, as
// nvidia-smi shows it; v1's "used" also counts the driver's reservation.
struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(nvmlMemory_v2_t) == 40);
static_assert(offsetof(nvmlMemory_v2_t, reserved) == 16);
// NVML_STRUCT_VERSION(Memory, 2)
inline constexpr unsigned int nvmlMemory_v2 = static_cast<unsigned int>(sizeof(nvmlMemory_v2_t)) | (2U << 24);

// nvmlDeviceGetTemperatureV (new in r545+; nvmlDeviceGetTemperature is
// deprecated in CUDA 13.0). version must be nvmlTemperature_v1.
struct nvmlTemperature_v1_t {
  unsigned int version;
  nvmlTemperatureSensors_t sensorType;
  int temperature;  // celsius
};
static_assert(sizeof(nvmlTemperature_v1_t) == 12);
// NVML_STRUCT_VERSION(Temperature, 1): the size in the low bits, 1 << 24.
inline constexpr unsigned int nvmlTemperature_v1 =
    static_cast<unsigned int>(sizeof(nvmlTemperature_v1_t)) | (1U << 24);

// nvmlProcessInfo_t is nvmlProcessInfo_v2_t in r580: the element type of
// nvmlDeviceGetComputeRunningProcesses_v3 (the _v1 function takes a 16-byte
// struct without the instance ids; never mix them).
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes, or NVML_VALUE_NOT_AVAILABLE_ULL
  unsigned int gpuInstanceId;        // 0xFFFFFFFF without MIG
  unsigned int computeInstanceId;
};
static_assert(sizeof(nvmlProcessInfo_t) == 24);
static_assert(offsetof(nvmlProcessInfo_t, usedGpuMemory) == 8);
static_assert(offsetof(nvmlProcessInfo_t, gpuInstanceId) == 16);

struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU time, microseconds
  unsigned int smUtil;           // %
  unsigned int memUtil;          // %
  unsigned int encUtil;
  unsigned int decUtil;
};
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32);
static_assert(offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8);
static_assert(offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16);

struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for nvmlEventTypeXidCriticalError
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
static_assert(sizeof(nvmlEventData_t) == 32);
static_assert(offsetof(nvmlEventData_t, eventData) == 16);

union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
};
static_assert(sizeof(nvmlValue_t) == 8);

// One entry of nvmlDeviceGetFieldValues: fieldId in, the rest out.
struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;  // CPU microseconds since 1970
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;  // per field
  nvmlValue_t value;
};
static_assert(sizeof(nvmlFieldValue_t) == 40);
static_assert(offsetof(nvmlFieldValue_t, valueType) == 24);
static_assert(offsetof(nvmlFieldValue_t, value) == 32);

inline constexpr unsigned int NVML_GPM_SUPPORT_VERSION = 1;
struct nvmlGpmSupport_t {
  unsigned int version;  // NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;
};
static_assert(sizeof(nvmlGpmSupport_t) == 8);

struct nvmlGpmMetric_t {
  unsigned int metricId;    // in
  nvmlReturn_t nvmlReturn;  // out, per metric
  double value;             // out
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;  // out, may be null
};
static_assert(sizeof(nvmlGpmMetric_t) == 40);
static_assert(offsetof(nvmlGpmMetric_t, value) == 8);

// The metrics[] length of r580 (CUDA 13.0). It grew across releases (98,
// 210, 333) without a change of NVML_GPM_METRICS_GET_VERSION; the driver
// touches only metrics[0, numMetrics), so numMetrics must stay below it.
inline constexpr unsigned int NVML_GPM_METRIC_MAX = 210;
inline constexpr unsigned int NVML_GPM_METRICS_GET_VERSION = 1;
struct nvmlGpmMetricsGet_t {
  unsigned int version;     // NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;  // entries of metrics[] to fill
  nvmlGpmSample_t sample1;  // the earlier sample
  nvmlGpmSample_t sample2;  // the later sample
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
};
static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == 8);
static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24);
static_assert(sizeof(nvmlGpmMetricsGet_t) == 24 + 40 * NVML_GPM_METRIC_MAX);

// Every function warpscope may call: X(return type, name, parameter list).
// nvml_library.cc looks each one up with dlsym (each is optional: an older
// driver lacks some); the fake library (tests/fakes/fake_nvml) defines them
// from the same list, so a signature can differ in neither.
#define WS_NVML_FUNCTION_LIST(X)                                                                   \
  X(nvmlReturn_t, nvmlInit_v2, (void))                                                             \
  X(nvmlReturn_t, nvmlShutdown, (void))                                                            \
  X(const char*, nvmlErrorString, (nvmlReturn_t result))                                           \
  X(nvmlReturn_t, nvmlSystemGetDriverVersion, (char* version, unsigned int length))               \
  X(nvmlReturn_t, nvmlSystemGetCudaDriverVersion, (int* cudaDriverVersion))                        \
  X(nvmlReturn_t, nvmlSystemGetCudaDriverVersion_v2, (int* cudaDriverVersion))                     \
  X(nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int* deviceCount))                              \
  X(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t* device))       \
  X(nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t device, char* name, unsigned int length))       \
  X(nvmlReturn_t, nvmlDeviceGetUUID, (nvmlDevice_t device, char* uuid, unsigned int length))       \
  X(nvmlReturn_t, nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t * pci))             \
  X(nvmlReturn_t, nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t * utilization)) \
  X(nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t * memory))           \
  X(nvmlReturn_t, nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t * memory))     \
  X(nvmlReturn_t, nvmlDeviceGetClockInfo, (nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock)) \
  X(nvmlReturn_t, nvmlDeviceGetMaxClockInfo,                                                       \
    (nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock))                              \
  X(nvmlReturn_t, nvmlDeviceGetPowerUsage, (nvmlDevice_t device, unsigned int* power))             \
  X(nvmlReturn_t, nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t device, unsigned int* limit))     \
  X(nvmlReturn_t, nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t device, unsigned long long* energy)) \
  X(nvmlReturn_t, nvmlDeviceGetTemperatureV, (nvmlDevice_t device, nvmlTemperature_v1_t * temperature)) \
  X(nvmlReturn_t, nvmlDeviceGetTemperature,                                                        \
    (nvmlDevice_t device, nvmlTemperatureSensors_t sensorType, unsigned int* temp))                \
  X(nvmlReturn_t, nvmlDeviceGetTemperatureThreshold,                                               \
    (nvmlDevice_t device, nvmlTemperatureThresholds_t thresholdType, unsigned int* temp))          \
  X(nvmlReturn_t, nvmlDeviceGetPcieThroughput,                                                     \
    (nvmlDevice_t device, nvmlPcieUtilCounter_t counter, unsigned int* value))                     \
  X(nvmlReturn_t, nvmlDeviceGetCurrentClocksEventReasons,                                          \
    (nvmlDevice_t device, unsigned long long* clocksEventReasons))                                 \
  X(nvmlReturn_t, nvmlDeviceGetCurrentClocksThrottleReasons,                                       \
    (nvmlDevice_t device, unsigned long long* clocksThrottleReasons))                              \
  X(nvmlReturn_t, nvmlDeviceGetTotalEccErrors,                                                     \
    (nvmlDevice_t device, nvmlMemoryErrorType_t errorType, nvmlEccCounterType_t counterType,       \
     unsigned long long* eccCounts))                                                               \
  X(nvmlReturn_t, nvmlDeviceGetFieldValues, (nvmlDevice_t device, int valuesCount, nvmlFieldValue_t* values)) \
  X(nvmlReturn_t, nvmlEventSetCreate, (nvmlEventSet_t * set))                                      \
  X(nvmlReturn_t, nvmlDeviceRegisterEvents,                                                        \
    (nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set))                      \
  X(nvmlReturn_t, nvmlEventSetWait_v2, (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms)) \
  X(nvmlReturn_t, nvmlEventSetFree, (nvmlEventSet_t set))                                          \
  X(nvmlReturn_t, nvmlGpmQueryDeviceSupport, (nvmlDevice_t device, nvmlGpmSupport_t * gpmSupport)) \
  X(nvmlReturn_t, nvmlGpmSampleAlloc, (nvmlGpmSample_t * gpmSample))                               \
  X(nvmlReturn_t, nvmlGpmSampleFree, (nvmlGpmSample_t gpmSample))                                  \
  X(nvmlReturn_t, nvmlGpmSampleGet, (nvmlDevice_t device, nvmlGpmSample_t gpmSample))              \
  X(nvmlReturn_t, nvmlGpmMetricsGet, (nvmlGpmMetricsGet_t * metricsGet))                           \
  X(nvmlReturn_t, nvmlDeviceGetProcessUtilization,                                                 \
    (nvmlDevice_t device, nvmlProcessUtilizationSample_t * utilization,                            \
     unsigned int* processSamplesCount, unsigned long long lastSeenTimeStamp))                     \
  X(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v3,                                         \
    (nvmlDevice_t device, unsigned int* infoCount, nvmlProcessInfo_t* infos))

}  // namespace warpscope::nvml
