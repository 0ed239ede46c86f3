// LaunchStackTable: the CUDA launch stacks the agent's uprobe captured on
// libwarpscope_cuda.so's probe, symbolized when captured and interned by
// content. A launch's kernel record is joined seconds later (LaunchJoiner),
// when the process may have exited and its maps and Python code objects are
// gone, so names are resolved at capture; the same stack captured again (the
// common case: a training loop launches from a few call sites) costs one
// hash lookup.
//
// The frames between the launch API and the probe (libwarpscope_cuda.so's
// own and CUPTI's callback frames) are left out: the stack's leaf is the
// CUDA API the application called.
//
// Threading: the sampling thread (it uses the session's Symbolizer).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/profile.h"
#include "agent/symbolize/symbolizer.h"
#include "agent/unwind/python/python_processes.h"
#include "bpf/intf/cpu_sampler.h"

namespace warpscope::gpu {

// A frame as captured: a symbolized native frame, or a Python frame
// (kind kPython, no mapping, functions[0] = the code object).
// A synthetic frame (an autograd node, a placeholder) has one function
// and no mapping.
struct CapturedFrame {
  FrameKind kind = FrameKind::kNative;
  SymbolizedFrame frame;
  bool synthetic = false;
};

// Whether a stack ran on a PyTorch autograd engine's device thread, and
// where to cut it to graft it under its backward call (autograd_graft.h).
struct AutogradShape {
  bool worker = false;
  // Frames [0, keep) are the worker's own part: from the node's apply (or,
  // without one, the frame above the engine's thread_main) to the leaf.
  uint32_t keep = 0;
  std::string node;  // the node's name ("MmBackward0"); "" without an apply frame
};

struct LaunchStack {
  uint32_t pid = 0;
  std::vector<CapturedFrame> frames;  // leaf first
  int64_t last_used_ns = 0;
  AutogradShape autograd;  // classified once, when symbolized
};

struct BackwardCall;

struct LaunchStackTableStats {
  uint64_t captured = 0;     // stacks handed to Intern
  uint64_t symbolized = 0;   // distinct stacks symbolized
  uint64_t evicted = 0;      // forgotten after max_age or for room
  uint64_t full = 0;         // refused: table full of recent stacks
  uint64_t frames_trimmed = 0;  // library/CUPTI frames left out
  uint64_t grafts = 0;          // distinct grafted stacks made
  uint64_t bytes = 0;           // held now (frames, names, mappings)
};

class LaunchStackTable {
 public:
  // `python` may be null (Python frames then show as "[python]"). At most
  // `max_stacks` stacks and `max_bytes` of them are held: a symbolized stack
  // holds its names (a deep PyTorch stack is ~10 KB), so a job launching
  // from many call sites is bound by bytes first.
  static constexpr size_t kDefaultMaxBytes = size_t{64} << 20;
  LaunchStackTable(Symbolizer* symbolizer, PythonProcesses* python, size_t max_stacks = 100'000,
                   size_t max_bytes = kDefaultMaxBytes)
      : symbolizer_(symbolizer), python_(python), max_stacks_(max_stacks), max_bytes_(max_bytes) {}

  // The key of this stack (never 0), or 0 when the table is full.
  uint64_t Intern(uint32_t pid, const ws_stack& stack, int64_t now_ns);
  const LaunchStack* Find(uint64_t key) const;
  // The worker stack `worker_key` (an autograd thread's, see
  // LaunchStack::autograd) under `call`'s caller: the caller's frames, a
  // frame "[autograd] NODE", then the worker's frames from the node's apply
  // to the leaf. Interned like a captured stack (the same worker stack under
  // the same caller stack is one key); 0 when the table is full or
  // `worker_key` is gone.
  uint64_t InternGraft(uint64_t worker_key, const BackwardCall& call, int64_t now_ns);
  // Forgets stacks not used for `max_age_ns` (they can no longer meet a kernel record).
  void Expire(int64_t now_ns, int64_t max_age_ns);

  const LaunchStackTableStats& stats() const { return stats_; }
  size_t size() const { return stacks_.size(); }
  size_t max_bytes() const { return max_bytes_; }

 private:
  LaunchStack Symbolize(uint32_t pid, const ws_stack& stack);
  bool Full();  // counts the refusal
  void Insert(uint64_t key, LaunchStack s);
  static size_t StackBytes(const LaunchStack& s);

  Symbolizer* symbolizer_;
  PythonProcesses* python_;
  size_t max_stacks_;
  size_t max_bytes_;
  LaunchStackTableStats stats_;
  std::unordered_map<uint64_t, LaunchStack> stacks_;  // content key -> stack
};

// True for frames of the injection library and CUPTI (left out of launch stacks).
bool IsProfilerFrame(const SymbolizedFrame& frame);

// A frame with one function named `name`, no mapping.
CapturedFrame SyntheticFrame(const std::string& name);

}  // namespace warpscope::gpu
