#include "agent/collectors/gpu_time/launch_stack_table.h"

#include <algorithm>
#include <string_view>

#include "agent/collectors/gpu_time/autograd_graft.h"
#include "bpf/intf/python.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace warpscope::gpu {
namespace {

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

bool IsProfilerFrame(const SymbolizedFrame& frame) {
  if (!frame.has_mapping) return false;
  const std::string_view base = Basename(frame.mapping.filename);
  return base.starts_with("libwarpscope_cuda") || base.starts_with("libcupti");
}

CapturedFrame SyntheticFrame(const std::string& name) {
  CapturedFrame f;
  f.synthetic = true;
  f.frame.functions.push_back({name, name, "", 0});
  return f;
}

uint64_t LaunchStackTable::Intern(uint32_t pid, const ws_stack& stack, int64_t now_ns) {
  ++stats_.captured;
  const uint32_t len = std::min<uint32_t>(stack.len, WS_MAX_STACK_FRAMES);
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, &pid, sizeof(pid));
  XXH3_64bits_update(&state, stack.frames, len * sizeof(uint64_t));
  uint64_t key = XXH3_64bits_digest(&state);
  if (key == 0) key = 1;
  if (auto it = stacks_.find(key); it != stacks_.end()) {
    it->second.last_used_ns = now_ns;
    return key;
  }
  if (Full()) return 0;
  LaunchStack s = Symbolize(pid, stack);
  s.last_used_ns = now_ns;
  Insert(key, std::move(s));
  ++stats_.symbolized;
  return key;
}

LaunchStack LaunchStackTable::Symbolize(uint32_t pid, const ws_stack& stack) {
  const uint32_t len = std::min<uint32_t>(stack.len, WS_MAX_STACK_FRAMES);
  const bool python = stack.flags & WS_STACK_PYTHON;
  if (python && python_ != nullptr) python_->Prefetch(pid, reinterpret_cast<const uint64_t*>(stack.frames), len);
  LaunchStack out;
  out.pid = pid;
  out.frames.reserve(len);
  bool leaf_side = true;  // still in the probe's, the library's or CUPTI's frames
  for (uint32_t i = 0; i < len; ++i) {
    CapturedFrame f;
    if (python && (stack.frames[i] & WS_PY_FRAME_TAG) && i + 1 < len) {
      PythonFrame py = python_ != nullptr ? python_->ResolveSlots(pid, stack.frames[i], stack.frames[i + 1])
                                          : PythonFrame{"[python]", "", 0};
      ++i;
      f.kind = FrameKind::kPython;
      f.frame.functions.push_back({py.name, py.name, py.filename, py.line});
    } else {
      f.frame = symbolizer_->SymbolizeUser(pid, stack.frames[i], i > 0);
      if (leaf_side && IsProfilerFrame(f.frame)) {
        ++stats_.frames_trimmed;
        continue;
      }
    }
    leaf_side = false;
    out.frames.push_back(std::move(f));
  }
  out.autograd = ClassifyAutogradStack(out.frames);
  return out;
}

uint64_t LaunchStackTable::InternGraft(uint64_t worker_key, const BackwardCall& call, int64_t now_ns) {
  auto worker = stacks_.find(worker_key);
  if (worker == stacks_.end()) return 0;
  constexpr uint64_t kGraftSeed = 0x6175746f67726164ull;  // "autograd"
  const uint64_t parts[3] = {worker_key, call.caller_key, call.caller.empty() ? 0 : call.caller.size()};
  uint64_t key = XXH3_64bits_withSeed(parts, sizeof(parts), kGraftSeed);
  if (key == 0) key = 1;
  if (auto it = stacks_.find(key); it != stacks_.end()) {
    it->second.last_used_ns = now_ns;
    worker->second.last_used_ns = now_ns;
    return key;
  }
  if (Full()) return 0;
  const LaunchStack& w = worker->second;
  LaunchStack s;
  s.pid = w.pid;
  s.last_used_ns = now_ns;
  const size_t keep = std::min<size_t>(w.autograd.keep, w.frames.size());
  s.frames.reserve(keep + 1 + std::max<size_t>(call.caller.size(), 1));
  s.frames.insert(s.frames.end(), w.frames.begin(), w.frames.begin() + keep);
  s.frames.push_back(SyntheticFrame(w.autograd.node.empty() ? "[autograd]" : "[autograd] " + w.autograd.node));
  if (call.caller.empty()) {
    s.frames.push_back(SyntheticFrame("[backward caller not captured]"));
  } else {
    s.frames.insert(s.frames.end(), call.caller.begin(), call.caller.end());
  }
  worker->second.last_used_ns = now_ns;
  Insert(key, std::move(s));
  ++stats_.grafts;
  return key;
}

bool LaunchStackTable::Full() {
  if (stacks_.size() < max_stacks_ && stats_.bytes < max_bytes_) return false;
  ++stats_.full;
  return true;
}

size_t LaunchStackTable::StackBytes(const LaunchStack& s) {
  constexpr size_t kNode = 64;  // the map node and its key
  size_t bytes = kNode + sizeof(LaunchStack) + s.frames.capacity() * sizeof(CapturedFrame) + s.autograd.node.capacity();
  for (const CapturedFrame& f : s.frames) {
    bytes += f.frame.mapping.filename.capacity() + f.frame.mapping.build_id.capacity() +
             f.frame.functions.capacity() * sizeof(SymbolizedFunction);
    for (const SymbolizedFunction& fn : f.frame.functions) {
      bytes += fn.name.capacity() + fn.system_name.capacity() + fn.filename.capacity();
    }
  }
  return bytes;
}

void LaunchStackTable::Insert(uint64_t key, LaunchStack s) {
  const size_t bytes = StackBytes(s);
  if (stacks_.emplace(key, std::move(s)).second) stats_.bytes += bytes;
}

const LaunchStack* LaunchStackTable::Find(uint64_t key) const {
  auto it = stacks_.find(key);
  return it == stacks_.end() ? nullptr : &it->second;
}

void LaunchStackTable::Expire(int64_t now_ns, int64_t max_age_ns) {
  for (auto it = stacks_.begin(); it != stacks_.end();) {
    if (it->second.last_used_ns < now_ns - max_age_ns) {
      stats_.bytes -= std::min<uint64_t>(stats_.bytes, StackBytes(it->second));
      it = stacks_.erase(it);
      ++stats_.evicted;
    } else {
      ++it;
    }
  }
}

}  // namespace warpscope::gpu
