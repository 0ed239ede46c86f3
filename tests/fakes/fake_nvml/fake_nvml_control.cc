#include "tests/fakes/fake_nvml/fake_nvml_control.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"

namespace warpscope {

FakeNvmlScript::FakeNvmlScript(const std::string& text) {
  char dir[] = "/tmp/ws_fake_nvml_XXXXXX";
  if (mkdtemp(dir) == nullptr) ADD_FAILURE() << "mkdtemp failed";
  dir_ = dir;
  path_ = dir_ + "/script";
  Rewrite(text);
  setenv("WS_FAKE_NVML_SCRIPT", path_.c_str(), 1);
}

FakeNvmlScript::~FakeNvmlScript() {
  unsetenv("WS_FAKE_NVML_SCRIPT");
  unlink(path_.c_str());
  rmdir(dir_.c_str());
}

void FakeNvmlScript::Rewrite(const std::string& text) {
  const std::string tmp = dir_ + "/script.tmp" + std::to_string(generation_++);
  {
    std::ofstream out(tmp);
    out << text;
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) ADD_FAILURE() << "rename " << tmp;
}

FakeNvmlHooks::FakeNvmlHooks(const char* library_path) : handle_(dlopen(library_path, RTLD_NOW | RTLD_LOCAL)) {
  if (handle_ == nullptr) {
    ADD_FAILURE() << dlerror();
    return;
  }
  call_count_ = reinterpret_cast<decltype(call_count_)>(dlsym(handle_, "ws_fake_nvml_call_count"));
  live_objects_ = reinterpret_cast<decltype(live_objects_)>(dlsym(handle_, "ws_fake_nvml_live_objects"));
}

FakeNvmlHooks::~FakeNvmlHooks() {
  if (handle_ != nullptr) dlclose(handle_);
}

unsigned long long FakeNvmlHooks::CallCount(const char* function) const {
  return call_count_ != nullptr ? call_count_(function) : 0;
}

int FakeNvmlHooks::LiveObjects() const { return live_objects_ != nullptr ? live_objects_() : -1; }

std::unique_ptr<NvmlReader> OpenCollector(const char* library_path, int slow_metrics_every) {
  GpuMetricsOptions options;
  options.library_path = library_path;
  options.slow_metrics_every = slow_metrics_every;
  options.process_utilization_every = 1;  // tests that want every Nth set it themselves
  auto collector = NvmlReader::Open(options);
  if (!collector.ok()) {
    ADD_FAILURE() << collector.status().ToString();
    return nullptr;
  }
  return std::move(collector).value();
}

std::string Label(const GpuReading& r, const std::string& key) {
  for (const auto& [k, v] : r.labels) {
    if (k == key) return v;
  }
  return "<none>";
}

std::vector<const GpuReading*> Find(const std::vector<GpuReading>& readings, const std::string& metric,
                                    const std::string& gpu) {
  std::vector<const GpuReading*> found;
  for (const GpuReading& r : readings) {
    if (r.metric == metric && Label(r, "gpu") == gpu) found.push_back(&r);
  }
  return found;
}

double ValueOf(const std::vector<GpuReading>& readings, const std::string& metric, const std::string& gpu) {
  const auto found = Find(readings, metric, gpu);
  if (found.size() != 1) {
    ADD_FAILURE() << found.size() << " readings of " << metric << " on GPU " << gpu;
    return -1;
  }
  return found[0]->value;
}

bool IsDisabled(const NvmlReader& c, int gpu, const std::string& metric) {
  for (const DisabledGpuMetric& d : c.DisabledMetrics()) {
    if (d.gpu == gpu && d.metric == metric) return true;
  }
  return false;
}

}  // namespace warpscope
