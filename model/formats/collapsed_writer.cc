#include "model/formats/collapsed_writer.h"

#include <map>
#include <vector>

#include "model/frame_names.h"

namespace warpscope {

namespace {

// ';' separates frames and '\n' lines: neither may appear inside a frame.
// ':' is what FlameGraph's own stackcollapse scripts substitute for ';'.
void AppendSanitized(const std::string& name, std::string* out) {
  if (name.empty()) {
    out->append("[unknown]");
    return;
  }
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (c == ';') {
      out->push_back(':');
    } else if (u < 0x20 || u == 0x7f) {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
}

// A location's frames as folded text, outer inlined function first; cached
// per location because the same locations recur in most samples.
std::string FoldLocation(const Profile& profile, const ProfileLocation& location) {
  const std::vector<std::string> names = FrameNamesInnermostFirst(profile, location);
  const bool kernel = location.kind == FrameKind::kKernel;
  std::string folded;
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    if (!folded.empty()) folded.push_back(';');
    AppendCollapsedFrame(*it, kernel, &folded);
  }
  return folded;
}

}  // namespace

void AppendCollapsedFrame(const std::string& name, bool kernel, std::string* out) {
  AppendSanitized(name, out);
  if (kernel) out->append("_[k]");
}

std::string EncodeCollapsed(const Profile& profile) {
  std::vector<std::string> folded_locations(profile.locations.size());
  std::vector<bool> folded_ready(profile.locations.size(), false);

  std::map<std::string, int64_t> counts;
  for (const ProfileSample& sample : profile.samples) {
    std::string stack;
    AppendSanitized(sample.labels.comm, &stack);
    // location_ids are leaf first; folded stacks are root first.
    for (auto it = sample.location_ids.rbegin(); it != sample.location_ids.rend(); ++it) {
      const uint64_t id = *it;
      if (id == 0 || id > profile.locations.size()) continue;  // EncodePprof reports these
      if (!folded_ready[id - 1]) {
        folded_locations[id - 1] = FoldLocation(profile, profile.location(id));
        folded_ready[id - 1] = true;
      }
      stack.push_back(';');
      stack.append(folded_locations[id - 1]);
    }
    counts[std::move(stack)] += sample.count;
  }

  std::string out;
  for (const auto& [stack, count] : counts) {
    if (count <= 0) continue;
    out.append(stack);
    out.push_back(' ');
    out.append(std::to_string(count));
    out.push_back('\n');
  }
  return out;
}

}  // namespace warpscope
