// NvmlLibrary: libnvidia-ml loaded at run time with dlopen, its functions
// looked up one by one, and nvmlInit_v2 / nvmlShutdown around its lifetime.
//
// The agent must run on machines without a GPU and on drivers older than the
// one it was written against, so nothing links NVML: a missing library, a
// driver that is not loaded or a failed init is a Status with a reason to
// show ("GPU metrics off: ..."), and a missing function is a null pointer
// that the caller treats as "metric not supported here".
//
// Threading: owned by one thread (the GPU metrics collector's); NVML itself
// is thread-safe, but this object does no locking of its own.
#pragma once

#include <memory>
#include <string>

#include "agent/collectors/gpu_metrics/nvml/nvml_abi.h"
#include "base/status.h"

namespace warpscope {

namespace nvml {
// Pointers to the NVML functions of nvml_abi.h; each is null when the loaded
// library does not export it.
struct NvmlFunctions {
#define WS_NVML_FUNCTION_POINTER(ret, name, params) ret(*name) params = nullptr;
  WS_NVML_FUNCTION_LIST(WS_NVML_FUNCTION_POINTER)
#undef WS_NVML_FUNCTION_POINTER
};
}  // namespace nvml
using nvml::NvmlFunctions;

// The default: the soname the driver installs, found on the loader's path.
inline constexpr char kDefaultNvmlLibrary[] = "libnvidia-ml.so.1";

class NvmlLibrary {
 public:
  // Loads `path` (a soname or a file path), looks up every function of
  // NvmlFunctions and calls nvmlInit_v2. Errors (kUnavailable) read
  // "GPU metrics off: <why>" and are meant for an info-level log line.
  static StatusOr<std::unique_ptr<NvmlLibrary>> Open(const std::string& path);

  // nvmlShutdown, then dlclose.
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlFunctions& fn() const { return functions_; }
  const std::string& path() const { return path_; }

 private:
  NvmlLibrary(void* handle, std::string path, const NvmlFunctions& functions)
      : handle_(handle), path_(std::move(path)), functions_(functions) {}

  void* handle_;
  std::string path_;
  NvmlFunctions functions_;
};

// "NVML_ERROR_NOT_SUPPORTED" for NVML_ERROR_NOT_SUPPORTED; "NVML_ERROR_<n>"
// for codes newer than nvml_abi.h.
std::string NvmlErrorName(nvml::nvmlReturn_t code);

}  // namespace warpscope
