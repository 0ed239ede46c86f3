// Helpers for the NVML collector tests: a fake NVML script file the test can
// rewrite, the fake library's test hooks, and reading lookups. Test thread only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/collectors/gpu_metrics/nvml/nvml_reader.h"

namespace warpscope {

inline constexpr char kFakeNvmlPath[] = WS_FAKE_NVML_PATH;
inline constexpr char kFakeNvmlOldPath[] = WS_FAKE_NVML_OLD_PATH;

// A script in a fresh temporary directory, named by WS_FAKE_NVML_SCRIPT for
// as long as this object lives.
class FakeNvmlScript {
 public:
  explicit FakeNvmlScript(const std::string& text);
  ~FakeNvmlScript();
  FakeNvmlScript(const FakeNvmlScript&) = delete;
  FakeNvmlScript& operator=(const FakeNvmlScript&) = delete;

  // Replaces the script as one rename, so the fake sees a new inode: it
  // reloads even within the file system's mtime granularity.
  void Rewrite(const std::string& text);
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
  int generation_ = 0;
};

// The fake library's hooks (exported beside the NVML functions), reached
// through a dlopen handle of its own so the library outlives the collector.
class FakeNvmlHooks {
 public:
  explicit FakeNvmlHooks(const char* library_path);
  ~FakeNvmlHooks();
  unsigned long long CallCount(const char* function) const;
  int LiveObjects() const;  // event sets and GPM samples not freed

 private:
  void* handle_;
  unsigned long long (*call_count_)(const char*) = nullptr;
  int (*live_objects_)() = nullptr;
};

// Reads the slow metrics (energy, legacy PCIe) every interval unless told
// otherwise, so that tests see every metric in every interval.
std::unique_ptr<NvmlReader> OpenCollector(const char* library_path, int slow_metrics_every = 1);

// The value of `key` in r's labels, or "<none>".
std::string Label(const GpuReading& r, const std::string& key);
// Readings of `metric` on GPU `gpu`.
std::vector<const GpuReading*> Find(const std::vector<GpuReading>& readings, const std::string& metric,
                                    const std::string& gpu = "0");
// The value of the only reading of `metric` on `gpu`; fails the test and
// returns -1 if there is not exactly one.
double ValueOf(const std::vector<GpuReading>& readings, const std::string& metric, const std::string& gpu = "0");
bool IsDisabled(const NvmlReader& c, int gpu, const std::string& metric);

}  // namespace warpscope
