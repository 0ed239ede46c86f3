#include "agent/collectors/cpu/profile_assembler.h"

#include "agent/collectors/cpu/wait_reason.h"

namespace warpscope {

const char* StackEndName(uint32_t end) {
  switch (end) {
    case WS_END_KERNEL_FP: return "frame_pointers";
    case WS_END_ROOT: return "root";
    case WS_END_TRUNCATED: return "too_deep";
    case WS_END_NO_MAPPING: return "no_mapping";
    case WS_END_ANON: return "jit_or_anonymous";
    case WS_END_INVALID_RULE: return "unsupported_cfi";
    case WS_END_READ_ERROR: return "read_error";
    default: return "unknown";
  }
}

ProfileAssembler::ProfileAssembler(Symbolizer* symbolizer, PythonProcesses* python, ProfileBuilder* builder,
                                   int64_t period_nanos, Kind kind)
    : symbolizer_(symbolizer), python_(python), builder_(builder), period_nanos_(period_nanos), kind_(kind) {}

std::string_view ProfileAssembler::WaitReason(const RawStack& kernel_stack) {
  constexpr size_t kMaxMemo = 1 << 16;  // kernel text is finite; bounded all the same
  for (size_t i = 0; i < kernel_stack.frames.size(); ++i) {
    const uint64_t address = kernel_stack.frames[i];
    auto it = wait_reason_memo_.find(address);
    if (it == wait_reason_memo_.end()) {
      if (wait_reason_memo_.size() >= kMaxMemo) wait_reason_memo_.clear();
      const SymbolizedFrame frame = symbolizer_->SymbolizeKernel(address, i > 0);
      // The outermost function at the address: an inlined callee is not the wait.
      it = wait_reason_memo_.emplace(address, WaitReasonOfFunction(frame.functions.back().name)).first;
    }
    if (!it->second.empty()) return it->second;
  }
  return {};
}

void ProfileAssembler::SetBuilder(ProfileBuilder* builder) {
  builder_ = builder;
  user_memo_.clear();
  kernel_memo_.clear();
  python_memo_.clear();
}

uint64_t ProfileAssembler::UserLocation(uint32_t pid, uint64_t address, bool is_return_address) {
  auto key = std::make_tuple(pid, address, is_return_address);
  auto it = user_memo_.find(key);
  if (it != user_memo_.end()) return it->second;
  const uint64_t id = InternSymbolizedFrame(builder_, symbolizer_->SymbolizeUser(pid, address, is_return_address), FrameKind::kNative);
  user_memo_.emplace(key, id);
  return id;
}

uint64_t ProfileAssembler::KernelLocation(uint64_t address, bool is_return_address) {
  auto key = std::make_pair(address, is_return_address);
  auto it = kernel_memo_.find(key);
  if (it != kernel_memo_.end()) return it->second;
  const uint64_t id = InternSymbolizedFrame(builder_, symbolizer_->SymbolizeKernel(address, is_return_address), FrameKind::kKernel);
  kernel_memo_.emplace(key, id);
  return id;
}

uint64_t ProfileAssembler::PythonLocation(uint32_t pid, uint64_t slot0, uint64_t slot1) {
  auto key = std::make_tuple(pid, slot0, slot1);
  auto it = python_memo_.find(key);
  if (it != python_memo_.end()) return it->second;
  PythonFrame frame;
  if (python_) {
    frame = python_->ResolveSlots(pid, slot0, slot1);
  } else {
    frame.name = "[python]";
  }
  const uint64_t fn = builder_->InternFunction(frame.name, frame.name, frame.filename);
  const uint64_t id = builder_->InternSourceLocation(fn, frame.line, FrameKind::kPython);
  python_memo_.emplace(key, id);
  return id;
}

void ProfileAssembler::AddBatch(const CpuSampleBatch& batch) {
  user_memo_.clear();
  python_memo_.clear();
  std::vector<uint64_t> locations;
  const std::vector<RawSample>& samples = kind_ == Kind::kOffCpu ? batch.off_cpu : batch.samples;
  for (const RawSample& sample : samples) {
    locations.clear();
    std::string_view wait_reason;
    // pprof wants leaf first: the kernel part of the stack sits below the user part.
    if (sample.kernel_stack_hash) {
      auto it = batch.stacks.find(sample.kernel_stack_hash);
      if (it == batch.stacks.end()) {
        ++stats_.missing_stack_refs;
      } else {
        const auto& frames = it->second.frames;
        for (size_t i = 0; i < frames.size(); ++i) locations.push_back(KernelLocation(frames[i], i > 0));
        if (kind_ == Kind::kOffCpu) wait_reason = WaitReason(it->second);
      }
    }
    if (sample.user_stack_hash) {
      auto it = batch.stacks.find(sample.user_stack_hash);
      if (it == batch.stacks.end()) {
        ++stats_.missing_stack_refs;
      } else {
        const auto& frames = it->second.frames;
        if (it->second.truncated) stats_.truncated_user_stacks += sample.count;
        UnwindOutcome& outcome = stats_.unwind_by_pid[sample.pid];
        if (outcome.comm.empty()) outcome.comm = sample.process_comm;
        outcome.samples += sample.count;
        if (it->second.end < WS_END_MAX) outcome.by_end[it->second.end] += sample.count;
        // When the sample hit kernel mode, frames[0] is where user code entered
        // the kernel: a return address like every other caller frame.
        const bool entered_kernel = sample.kernel_stack_hash != 0;
        for (size_t i = 0; i < frames.size(); ++i) {
          if (it->second.python && (frames[i] & WS_PY_FRAME_TAG) && i + 1 < frames.size()) {
            locations.push_back(PythonLocation(sample.pid, frames[i], frames[i + 1]));
            ++i;
            continue;
          }
          locations.push_back(UserLocation(sample.pid, frames[i], i > 0 || entered_kernel));
        }
      }
    }
    if (locations.empty()) {
      // Both stacks failed: keep the sample visible rather than drop its time.
      const uint64_t fn = builder_->InternFunction("[no stack]", "[no stack]");
      locations.push_back(builder_->InternFunctionLocation(0, 0, FrameKind::kNative, fn));
    }
    SampleLabels labels;
    labels.pid = sample.pid;
    labels.tid = sample.tid;
    labels.comm = sample.process_comm;
    labels.thread_name = sample.comm;
    if (!wait_reason.empty()) labels.extra.emplace_back("wait_reason", std::string(wait_reason));
    builder_->AddSample(locations, static_cast<int64_t>(sample.count), labels);
    stats_.samples += sample.count;
  }
}

}  // namespace warpscope
