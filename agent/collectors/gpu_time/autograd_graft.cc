#include "agent/collectors/gpu_time/autograd_graft.h"

#include <algorithm>

namespace warpscope::gpu {
namespace {

// The engine's thread loop: PyTorch's device threads start in thread_init
// (PythonEngine's override calls the base) and run thread_main.
bool IsEngineThreadFunction(std::string_view name) {
  return name.starts_with("torch::autograd::Engine::thread_main") ||
         name.starts_with("torch::autograd::Engine::thread_init") ||
         name.starts_with("torch::autograd::python::PythonEngine::thread_init");
}

bool IsEngineThreadMain(std::string_view name) { return name.starts_with("torch::autograd::Engine::thread_main"); }

bool IsBackwardEntry(std::string_view name) {
  return name.starts_with("THPEngine_run_backward") || name.starts_with("torch::autograd::Engine::execute(") ||
         name.starts_with("torch::autograd::python::PythonEngine::execute(");
}

template <typename Pred>
bool AnyFunction(const CapturedFrame& f, Pred pred) {
  if (f.kind != FrameKind::kNative) return false;
  for (const SymbolizedFunction& fn : f.frame.functions) {
    if (pred(fn.name)) return true;
  }
  return false;
}

// The index of the '(' that opens `function`'s parameter list, or npos.
// "(anonymous namespace)" and template arguments are part of the name.
size_t ParameterListStart(std::string_view function) {
  int angle = 0;
  for (size_t i = 0; i < function.size(); ++i) {
    const char c = function[i];
    if (c == '<') ++angle;
    if (c == '>' && angle > 0) --angle;
    if (c == '(' && angle == 0) {
      if (function.substr(i).starts_with("(anonymous namespace)")) {
        i += std::string_view("(anonymous namespace)").size() - 1;
        continue;
      }
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::string AutogradNodeName(std::string_view function) {
  const size_t params = ParameterListStart(function);
  std::string_view qualified = function.substr(0, params);
  constexpr std::string_view kApply = "::apply";
  if (!qualified.starts_with("torch::") || !qualified.ends_with(kApply)) return "";
  qualified.remove_suffix(kApply.size());
  // The class: the last component outside template arguments.
  int angle = 0;
  size_t start = 0;
  for (size_t i = 0; i + 1 < qualified.size(); ++i) {
    const char c = qualified[i];
    if (c == '<') ++angle;
    if (c == '>' && angle > 0) --angle;
    if (angle == 0 && c == ':' && qualified[i + 1] == ':') start = i + 2;
  }
  return std::string(qualified.substr(start));
}

bool HasBackwardEntryFrame(const std::vector<CapturedFrame>& frames, size_t from) {
  for (size_t i = from; i < frames.size(); ++i) {
    if (AnyFunction(frames[i], [](std::string_view n) { return n.starts_with("THPEngine_run_backward"); })) return true;
  }
  return false;
}

AutogradShape ClassifyAutogradStack(const std::vector<CapturedFrame>& frames) {
  AutogradShape shape;
  // The rootmost frame of the engine's thread loop.
  size_t loop = frames.size();
  for (size_t i = frames.size(); i-- > 0;) {
    if (AnyFunction(frames[i], IsEngineThreadFunction)) {
      loop = i;
      break;
    }
  }
  if (loop == frames.size()) return shape;
  for (size_t i = loop + 1; i < frames.size(); ++i) {
    if (frames[i].kind == FrameKind::kPython || AnyFunction(frames[i], IsBackwardEntry)) return shape;
  }
  shape.worker = true;
  // The rootmost thread_main at or leafward of the loop's root frame.
  size_t main = loop;
  for (size_t i = loop + 1; i-- > 0;) {
    if (AnyFunction(frames[i], IsEngineThreadMain)) {
      main = i;
      break;
    }
  }
  shape.keep = static_cast<uint32_t>(main);
  // The rootmost node apply leafward of it: the node the thread ran (a
  // reentrant backward's own nodes stay leafward of it).
  for (size_t i = main; i-- > 0;) {
    if (frames[i].kind != FrameKind::kNative) continue;
    for (const SymbolizedFunction& fn : frames[i].frame.functions) {
      std::string node = AutogradNodeName(fn.name);
      if (!node.empty()) {
        shape.node = std::move(node);
        shape.keep = static_cast<uint32_t>(i + 1);
        return shape;
      }
    }
  }
  return shape;
}

void AutogradCalls::Enter(uint32_t pid, uint32_t tid, int64_t time_ns, uint64_t caller_key,
                          std::vector<CapturedFrame> caller) {
  std::deque<BackwardCall>& calls = calls_[pid];
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
    if (it->tid != tid || it->end_ns != 0) continue;
    // The thread is in a call already: a backward inside it (a hook or a CPU
    // node on the caller's thread calls backward again: its stack holds the
    // outer entry too), or the outer call's return was lost.
    if (caller.empty() || HasBackwardEntryFrame(caller, 1)) {
      ++it->depth;
      return;
    }
    it->end_ns = time_ns;
    ++stats_.returns_lost;
    break;
  }
  ++stats_.calls;
  if (caller.empty()) ++stats_.calls_without_stack;
  while (calls.size() >= max_calls_) {
    calls.pop_front();
    ++stats_.calls_dropped;
  }
  BackwardCall call;
  call.tid = tid;
  call.start_ns = time_ns;
  call.caller_key = caller_key;
  call.caller = std::move(caller);
  calls.push_back(std::move(call));
}

void AutogradCalls::Return(uint32_t pid, uint32_t tid, int64_t time_ns) {
  auto p = calls_.find(pid);
  if (p == calls_.end()) return;
  for (auto it = p->second.rbegin(); it != p->second.rend(); ++it) {
    if (it->tid != tid || it->end_ns != 0) continue;
    if (--it->depth == 0) it->end_ns = std::max(time_ns, it->start_ns);
    return;
  }
  // A call not kept (made on an autograd thread, or forgotten): nothing to end.
}

AutogradMatch AutogradCalls::Match(uint32_t pid, uint32_t tid, int64_t time_ns) const {
  AutogradMatch m;
  auto p = calls_.find(pid);
  if (p == calls_.end()) return m;
  int covering = 0;
  for (const BackwardCall& c : p->second) {
    if (c.start_ns > time_ns || (c.end_ns != 0 && c.end_ns < time_ns)) continue;
    ++covering;
    if (c.tid == tid) {  // the caller's own thread: its own call, whatever else runs
      m.call = &c;
      m.ambiguous = false;
      return m;
    }
    if (m.call == nullptr || c.start_ns >= m.call->start_ns) m.call = &c;
  }
  m.ambiguous = covering > 1;
  return m;
}

void AutogradCalls::Expire(int64_t now_ns) {
  for (auto p = calls_.begin(); p != calls_.end();) {
    std::erase_if(p->second, [&](const BackwardCall& c) { return c.end_ns != 0 && c.end_ns < now_ns - keep_ns_; });
    p = p->second.empty() ? calls_.erase(p) : std::next(p);
  }
}

}  // namespace warpscope::gpu
