// UprobeStackCollector owns the uprobe_stack BPF skeleton: whole user stacks
// (through the .eh_frame unwinder) at the entry of a function in a binary,
// e.g. cuLaunchKernel in libcuda, or libwarpscope_cuda.so's launch probe (the
// GPU-time collector, agent/collectors/gpu_time/).
//
// Threading: one owner thread calls every method, except the ones named
// …FromAnyThread (attach and detach: the GPU-time collector's ProbeAttacher
// attaches on a thread of its own, since opening a binary and registering a
// probe can wait); links_ is guarded by links_mu_ for them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/unwind/unwind_map_sizing.h"
#include "agent/unwind/unwind_table_loader.h"
#include "base/status.h"
#include "bpf/intf/uprobe_stack.h"

struct uprobe_stack_bpf;
struct ring_buffer;
struct bpf_link;
struct bpf_program;
struct bpf_uprobe_opts;

namespace warpscope {

struct UprobeStackStats {
  uint64_t values[WS_UPROBE_STAT_MAX] = {};
};

class UprobeStackCollector {
 public:
  ~UprobeStackCollector();
  UprobeStackCollector(const UprobeStackCollector&) = delete;
  UprobeStackCollector& operator=(const UprobeStackCollector&) = delete;

  // sample_every: unwind one hit in N per CPU (1 = every hit).
  static StatusOr<std::unique_ptr<UprobeStackCollector>> Create(uint32_t sample_every, const UnwindMapSizes& unwind);
  // Unwinds with another program's unwinder maps (the CPU sampler's), so the
  // processes it describes need no second copy of their tables.
  static StatusOr<std::unique_ptr<UprobeStackCollector>> CreateSharing(uint32_t sample_every,
                                                                       const UnwindMapFds& shared);

  // Attaches to `symbol` in `binary` (a path) for process `pid` (0: every
  // process). The handle detaches it again (Detach); probes still attached
  // go with the collector. `role` (ws_uprobe_role) is carried in each event:
  // a stack probe's hits may be sampled, a call's entry mark's never are.
  StatusOr<uint64_t> AttachFromAnyThread(uint32_t pid, const std::string& binary, const std::string& symbol,
                                         uint64_t role = WS_UPROBE_ROLE_STACK);
  // A uretprobe on `symbol`: an event without a stack, with `role`, the
  // return value in args[0] and the time, at each return. A function left by
  // a C++ exception or longjmp confuses the unwinders of the application
  // (the return address is the kernel's trampoline): probe only functions
  // that catch everything they call.
  StatusOr<uint64_t> AttachReturnFromAnyThread(uint32_t pid, const std::string& binary, const std::string& symbol,
                                               uint64_t role);
  // Removes the probe `handle` (stacks it already captured are still
  // delivered); NotFound for a handle not attached.
  Status DetachFromAnyThread(uint64_t handle);
  size_t attached() const {
    std::lock_guard lock(links_mu_);
    return links_.size();
  }

  // Delivers the stacks already in the ring buffer without waiting.
  Status Consume(const std::function<void(const ws_uprobe_stack_event&)>& on_stack);
  // Waits up to `timeout` and delivers each captured stack.
  Status Poll(std::chrono::milliseconds timeout, const std::function<void(const ws_uprobe_stack_event&)>& on_stack);

  UnwindMapFds unwind_map_fds() const;
  UprobeStackStats ReadStats() const;

 private:
  UprobeStackCollector() = default;
  static StatusOr<std::unique_ptr<UprobeStackCollector>> Load(uint32_t sample_every, const UnwindMapSizes* sizes,
                                                              const UnwindMapFds* shared);
  StatusOr<uint64_t> AttachProgram(bpf_program* program, uint32_t pid, const std::string& binary,
                                   const std::string& symbol, const bpf_uprobe_opts& opts);

  uprobe_stack_bpf* skel_ = nullptr;
  ring_buffer* stacks_ = nullptr;
  mutable std::mutex links_mu_;
  std::map<uint64_t, bpf_link*> links_;  // by handle; guarded by links_mu_
  uint64_t next_handle_ = 1;             // guarded by links_mu_
  std::function<void(const ws_uprobe_stack_event&)> on_stack_;  // valid during Poll only
};

}  // namespace warpscope
