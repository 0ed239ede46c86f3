// CuptiLibrary: CUPTI loaded at run time with dlopen and reached only through
// the function pointers below; the injection library never links CUPTI.
//
// Where it looks (first hit wins):
//   1. $WARPSCOPE_CUPTI_PATH, and only that when it is set;
//   2. a libcupti already loaded in the process (so that we share the one the
//      application, e.g. torch.profiler, uses);
//   3. libcupti.so.13 / .12 / .so next to the libcudart loaded in the process
//      (pip wheels of torch keep their CUPTI beside their libcudart);
//   4. libcupti.so.13, libcupti.so.12, libcupti.so by the loader's search path;
//   5. /usr/local/cuda/lib64 and /usr/local/cuda/extras/CUPTI/lib64.
// Loading calls no CUPTI function; the handle is never closed.
//
// Threading: Load runs once on the link thread before any CUPTI callback can
// exist; afterwards the object is read-only and shared by all threads.
#pragma once

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <string>

namespace warpscope::cuda {

#define WS_CUPTI_REQUIRED_FUNCTIONS(X) \
  X(cuptiGetVersion)                   \
  X(cuptiGetResultString)              \
  X(cuptiSubscribe)                    \
  X(cuptiUnsubscribe)                  \
  X(cuptiEnableCallback)               \
  X(cuptiActivityRegisterCallbacks)    \
  X(cuptiActivityEnable)               \
  X(cuptiActivityDisable)              \
  X(cuptiActivityFlushAll)             \
  X(cuptiActivityGetNextRecord)        \
  X(cuptiActivityGetNumDroppedRecords) \
  X(cuptiGetTimestamp)
// Null when the loaded CUPTI lacks them.
#define WS_CUPTI_OPTIONAL_FUNCTIONS(X) \
  X(cuptiGetGraphExecId)               \
  X(cuptiSubscribe_v2)                 \
  X(cuptiFinalize)                     \
  X(cuptiActivityEnableContext)        \
  X(cuptiGetStreamIdEx)                \
  X(cuptiGetDeviceId)                  \
  X(cuptiGetCubinCrc)                  \
  X(cuptiPCSamplingGetNumStallReasons) \
  X(cuptiPCSamplingGetStallReasons)    \
  X(cuptiPCSamplingSetConfigurationAttribute) \
  X(cuptiPCSamplingEnable)             \
  X(cuptiPCSamplingDisable)            \
  X(cuptiPCSamplingGetData)

struct CuptiFunctions {
#define WS_CUPTI_POINTER(name) decltype(&::name) name = nullptr;
  WS_CUPTI_REQUIRED_FUNCTIONS(WS_CUPTI_POINTER)
  WS_CUPTI_OPTIONAL_FUNCTIONS(WS_CUPTI_POINTER)
#undef WS_CUPTI_POINTER
};

struct CuptiLibrary {
  void* handle = nullptr;
  std::string path;
  CuptiFunctions fn;
};

// Fills `out` and returns true, or returns false with `why` set to a
// one-line reason ("no libcupti found (tried ...)").
bool LoadCuptiLibrary(CuptiLibrary* out, std::string* why) noexcept;

// "CUPTI_ERROR_NOT_INITIALIZED" style, through cuptiGetResultString.
std::string CuptiResultText(const CuptiFunctions& fn, CUptiResult result) noexcept;

}  // namespace warpscope::cuda
