// The fake NVML's process-wide state (fake_nvml.cc has the C entry points):
// the script in force, reloaded when its file changes, the device handles,
// event sets, GPM samples and pending XID events. NVML is a C library with
// global state, so the fake has one such object (State()); every entry point
// holds its mutex, so callers may use any thread.
#pragma once

#include <sys/stat.h>
#include <time.h>

#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "agent/collectors/gpu_metrics/nvml/nvml_abi.h"
#include "tests/fakes/fake_nvml/fake_nvml_script.h"

// What the fake's opaque handles point to.
namespace warpscope::nvml {
struct nvmlDevice_st {
  int index;
};
struct nvmlEventSet_st {
  bool registered[fake_nvml::kMaxDevices];
};
struct nvmlGpmSample_st {
  int device;         // -1 until nvmlGpmSampleGet
  unsigned long long sequence;
};
}  // namespace warpscope::nvml

namespace warpscope::fake_nvml {

using nvml::nvmlDevice_st;
using nvml::nvmlDevice_t;
using nvml::nvmlEventSet_st;
using nvml::nvmlEventSet_t;
using nvml::nvmlGpmSample_st;
using nvml::nvmlGpmSample_t;
using nvml::nvmlReturn_t;

// What identifies one version of the script file.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = -1;
  timespec mtime{};
  bool operator==(const FileId& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec;
  }
};

class FakeNvml {
 public:
  FakeNvml() {
    for (int i = 0; i < kMaxDevices; ++i) handles_[i].index = i;
  }
  ~FakeNvml() {
    for (nvmlEventSet_st* s : event_sets_) delete s;
    for (nvmlGpmSample_st* s : gpm_samples_) delete s;
  }

  std::mutex mu;
  unsigned long long calls[kFnCount] = {};

  // nvmlInit_v2: the first (reference-counted) init loads the script.
  nvmlReturn_t Init();

  nvmlReturn_t Shutdown() {
    if (init_count_ == 0) return nvml::NVML_ERROR_UNINITIALIZED;
    --init_count_;
    return nvml::NVML_SUCCESS;
  }

  // The common prologue of an NVML call: initialized, script fresh, handle
  // valid, no scripted error. *device is set when `handle` is given.
  nvmlReturn_t Enter(Fn fn, nvmlDevice_t handle, FakeDevice** device) {
    ++calls[static_cast<int>(fn)];
    if (init_count_ == 0) return nvml::NVML_ERROR_UNINITIALIZED;
    MaybeReload();
    if (device == nullptr) return script_.errors[static_cast<int>(fn)];
    return EnterDevice(fn, handle, device);
  }

  nvmlReturn_t EnterDevice(Fn fn, nvmlDevice_t handle, FakeDevice** device) {
    if (handle < &handles_[0] || handle >= &handles_[kMaxDevices]) return nvml::NVML_ERROR_INVALID_ARGUMENT;
    // A device the rewritten script no longer has fell off the bus.
    if (handle->index >= static_cast<int>(script_.devices.size())) return nvml::NVML_ERROR_GPU_IS_LOST;
    *device = &script_.devices[handle->index];
    return (*device)->errors[static_cast<int>(fn)];
  }

  const FakeScript& script() const { return script_; }
  nvmlDevice_t Handle(unsigned int index) { return &handles_[index]; }

  nvmlEventSet_st* NewEventSet() {
    auto* set = new nvmlEventSet_st{};
    event_sets_.insert(set);
    return set;
  }
  bool IsEventSet(nvmlEventSet_t set) const { return event_sets_.count(set) != 0; }
  void FreeEventSet(nvmlEventSet_t set) {
    event_sets_.erase(set);
    delete set;
  }
  // The oldest pending XID of a device registered in `set`.
  bool PopXid(nvmlEventSet_t set, int* device, unsigned long long* xid) {
    for (auto it = pending_xids_.begin(); it != pending_xids_.end(); ++it) {
      if (it->first < kMaxDevices && set->registered[it->first]) {
        *device = it->first;
        *xid = it->second;
        pending_xids_.erase(it);
        return true;
      }
    }
    return false;
  }

  nvmlGpmSample_st* NewGpmSample() {
    auto* sample = new nvmlGpmSample_st{-1, 0};
    gpm_samples_.insert(sample);
    return sample;
  }
  bool IsGpmSample(nvmlGpmSample_t sample) const { return gpm_samples_.count(sample) != 0; }
  void FreeGpmSample(nvmlGpmSample_t sample) {
    gpm_samples_.erase(sample);
    delete sample;
  }
  unsigned long long NextGpmSequence() { return ++gpm_sequence_; }
  int LiveObjects() const { return static_cast<int>(event_sets_.size() + gpm_samples_.size()); }

 private:
  void MaybeReload() {
    if (!script_path_.empty()) Reload(/*at_init=*/false);
  }

  // Reads the script if it changed (always at init). False on a failure at init.
  bool Reload(bool at_init);

  int init_count_ = 0;
  std::string script_path_;
  FileId file_id_;
  FakeScript script_ = warpscope::fake_nvml::DefaultScript();
  nvmlDevice_st handles_[kMaxDevices];
  std::deque<std::pair<int, unsigned long long>> pending_xids_;
  std::set<nvmlEventSet_t> event_sets_;
  std::set<nvmlGpmSample_t> gpm_samples_;
  unsigned long long gpm_sequence_ = 0;
};

FakeNvml& State();

}  // namespace warpscope::fake_nvml
