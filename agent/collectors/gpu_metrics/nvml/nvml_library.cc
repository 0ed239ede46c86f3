#include "agent/collectors/gpu_metrics/nvml/nvml_library.h"

#include <dlfcn.h>

#include <string>

#include "base/logging.h"

namespace warpscope {

using namespace nvml;  // NOLINT: the NVML names read best unqualified here

namespace {

std::string DlError() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dlopen error";
}

// What a failed nvmlInit_v2 most likely means, for the operator.
const char* InitHint(nvmlReturn_t code) {
  switch (code) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return " (the NVIDIA kernel driver is not loaded)";
    case NVML_ERROR_NO_PERMISSION:
      return " (no permission to open /dev/nvidia*)";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return " (libnvidia-ml and the kernel driver are different versions; reboot or reload the driver)";
    case NVML_ERROR_GPU_NOT_FOUND:
      return " (no GPU found)";
    default:
      return "";
  }
}

}  // namespace

std::string NvmlErrorName(nvmlReturn_t code) {
  switch (code) {
#define WS_NVML_CODE(name) \
  case name:               \
    return #name;
    WS_NVML_CODE(NVML_SUCCESS)
    WS_NVML_CODE(NVML_ERROR_UNINITIALIZED)
    WS_NVML_CODE(NVML_ERROR_INVALID_ARGUMENT)
    WS_NVML_CODE(NVML_ERROR_NOT_SUPPORTED)
    WS_NVML_CODE(NVML_ERROR_NO_PERMISSION)
    WS_NVML_CODE(NVML_ERROR_ALREADY_INITIALIZED)
    WS_NVML_CODE(NVML_ERROR_NOT_FOUND)
    WS_NVML_CODE(NVML_ERROR_INSUFFICIENT_SIZE)
    WS_NVML_CODE(NVML_ERROR_INSUFFICIENT_POWER)
    WS_NVML_CODE(NVML_ERROR_DRIVER_NOT_LOADED)
    WS_NVML_CODE(NVML_ERROR_TIMEOUT)
    WS_NVML_CODE(NVML_ERROR_IRQ_ISSUE)
    WS_NVML_CODE(NVML_ERROR_LIBRARY_NOT_FOUND)
    WS_NVML_CODE(NVML_ERROR_FUNCTION_NOT_FOUND)
    WS_NVML_CODE(NVML_ERROR_CORRUPTED_INFOROM)
    WS_NVML_CODE(NVML_ERROR_GPU_IS_LOST)
    WS_NVML_CODE(NVML_ERROR_RESET_REQUIRED)
    WS_NVML_CODE(NVML_ERROR_OPERATING_SYSTEM)
    WS_NVML_CODE(NVML_ERROR_LIB_RM_VERSION_MISMATCH)
    WS_NVML_CODE(NVML_ERROR_IN_USE)
    WS_NVML_CODE(NVML_ERROR_MEMORY)
    WS_NVML_CODE(NVML_ERROR_NO_DATA)
    WS_NVML_CODE(NVML_ERROR_VGPU_ECC_NOT_SUPPORTED)
    WS_NVML_CODE(NVML_ERROR_INSUFFICIENT_RESOURCES)
    WS_NVML_CODE(NVML_ERROR_FREQ_NOT_SUPPORTED)
    WS_NVML_CODE(NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
    WS_NVML_CODE(NVML_ERROR_DEPRECATED)
    WS_NVML_CODE(NVML_ERROR_NOT_READY)
    WS_NVML_CODE(NVML_ERROR_GPU_NOT_FOUND)
    WS_NVML_CODE(NVML_ERROR_INVALID_STATE)
    WS_NVML_CODE(NVML_ERROR_RESET_TYPE_NOT_SUPPORTED)
    WS_NVML_CODE(NVML_ERROR_UNKNOWN)
#undef WS_NVML_CODE
  }
  return "NVML_ERROR_" + std::to_string(static_cast<int>(code));
}

StatusOr<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Open(const std::string& path) {
  // RTLD_LOCAL: NVML's symbols must not satisfy anyone else's lookups (the
  // fake library in tests exports the same names).
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const bool is_soname = path.find('/') == std::string::npos;
    return UnavailableError("GPU metrics off: " + path +
                            (is_soname ? " not found (no NVIDIA driver?): " : " cannot be loaded: ") +
                            DlError());
  }
  NvmlFunctions functions;
#define WS_NVML_LOOKUP(ret, name, params) \
  functions.name = reinterpret_cast<decltype(functions.name)>(dlsym(handle, #name));
  WS_NVML_FUNCTION_LIST(WS_NVML_LOOKUP)
#undef WS_NVML_LOOKUP
  if (functions.nvmlInit_v2 == nullptr || functions.nvmlShutdown == nullptr) {
    dlclose(handle);
    return UnavailableError("GPU metrics off: " + path + " has no nvmlInit_v2 (not NVML, or a driver older than r319)");
  }
  const nvmlReturn_t init = functions.nvmlInit_v2();
  if (init != NVML_SUCCESS) {
    dlclose(handle);
    return UnavailableError("GPU metrics off: nvmlInit_v2 failed: " + NvmlErrorName(init) + InitHint(init));
  }
  return std::unique_ptr<NvmlLibrary>(new NvmlLibrary(handle, path, functions));
}

NvmlLibrary::~NvmlLibrary() {
  const nvmlReturn_t shutdown = functions_.nvmlShutdown();
  if (shutdown != NVML_SUCCESS) LOG_WARNING() << "nvmlShutdown: " << NvmlErrorName(shutdown);
  dlclose(handle_);
}

}  // namespace warpscope
