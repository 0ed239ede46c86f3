// The scripted state of the fake NVML (tests/fakes/README.md has the
// format): what each device reports, which calls fail with which code, the
// running processes and pending XID events. Parsed from the file named by
// WS_FAKE_NVML_SCRIPT; a plain value, no threads.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "agent/collectors/gpu_metrics/nvml/nvml_abi.h"

namespace warpscope::fake_nvml {

// The NVML functions, by name: the key of scripted errors and call counts.
enum class Fn : int {
#define WS_FAKE_FN_ENUM(ret, name, params) name,
  WS_NVML_FUNCTION_LIST(WS_FAKE_FN_ENUM)
#undef WS_FAKE_FN_ENUM
  kCount
};
inline constexpr int kFnCount = static_cast<int>(Fn::kCount);
const char* FnName(Fn fn);

// What `set` can change, in NVML's own units (milliwatts, KB/s, ...).
#define WS_FAKE_VALUE_LIST(X)                                           \
  X(utilization_gpu, 0)                                                 \
  X(utilization_memory, 0)                                              \
  X(memory_total, 85899345920.0) /* 80 GiB */                           \
  X(memory_used, 0)                                                     \
  X(memory_reserved, 0)                                                 \
  X(clock_sm, 345)                                                      \
  X(clock_mem, 3201)                                                    \
  X(max_clock_sm, 1980)                                                 \
  X(max_clock_mem, 3201)                                                \
  X(power_mw, 80000)                                                    \
  X(power_limit_mw, 700000)                                             \
  X(energy_mj, 0)                                                       \
  X(temperature, 30)                                                    \
  X(temperature_slowdown, 87)                                           \
  X(pcie_tx_kbps, 0)                                                    \
  X(pcie_rx_kbps, 0)                                                    \
  X(clock_event_reasons, 0)                                             \
  X(ecc_corrected, 0)                                                   \
  X(ecc_uncorrected, 0)                                                 \
  X(gpm_sm_util, 0)                                                     \
  X(gpm_sm_occupancy, 0)                                                \
  X(gpm_any_tensor_util, 0)                                             \
  X(gpm_dram_bw_util, 0)

enum class Value : int {
#define WS_FAKE_VALUE_ENUM(name, default_value) name,
  WS_FAKE_VALUE_LIST(WS_FAKE_VALUE_ENUM)
#undef WS_FAKE_VALUE_ENUM
  kCount
};
inline constexpr int kValueCount = static_cast<int>(Value::kCount);

inline constexpr int kMaxDevices = 64;

struct FakeProcess {
  unsigned int pid = 0;
  bool has_utilization = false;  // a sample for nvmlDeviceGetProcessUtilization
  unsigned int sm = 0;
  unsigned int mem = 0;
  bool has_used = false;  // listed by nvmlDeviceGetComputeRunningProcesses_v3
  unsigned long long used = 0;
};

// `cycle I BUSY_S IDLE_S BUSY_MW IDLE_MW`: the device alternates, on the
// wall clock from the Unix epoch, BUSY_S seconds busy (utilization_gpu as
// set, 100 when not set; BUSY_MW) and IDLE_S seconds idle (0 %, IDLE_MW),
// and its energy counter is energy_mj plus the exact integral of that power
// since the epoch.
struct PowerCycle {
  bool on = false;
  double busy_s = 0, idle_s = 0, busy_mw = 0, idle_mw = 0;
};

struct FakeDevice {
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  bool gpm = false;
  std::array<double, kValueCount> values{};
  // NVML_SUCCESS where the call works. value_errors: per-GPM-metric status.
  std::array<nvml::nvmlReturn_t, kFnCount> errors{};
  std::array<nvml::nvmlReturn_t, kValueCount> value_errors{};
  std::vector<FakeProcess> processes;
  PowerCycle cycle;
};

struct FakeScript {
  nvml::nvmlReturn_t init_error = nvml::NVML_SUCCESS;
  // nvmlSystemGetDriverVersion and nvmlSystemGetCudaDriverVersion[_v2]
  // (CUDA 13.0 is 13000).
  std::string driver_version = "580.65.06";
  int cuda_driver_version = 13000;
  std::vector<FakeDevice> devices;
  // Errors of calls that take no device (nvmlEventSetCreate, ...).
  std::array<nvml::nvmlReturn_t, kFnCount> errors{};
  std::vector<std::pair<int, unsigned long long>> xids;  // (device, XID)
};

// One device, as if the script were "devices 1".
FakeScript DefaultScript();

// Parses the script text. On error returns false with "line N: why".
bool ParseScript(const std::string& text, FakeScript* script, std::string* error);

}  // namespace warpscope::fake_nvml
