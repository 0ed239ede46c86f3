#include "query/frame_label.h"

#include <cinttypes>
#include <cstdio>
#include <functional>

#include "model/frame_names.h"

namespace warpscope::query {

namespace {

constexpr char kKernelBinary[] = "[kernel.kallsyms]";
// The "binary" of CUDA kernel frames (gpu_time leaves).
constexpr char kCudaKernelBinary[] = "[cuda kernel]";


std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

FrameKind FrameKindOf(const storage::ResolvedFrame& frame) {
  switch (frame.kind) {
    case warpscope::v1::FRAME_KIND_KERNEL: return FrameKind::kKernel;
    case warpscope::v1::FRAME_KIND_PYTHON: return FrameKind::kPython;
    case warpscope::v1::FRAME_KIND_CUDA_KERNEL: return FrameKind::kCudaKernel;
    case warpscope::v1::FRAME_KIND_GPU_LINE: return FrameKind::kGpuLine;
    case warpscope::v1::FRAME_KIND_GPU_INSTRUCTION: return FrameKind::kGpuInstruction;
    case warpscope::v1::FRAME_KIND_GPU_STALL: return FrameKind::kGpuStall;
    default: return FrameKind::kNative;
  }
}

std::string FrameDisplayName(const storage::ResolvedFrame& frame) {
  if (!frame.function_name.empty()) return frame.function_name;
  if (!frame.system_name.empty()) return frame.system_name;
  switch (FrameKindOf(frame)) {
    case FrameKind::kPython:
      if (frame.file.empty()) return "[unknown]";
      return std::string(Basename(frame.file)) + ":" + std::to_string(frame.line);
    case FrameKind::kKernel:
      return HexAddress(frame.address);  // what kallsyms and System.map list
    case FrameKind::kCudaKernel:
      return "[unknown kernel]";
    case FrameKind::kGpuLine:
      return std::string(Basename(frame.file)) + ":" + std::to_string(frame.line);
    case FrameKind::kGpuInstruction:
      return HexAddress(frame.address);
    case FrameKind::kGpuStall:
      return "[unknown stall reason]";
    default:
      // Native addresses are file offsets: they survive ASLR and match
      // `addr2line -e libfoo.so` on the same binary.
      if (frame.mapping_file.empty()) return HexAddress(frame.address);
      return std::string(Basename(frame.mapping_file)) + "+" + HexAddress(frame.address);
  }
}

std::string FrameBinaryName(const storage::ResolvedFrame& frame) {
  const FrameKind kind = FrameKindOf(frame);
  if (kind == FrameKind::kPython || kind == FrameKind::kGpuLine) return frame.file;
  if (kind == FrameKind::kCudaKernel || kind == FrameKind::kGpuInstruction || kind == FrameKind::kGpuStall) {
    return kCudaKernelBinary;
  }
  if (!frame.mapping_file.empty()) return std::string(Basename(frame.mapping_file));
  return kind == FrameKind::kKernel ? kKernelBinary : "";
}

FrameLabel LabelFrame(const storage::ResolvedFrame& frame) {
  if (frame.kind == kGroupFrameKind) return FrameLabel{frame.function_name, "", FrameKind::kNative, false, true};
  return FrameLabel{FrameDisplayName(frame), FrameBinaryName(frame), FrameKindOf(frame)};
}

size_t FrameLabelInterner::FrameKeyHash::operator()(const FrameKey& key) const {
  const std::hash<std::string_view> h;
  size_t seed = h(key.function_name);
  const auto mix = [&seed](size_t v) { seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2); };
  mix(h(key.system_name));
  mix(h(key.file));
  mix(h(key.mapping_file));
  mix(std::hash<uint64_t>()(key.address));
  mix(std::hash<int64_t>()(key.line));
  mix(static_cast<size_t>(key.kind));
  return seed;
}

uint32_t FrameLabelInterner::Intern(const storage::ResolvedFrame& frame) {
  // Only what the label depends on goes into the key, so the many stored
  // frames of one function (other lines, other addresses) share one lookup.
  const FrameKind kind = FrameKindOf(frame);
  const bool named = !frame.function_name.empty() || !frame.system_name.empty();
  FrameKey key{frame.function_name,
               frame.function_name.empty() ? std::string_view(frame.system_name) : std::string_view(),
               kind == FrameKind::kPython ? std::string_view(frame.file) : std::string_view(),
               kind == FrameKind::kPython ? std::string_view() : std::string_view(frame.mapping_file),
               named || kind == FrameKind::kPython ? 0 : frame.address,
               named || kind != FrameKind::kPython ? 0 : frame.line,
               frame.kind == kGroupFrameKind ? static_cast<int>(kGroupFrameKind) : static_cast<int>(kind)};
  const auto it = frame_ids_.find(key);
  if (it != frame_ids_.end()) return it->second;
  const uint32_t id = InternLabel(LabelFrame(frame));
  frame_ids_.emplace(key, id);
  return id;
}

uint32_t FrameLabelInterner::InternSynthetic(const std::string& name) {
  return InternLabel(FrameLabel{name, "", FrameKind::kNative, true});
}

uint32_t FrameLabelInterner::InternLabel(FrameLabel label) {
  std::string key;
  key.reserve(label.name.size() + label.binary.size() + 2);
  key.push_back(static_cast<char>('0' + label.JsonKind()));
  key.append(label.name);
  key.push_back('\0');
  key.append(label.binary);
  const auto [it, inserted] = label_ids_.try_emplace(std::move(key), static_cast<uint32_t>(labels_.size()));
  if (inserted) labels_.push_back(std::move(label));
  return it->second;
}

void StackLabeler::Label(const storage::StackValue& stack, std::vector<uint32_t>* ids) {
  ids->resize(stack.frames.size());
  for (size_t i = 0; i < stack.frames.size(); ++i) {
    uint32_t& label = label_of_frame_[stack.frames[i]];
    if (label == kUnlabeled) label = interner_->Intern(profile_.frame(stack.frames[i]));
    (*ids)[i] = label;
  }
}

}  // namespace warpscope::query
