// How the query API names a stored frame: the one place that decides what the
// flame graph, the diff, the top table, the collapsed stacks and the pprof
// export call a frame, so that a name clicked in one view finds the same name
// in the others. It follows the agent's exporters (model/frame_names.h),
// so a profile looks the same recorded locally or queried from the server.
//
// Functions are identified by (name, binary, kind), and that is the merge key
// of every view: a function's lines and addresses are not part of it.
// Inlined functions are frames of their own (storage already expands them).
//
// Pure functions, and a FrameLabelInterner owned by one query (one thread).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/profile.h"
#include "storage/profile_store.h"

namespace warpscope::query {

// The kind of the label frames a grouped profile puts under the root
// (grouped_profile.h): never stored, agents send kinds 0-3.
inline constexpr warpscope::v1::FrameKind kGroupFrameKind = static_cast<warpscope::v1::FrameKind>(64);

struct FrameLabel {
  std::string name;    // never empty
  std::string binary;  // "" when unknown
  FrameKind kind = FrameKind::kNative;
  // A node that is no frame: the root ("total") and the "other" nodes that
  // hold folded children.
  bool synthetic = false;
  // A label frame of a grouped profile ("comm=python3").
  bool group = false;

  // The "kind" column of the JSON answers (docs/api.md): 0 native, 1 kernel,
  // 2 Python, 3 synthetic, 4 CUDA kernel (the leaf of gpu_time stacks), 5 a
  // group's label; inside a kernel (gpu_pc): 6 source line, 7 SASS
  // instruction, 8 stall reason.
  int JsonKind() const {
    if (synthetic) return 3;
    if (group) return 5;
    switch (kind) {
      case FrameKind::kCudaKernel: return 4;
      case FrameKind::kGpuLine: return 6;
      case FrameKind::kGpuInstruction: return 7;
      case FrameKind::kGpuStall: return 8;
      default: return static_cast<int>(kind);
    }
  }
};

// The display name:
//  * native and kernel: function_name (demangled), else system_name, else
//    "libfoo.so+0x1a2b" (basename of the mapping + file offset) or
//    "0xffffffff81001234" (kernel addresses and frames without a mapping);
//  * Python: function_name (the qualified name, as the agent's exports show
//    it), else system_name, else "file.py:42", else "[unknown]".
std::string FrameDisplayName(const storage::ResolvedFrame& frame);

// The binary: basename of mapping_file ("libc.so.6"); "[kernel.kallsyms]" for
// kernel frames without one; the source file (full path, as stored) for
// Python frames; "" when unknown.
std::string FrameBinaryName(const storage::ResolvedFrame& frame);

FrameKind FrameKindOf(const storage::ResolvedFrame& frame);

FrameLabel LabelFrame(const storage::ResolvedFrame& frame);

// Gives each distinct (name, binary, kind) a dense id, starting at 0, and
// remembers which stored frames map to which id, so each distinct frame of a
// profile is named once however many stacks contain it. Keys refer to the
// frames' strings: the profile passed to Intern must outlive the interner.
class FrameLabelInterner {
 public:
  uint32_t Intern(const storage::ResolvedFrame& frame);
  // Synthetic labels ("total", "other"): no binary.
  uint32_t InternSynthetic(const std::string& name);

  const FrameLabel& label(uint32_t id) const { return labels_[id]; }
  size_t size() const { return labels_.size(); }

 private:
  // The fields of a stored frame that its label depends on.
  struct FrameKey {
    std::string_view function_name;
    std::string_view system_name;
    std::string_view file;
    std::string_view mapping_file;
    uint64_t address;
    int64_t line;
    int kind;
    bool operator==(const FrameKey&) const = default;
  };
  struct FrameKeyHash {
    size_t operator()(const FrameKey& key) const;
  };
  uint32_t InternLabel(FrameLabel label);

  std::deque<FrameLabel> labels_;  // a deque: label() references stay valid while interning
  std::unordered_map<FrameKey, uint32_t, FrameKeyHash> frame_ids_;
  std::unordered_map<std::string, uint32_t> label_ids_;  // kind, name, '\0', binary
};

// Labels the stacks of one MergedProfile, naming each entry of its frame
// table once: a frame seen before costs one array lookup instead of hashing
// its names. One per answer (a diff's two sides have two frame tables); the
// profile must outlive it.
class StackLabeler {
 public:
  StackLabeler(FrameLabelInterner* interner, const storage::MergedProfile& profile)
      : interner_(interner), profile_(profile), label_of_frame_(profile.frames.size(), kUnlabeled) {}

  // The label ids of `stack`'s frames, in the same (leaf first) order.
  void Label(const storage::StackValue& stack, std::vector<uint32_t>* ids);

 private:
  static constexpr uint32_t kUnlabeled = UINT32_MAX;
  FrameLabelInterner* interner_;
  const storage::MergedProfile& profile_;
  std::vector<uint32_t> label_of_frame_;  // by frame table index
};

}  // namespace warpscope::query
