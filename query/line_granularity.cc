#include "query/line_granularity.h"

#include <string>

#include "query/frame_label.h"

namespace warpscope::query {

void SplitFramesByLine(storage::MergedProfile* profile) {
  for (storage::ResolvedFrame& frame : profile->frames) {
    if (frame.line <= 0 || (frame.function_name.empty() && frame.system_name.empty())) continue;
    const FrameKind kind = FrameKindOf(frame);
    if (kind == FrameKind::kCudaKernel || frame.kind == kGroupFrameKind) continue;
    std::string name = FrameDisplayName(frame);
    if (kind != FrameKind::kPython && !frame.file.empty()) {
      const size_t slash = frame.file.rfind('/');
      name += " " + (slash == std::string::npos ? frame.file : frame.file.substr(slash + 1));
    }
    name += ":" + std::to_string(frame.line);
    frame.function_name = std::move(name);
  }
}

}  // namespace warpscope::query
