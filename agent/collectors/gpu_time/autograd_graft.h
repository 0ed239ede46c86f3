// Autograd grafts: PyTorch runs a backward pass on its autograd engine's
// device threads (native threads with no Python frame), while the Python
// thread that called backward() waits. The agent probes the entry and the
// return of THPEngine_run_backward (libtorch_python.so: loss.backward() and
// torch.autograd.grad both go through it) and captures the caller's stack at
// entry; a launch or wait stack captured on an autograd thread of the same
// process during that call is then shown under the caller's stack, with the
// autograd node that ran as a frame:
//
//   train_step → backward → _engine_run_backward → THPEngine_run_backward
//     → [autograd] MmBackward0 → MmBackward0::apply → … → cudaLaunchKernel
//
// How the join is made and when it can be wrong: docs/design/gpu_time.md,
// "Autograd threads".
//
// Threading: the sampling thread (owned by GpuTimeCollector).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent/collectors/gpu_time/launch_stack_table.h"

namespace warpscope::gpu {

// The probed function, THPEngine_run_backward(_object*, _object*, _object*),
// by its C++ symbols: exported up to PyTorch 2.x releases that made it static;
// static, it is found in the library's .symtab (PyTorch's wheels keep it).
// The probe needs this function, not a public caller of the engine's
// execute: it catches every exception (HANDLE_TH_ERRORS), so none unwinds
// through the return probe's trampoline (an unwinder cannot, and would end
// the process). The library file names that hold it follow.
inline constexpr const char* kAutogradEntrySymbols[] = {"_Z22THPEngine_run_backwardP7_objectS0_S0_",
                                                        "_ZL22THPEngine_run_backwardP7_objectS0_S0_"};
inline constexpr char kAutogradLibraryPrefix[] = "libtorch_python";

// Node name of a demangled autograd `apply` method:
// "torch::autograd::generated::MmBackward0::apply(std::vector<…>&&)" ->
// "MmBackward0"; "" when `function` is not a Node's apply (a method named
// apply of a class in a torch:: namespace).
std::string AutogradNodeName(std::string_view function);

// The AutogradShape of a stack (launch_stack_table.h). A stack is a worker's when it holds the engine's thread loop
// (torch::autograd::Engine::thread_main or thread_init) and nothing rootward
// of its rootmost such frame is Python or a backward call's entry: the
// caller's own thread runs thread_main too (for CPU nodes), but under its
// Python frames and THPEngine_run_backward.
AutogradShape ClassifyAutogradStack(const std::vector<CapturedFrame>& frames);

// True when the stack (leaf first) holds a THPEngine_run_backward frame at
// or after index `from`.
bool HasBackwardEntryFrame(const std::vector<CapturedFrame>& frames, size_t from);

struct BackwardCall {
  uint32_t tid = 0;
  int64_t start_ns = 0;  // CLOCK_MONOTONIC, as the probes' events
  int64_t end_ns = 0;    // 0: not returned yet
  uint32_t depth = 1;    // backward calls nested on the caller's thread
  uint64_t caller_key = 0;  // the caller's stack in the LaunchStackTable (0: not captured)
  std::vector<CapturedFrame> caller;  // a copy, leaf first (the table may forget the key first)
};

struct AutogradMatch {
  const BackwardCall* call = nullptr;  // null: no backward call covered the time
  bool ambiguous = false;              // several did: `call` is the one that started last
};

struct AutogradStats {
  uint64_t calls = 0;               // backward calls entered on a thread that is not an autograd thread
  uint64_t calls_on_workers = 0;    // entered on an autograd thread (reentrant backward): not a caller
  uint64_t calls_without_stack = 0; // the caller's stack could not be captured
  uint64_t calls_dropped = 0;       // the per-process bound forgot a call
  uint64_t returns_lost = 0;        // an entry found its thread still in a call whose return never came
  uint64_t grafted = 0;             // worker stacks put under their backward call's caller
  uint64_t ambiguous = 0;           // ... of them, while several backward calls of the process ran
  uint64_t unmatched = 0;           // worker stacks that no backward call covered: left as captured
};

// The backward calls of each process: running, and ended within `keep_ns`
// (stacks taken during a call may be read after its return).
class AutogradCalls {
 public:
  explicit AutogradCalls(size_t max_calls_per_process = 64, int64_t keep_ns = 10'000'000'000)
      : max_calls_(max_calls_per_process), keep_ns_(keep_ns) {}

  // THPEngine_run_backward entered on (pid, tid) at `time_ns`; `caller` its
  // stack (empty: not captured; the key 0).
  void Enter(uint32_t pid, uint32_t tid, int64_t time_ns, uint64_t caller_key, std::vector<CapturedFrame> caller);
  // ... returned.
  void Return(uint32_t pid, uint32_t tid, int64_t time_ns);
  // The call of `pid` running at `time_ns` for a stack taken on thread `tid`.
  // Counts nothing: the caller counts what it did with the answer.
  AutogradMatch Match(uint32_t pid, uint32_t tid, int64_t time_ns) const;
  void ForgetProcess(uint32_t pid) { calls_.erase(pid); }
  // Forgets calls that ended more than keep_ns before `now_ns`.
  void Expire(int64_t now_ns);

  AutogradStats& stats() { return stats_; }
  const AutogradStats& stats() const { return stats_; }
  size_t processes() const { return calls_.size(); }

 private:
  const size_t max_calls_;
  const int64_t keep_ns_;
  std::map<uint32_t, std::deque<BackwardCall>> calls_;  // pid -> calls, by start
  AutogradStats stats_;
};

}  // namespace warpscope::gpu
