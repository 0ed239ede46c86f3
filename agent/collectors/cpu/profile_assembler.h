// ProfileAssembler turns drained BPF sample batches into the symbolized
// Profile: each raw address becomes a Location (through the Symbolizer), each
// aggregated key a Sample. One per recording (`run`: one for the whole run,
// pointed at each window's builder in turn); owned by the sampling thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "agent/collectors/cpu/cpu_sampler.h"
#include "model/profile.h"
#include "agent/symbolize/symbolizer.h"
#include "agent/unwind/python/python_processes.h"

namespace warpscope {

// How the user stacks of one process ended (bpf/intf/cpu_sampler.h ws_stack_end).
struct UnwindOutcome {
  std::string comm;
  uint64_t samples = 0;               // samples with a user stack
  uint64_t by_end[WS_END_MAX] = {};   // indexed by ws_stack_end
  double RootShare() const { return samples ? static_cast<double>(by_end[WS_END_ROOT]) / samples : 0; }
};
const char* StackEndName(uint32_t end);

struct AssemblerStats {
  uint64_t samples = 0;             // sample counts added to the profile
  uint64_t missing_stack_refs = 0;  // keys whose stack was not in the batch
  uint64_t truncated_user_stacks = 0;
  std::map<uint32_t, UnwindOutcome> unwind_by_pid;
};

class ProfileAssembler {
 public:
  // kCpu: a batch's CPU samples (counts). kOffCpu: its off-CPU time (blocked
  // nanoseconds), each sample labelled with its wait_reason where the kernel
  // stack tells it (wait_reason.h).
  enum class Kind { kCpu, kOffCpu };

  // `python` may be null (Python frames then show as unresolved).
  ProfileAssembler(Symbolizer* symbolizer, PythonProcesses* python, ProfileBuilder* builder, int64_t period_nanos,
                   Kind kind = Kind::kCpu);

  void AddBatch(const CpuSampleBatch& batch);
  // Continues into another profile (the next upload window of `run`). Location
  // ids belong to a builder, so every memo is cleared; stats keep accumulating.
  void SetBuilder(ProfileBuilder* builder);
  // The time of the samples of the next batches (ProfileBuilder::SetSampleTime).
  void SetSampleTime(int64_t unix_nanos) { builder_->SetSampleTime(unix_nanos); }
  const AssemblerStats& stats() const { return stats_; }

 private:
  uint64_t UserLocation(uint32_t pid, uint64_t address, bool is_return_address);
  uint64_t KernelLocation(uint64_t address, bool is_return_address);
  uint64_t PythonLocation(uint32_t pid, uint64_t slot0, uint64_t slot1);
  // The first decisive reason along a kernel stack, leaf first; "" if none.
  std::string_view WaitReason(const RawStack& kernel_stack);

  Symbolizer* symbolizer_;
  PythonProcesses* python_;
  ProfileBuilder* builder_;
  int64_t period_nanos_;
  Kind kind_;
  AssemblerStats stats_;
  // User addresses are memoised per batch only: a pid can exec or be reused
  // between batches. Kernel text does not move, so its memo lives for the run.
  std::map<std::tuple<uint32_t, uint64_t, bool>, uint64_t> user_memo_;
  std::map<std::pair<uint64_t, bool>, uint64_t> kernel_memo_;
  std::unordered_map<uint64_t, std::string_view> wait_reason_memo_;  // kernel address -> reason, for the run
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, uint64_t> python_memo_;  // per batch, like user_memo_
};

}  // namespace warpscope
