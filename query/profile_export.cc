#include "query/profile_export.h"

#include "base/saturating.h"

#include <map>
#include <vector>

#include "model/formats/collapsed_writer.h"
#include "model/formats/pprof_writer.h"
#include "model/profile.h"
#include "query/frame_label.h"

namespace warpscope::query {

namespace {

constexpr char kKernelMapping[] = "[kernel.kallsyms]";


bool Named(const storage::ResolvedFrame& frame) {
  return !frame.function_name.empty() || !frame.system_name.empty();
}

// Turns stored frames back into the pprof model's mappings, functions and
// locations. One per export of one profile; not thread-safe.
class ProfileModelBuilder {
 public:
  ProfileModelBuilder(ProfileBuilder* builder, const storage::MergedProfile& profile)
      : builder_(builder), profile_(profile), memo_(profile.frames.size()) {}

  // Location ids of `stack` (leaf first): each run of inlined frames and the
  // frame that ends it (the location's outermost line) become one location.
  // A run that is consecutive in the frame table (a stored location's lines
  // always are) is built once and then found by its first frame.
  std::vector<uint64_t> Locations(const storage::StackValue& stack) {
    const std::vector<uint32_t>& frames = stack.frames;
    std::vector<uint64_t> ids;
    size_t begin = 0;
    while (begin < frames.size()) {
      size_t end = begin;  // the run is [begin, end]
      bool consecutive = true;
      while (end + 1 < frames.size() && profile_.frame(frames[end]).inlined) {
        ++end;
        consecutive = consecutive && frames[end] == frames[begin] + (end - begin);
      }
      const uint32_t count = static_cast<uint32_t>(end + 1 - begin);
      MemoEntry& memo = memo_[frames[begin]];
      if (consecutive && memo.count == count) {
        ids.push_back(memo.location);
      } else {
        std::vector<const storage::ResolvedFrame*> run;
        for (size_t i = begin; i <= end; ++i) run.push_back(&profile_.frame(frames[i]));
        ids.push_back(Location(run));
        if (consecutive && memo.count == 0) memo = {count, ids.back()};
      }
      begin = end + 1;
    }
    return ids;
  }

 private:
  struct MemoEntry {
    uint32_t count = 0;  // frames in the run; 0 = none yet
    uint64_t location = 0;
  };

  uint64_t Function(const storage::ResolvedFrame& frame) {
    if (Named(frame)) return builder_->InternFunction(frame.function_name, frame.system_name, frame.file);
    const std::string name = FrameDisplayName(frame);
    return builder_->InternFunction(name, name, frame.file);
  }

  uint64_t Mapping(const storage::ResolvedFrame& frame, FrameKind kind) {
    if (frame.mapping_file.empty() && kind != FrameKind::kKernel) return 0;
    ProfileMapping mapping;
    mapping.filename = frame.mapping_file.empty() ? std::string(kKernelMapping) : frame.mapping_file;
    mapping.build_id = frame.build_id;
    mapping.is_kernel = kind == FrameKind::kKernel;
    return builder_->InternMapping(mapping);
  }

  // `run`: one location's frames, innermost first.
  uint64_t Location(const std::vector<const storage::ResolvedFrame*>& run) {
    const storage::ResolvedFrame& outer = *run.back();
    const FrameKind kind = FrameKindOf(outer);
    // Interpreter frames and named frames without an address have nothing to
    // key a location on but their function and line.
    if (run.size() == 1 && outer.address == 0 && (kind == FrameKind::kPython || Named(outer))) {
      return builder_->InternSourceLocation(Function(outer), outer.line, kind);
    }
    const uint64_t mapping_id = Mapping(outer, kind);
    std::vector<ProfileLine> lines;
    // A lone frame without a name keeps no lines: the pprof writer then names
    // it "libfoo.so+0x1a2b" itself, as frame_label.h does.
    if (run.size() > 1 || Named(outer)) {
      for (const storage::ResolvedFrame* frame : run) lines.push_back(ProfileLine{Function(*frame), frame->line});
    }
    return builder_->InternLocation(mapping_id, outer.address, kind, lines);
  }

  ProfileBuilder* builder_;
  const storage::MergedProfile& profile_;
  std::vector<MemoEntry> memo_;  // by frame table index of a run's first frame
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
  ProfileModelBuilder model(&builder, profile);
  for (const storage::StackValue& stack : profile.stacks) {
    if (stack.value <= 0) continue;
    builder.AddSample(model.Locations(stack), stack.value, SampleLabels{});
  }
  Profile out = builder.Finish(to_ns > from_ns ? to_ns - from_ns : 0);
  out.sample_types = sample_types;
  out.has_thread_labels = false;
  return EncodePprofGzip(out);
}

std::string RenderCollapsed(const storage::MergedProfile& profile) {
  FrameLabelInterner labels;
  StackLabeler labeler(&labels, profile);
  std::vector<uint32_t> stack_labels;
  std::map<std::string, int64_t> values;
  std::string line;
  for (const storage::StackValue& stack : profile.stacks) {
    if (stack.value <= 0) continue;
    line.clear();
    labeler.Label(stack, &stack_labels);
    // Frames are leaf first; folded stacks root first.
    for (auto it = stack_labels.rbegin(); it != stack_labels.rend(); ++it) {
      const FrameLabel& label = labels.label(*it);
      if (!line.empty()) line.push_back(';');
      AppendCollapsedFrame(label.name, label.kind == FrameKind::kKernel, &line);
    }
    if (line.empty()) line = "[unknown]";
    SaturatingAddTo(values[line], stack.value);
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
