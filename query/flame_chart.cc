#include "query/flame_chart.h"

#include "base/saturating.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "query/frame_label.h"
#include "query/json_text.h"
#include "query/profile_json.h"

namespace warpscope::query {
LaneRanking LanesByTotal(const storage::StackTimeline& timeline) {
  LaneRanking r;
  r.total.assign(timeline.lanes.size(), 0);
  for (const storage::TimelinePoint& p : timeline.points) SaturatingAddTo(r.total[p.lane], p.value);
  r.order.resize(timeline.lanes.size());
  std::iota(r.order.begin(), r.order.end(), 0);
  std::stable_sort(r.order.begin(), r.order.end(), [&](uint32_t a, uint32_t b) { return r.total[a] > r.total[b]; });
  return r;
}

std::string RenderFlameChartJson(const storage::StackTimeline& timeline, const FlameChartOptions& options) {
  const storage::MergedProfile& profile = timeline.profile;
  const auto [lane_total, order] = LanesByTotal(timeline);
  const size_t kept = std::min(order.size(), std::max<size_t>(options.max_lanes, 1));
  std::vector<int32_t> rank(timeline.lanes.size(), -1);
  for (size_t i = 0; i < kept; ++i) rank[order[i]] = static_cast<int32_t>(i);

  // Points of the kept lanes, grouped by lane in rank order (stable: time order kept).
  std::vector<std::vector<const storage::TimelinePoint*>> points(kept);
  int64_t truncated_total = 0;
  for (const storage::TimelinePoint& p : timeline.points) {
    if (rank[p.lane] < 0) {
      SaturatingAddTo(truncated_total, p.value);
    } else {
      points[rank[p.lane]].push_back(&p);
    }
  }

  // Stacks and frames the kept lanes use, each once.
  FrameLabelInterner interner;
  StackLabeler labeler(&interner, profile);
  JsonStringTable names, binaries;  // views into the interner's labels, which outlive them
  std::vector<int32_t> frame_of_label;  // label id -> index in "frames"
  std::string frames_json = "[";
  size_t frames = 0;
  std::vector<int32_t> stack_index(profile.stacks.size(), -1);
  std::string stacks_json = "[";
  size_t stacks = 0;
  std::vector<uint32_t> labels;
  auto use_stack = [&](uint32_t stack) {
    int32_t& index = stack_index[stack];
    if (index >= 0) return index;
    labeler.Label(profile.stacks[stack], &labels);
    if (stacks++) stacks_json.push_back(',');
    stacks_json.push_back('[');
    for (size_t i = labels.size(); i-- > 0;) {  // leaf first -> root first
      const uint32_t label = labels[i];
      if (label >= frame_of_label.size()) frame_of_label.resize(label + 1, -1);
      if (frame_of_label[label] < 0) {
        frame_of_label[label] = static_cast<int32_t>(frames);
        const FrameLabel& f = interner.label(label);
        frames_json.append(frames++ ? ",[" : "[");
        AppendJsonInt(names.Index(f.name), &frames_json);
        frames_json.push_back(',');
        AppendJsonInt(binaries.Index(f.binary), &frames_json);
        frames_json.push_back(',');
        AppendJsonInt(f.JsonKind(), &frames_json);
        frames_json.push_back(']');
      }
      AppendJsonInt(frame_of_label[label], &stacks_json);
      if (i) stacks_json.push_back(',');
    }
    stacks_json.push_back(']');
    index = static_cast<int32_t>(stacks - 1);
    return index;
  };

  std::string lanes_json = "[";
  for (size_t r = 0; r < kept; ++r) {
    const uint32_t lane = order[r];
    if (r) lanes_json.push_back(',');
    lanes_json.append("{\"labels\":{");
    bool first = true;
    for (const auto& [k, v] : timeline.lanes[lane]) {
      if (!first) lanes_json.push_back(',');
      first = false;
      AppendJsonString(k, &lanes_json);
      lanes_json.push_back(':');
      AppendJsonString(v, &lanes_json);
    }
    lanes_json.append("},\"total\":");
    AppendJsonInt(lane_total[lane], &lanes_json);
    lanes_json.append(",\"points\":[");
    for (size_t i = 0; i < points[r].size(); ++i) {
      const storage::TimelinePoint& p = *points[r][i];
      lanes_json.append(i ? ",[" : "[");
      AppendJsonInt(p.time_ns / 1'000'000, &lanes_json);
      lanes_json.push_back(',');
      AppendJsonInt(use_stack(p.stack), &lanes_json);
      lanes_json.push_back(',');
      AppendJsonInt(p.value, &lanes_json);
      lanes_json.push_back(']');
    }
    lanes_json.append("]}");
  }
  lanes_json.push_back(']');
  frames_json.push_back(']');
  stacks_json.push_back(']');

  std::string out = "{";
  AppendProfileTypeMembers(profile.type, &out);
  out.append(",\"from_ms\":");
  AppendJsonInt(options.from_ns / 1'000'000, &out);
  out.append(",\"to_ms\":");
  AppendJsonInt(options.to_ns / 1'000'000, &out);
  out.append(",\"total\":");
  AppendJsonInt(profile.total, &out);
  out.append(",\"names\":");
  names.AppendArray(&out);
  out.append(",\"binaries\":");
  binaries.AppendArray(&out);
  out.append(",\"frames\":");
  out.append(frames_json);
  out.append(",\"stacks\":");
  out.append(stacks_json);
  out.append(",\"lanes\":");
  out.append(lanes_json);
  out.append(",\"truncated_lanes\":");
  AppendJsonInt(static_cast<int64_t>(timeline.lanes.size() - kept), &out);
  out.append(",\"truncated_total\":");
  AppendJsonInt(truncated_total, &out);
  out.push_back('}');
  return out;
}

}  // namespace warpscope::query
