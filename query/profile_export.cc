#include "query/profile_export.h"

#include <map>
#include <vector>

#include "agent/export/collapsed_writer.h"
#include "agent/export/pprof_writer.h"
#include "agent/export/profile.h"
#include "query/frame_label.h"

namespace warpscope::query {

namespace {

constexpr char kKernelMapping[] = "[kernel.kallsyms]";

FrameKind ToProfileFrameKind(LabelKind kind) {
  switch (kind) {
    case LabelKind::kKernel: return FrameKind::kKernel;
    case LabelKind::kPython: return FrameKind::kPython;
    default: return FrameKind::kNative;
  }
}

bool Named(const storage::ResolvedFrame& frame) {
  return !frame.function_name.empty() || !frame.system_name.empty();
}

// Turns stored frames back into the pprof model's mappings, functions and
// locations. One per export; not thread-safe.
class ProfileModelBuilder {
 public:
  explicit ProfileModelBuilder(ProfileBuilder* builder) : builder_(builder) {}

  // Location ids of `frames` (leaf first): each run of inlined frames and the
  // frame that ends it (the location's outermost line) become one location.
  std::vector<uint64_t> Locations(const std::vector<storage::ResolvedFrame>& frames) {
    std::vector<uint64_t> ids;
    size_t begin = 0;
    while (begin < frames.size()) {
      size_t end = begin;
      while (end + 1 < frames.size() && frames[end].inlined) ++end;
      ids.push_back(Location(frames, begin, end + 1));
      begin = end + 1;
    }
    return ids;
  }

 private:
  uint64_t Function(const storage::ResolvedFrame& frame) {
    if (Named(frame)) return builder_->InternFunction(frame.function_name, frame.system_name, frame.file);
    const std::string name = FrameDisplayName(frame);
    return builder_->InternFunction(name, name, frame.file);
  }

  uint64_t Mapping(const storage::ResolvedFrame& frame, LabelKind kind) {
    if (frame.mapping_file.empty() && kind != LabelKind::kKernel) return 0;
    ProfileMapping mapping;
    mapping.filename = frame.mapping_file.empty() ? std::string(kKernelMapping) : frame.mapping_file;
    mapping.build_id = frame.build_id;
    mapping.is_kernel = kind == LabelKind::kKernel;
    return builder_->InternMapping(mapping);
  }

  uint64_t Location(const std::vector<storage::ResolvedFrame>& frames, size_t begin, size_t end) {
    const storage::ResolvedFrame& outer = frames[end - 1];
    const LabelKind kind = FrameLabelKind(outer);
    const FrameKind profile_kind = ToProfileFrameKind(kind);
    // Interpreter frames and named frames without an address have nothing to
    // key a location on but their function and line.
    if (end - begin == 1 && outer.address == 0 && (kind == LabelKind::kPython || Named(outer))) {
      return builder_->InternSourceLocation(Function(outer), outer.line, profile_kind);
    }
    const uint64_t mapping_id = Mapping(outer, kind);
    std::vector<ProfileLine> lines;
    // A lone frame without a name keeps no lines: the pprof writer then names
    // it "libfoo.so+0x1a2b" itself, as frame_label.h does.
    if (end - begin > 1 || Named(outer)) {
      for (size_t i = begin; i < end; ++i) lines.push_back(ProfileLine{Function(frames[i]), frames[i].line});
    }
    return builder_->InternLocation(mapping_id, outer.address, profile_kind, lines);
  }

  ProfileBuilder* builder_;
};

std::vector<SampleValueType> SampleTypes(const storage::ProfileTypeInfo& type) {
  if (type.sample_unit == "samples" || type.sample_unit.empty()) {
    if (type.period_nanos > 0 && !type.name.empty()) return {{"samples", "count"}, {type.name, "nanoseconds"}};
    return {{"samples", "count"}};
  }
  return {{type.name.empty() ? "value" : type.name, type.sample_unit}};
}

}  // namespace

StatusOr<std::string> RenderPprofGzip(const storage::MergedProfile& profile, int64_t from_ns, int64_t to_ns) {
  const std::vector<SampleValueType> sample_types = SampleTypes(profile.type);
  const int64_t period = sample_types.size() == 2 ? profile.type.period_nanos : 0;
  int64_t total = 0;
  for (const storage::StackValue& stack : profile.stacks) {
    int64_t scaled = 0;
    if (stack.value > 0 && (__builtin_add_overflow(total, stack.value, &total) ||
                            __builtin_mul_overflow(total, period, &scaled))) {
      return InvalidArgumentError("the profile's total times its period overflows 64 bits");
    }
  }

  const uint32_t frequency_hz = period > 0 ? static_cast<uint32_t>((1'000'000'000 + period / 2) / period) : 0;
  ProfileBuilder builder(from_ns, period, frequency_hz);
  ProfileModelBuilder model(&builder);
  for (const storage::StackValue& stack : profile.stacks) {
    if (stack.value <= 0) continue;
    builder.AddSample(model.Locations(stack.stack.frames), stack.value, SampleLabels{});
  }
  Profile out = builder.Finish(to_ns > from_ns ? to_ns - from_ns : 0);
  out.sample_types = sample_types;
  out.has_thread_labels = false;
  return EncodePprofGzip(out);
}

std::string RenderCollapsed(const storage::MergedProfile& profile) {
  FrameLabelInterner labels;
  std::map<std::string, int64_t> values;
  std::string line;
  for (const storage::StackValue& stack : profile.stacks) {
    if (stack.value <= 0) continue;
    line.clear();
    // Frames are leaf first; folded stacks root first.
    for (auto it = stack.stack.frames.rbegin(); it != stack.stack.frames.rend(); ++it) {
      const FrameLabel& label = labels.label(labels.Intern(*it));
      if (!line.empty()) line.push_back(';');
      AppendCollapsedFrame(label.name, label.kind == LabelKind::kKernel, &line);
    }
    if (line.empty()) line = "[unknown]";
    values[line] += stack.value;
  }
  std::string out;
  for (const auto& [stack, value] : values) {
    out.append(stack);
    out.push_back(' ');
    out.append(std::to_string(value));
    out.push_back('\n');
  }
  return out;
}

}  // namespace warpscope::query
