#include "query/grouped_profile.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <utility>

namespace warpscope::query {

namespace {

storage::ResolvedFrame GroupFrame(std::string name, uint64_t id) {
  storage::ResolvedFrame f;
  // Far above the stores' ids, which count up from 1.
  f.location_id = std::numeric_limits<uint64_t>::max() - id;
  f.kind = kGroupFrameKind;
  f.function_name = std::move(name);
  return f;
}

const std::string& ValueOf(const storage::Labels& labels, const std::string& name) {
  static const std::string kEmpty;
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return kEmpty;
}

}  // namespace

std::string GroupFrameName(const std::string& label, const std::string& value) { return label + "=" + value; }

storage::MergedProfile GroupedProfile(storage::StackTimeline timeline, const std::vector<std::string>& group_by,
                                      size_t max_groups) {
  storage::MergedProfile out;
  out.type = timeline.profile.type;
  out.total = timeline.profile.total;
  out.series = timeline.profile.series;
  out.frames = std::move(timeline.profile.frames);
  const uint32_t first_group_frame = static_cast<uint32_t>(out.frames.size());

  // Lane totals, largest first (ties by lane order, which is the store's).
  const size_t lanes = timeline.lanes.size();
  std::vector<int64_t> lane_total(lanes, 0);
  for (const storage::TimelinePoint& p : timeline.points) {
    if (p.lane < lanes) lane_total[p.lane] += p.value;
  }
  std::vector<uint32_t> order(lanes);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return lane_total[a] > lane_total[b]; });
  max_groups = std::max<size_t>(max_groups, 1);

  // Each lane's label frames, root side last (stacks are leaf first). Lanes
  // past max_groups share the one "other groups" frame.
  std::vector<std::vector<uint32_t>> lane_frames(lanes);
  std::unordered_map<std::string, uint32_t> frame_of_name;
  const auto intern = [&](std::string name) {
    const auto [it, inserted] = frame_of_name.try_emplace(name, static_cast<uint32_t>(out.frames.size()));
    if (inserted) out.frames.push_back(GroupFrame(std::move(name), out.frames.size() - first_group_frame));
    return it->second;
  };
  for (size_t rank = 0; rank < lanes; ++rank) {
    const uint32_t lane = order[rank];
    std::vector<uint32_t>& frames = lane_frames[lane];
    if (rank >= max_groups) {
      frames.push_back(intern(kOtherGroupsName));
      continue;
    }
    // Distinct names per level: "pid=7" under two comms is two frames of one
    // function, which the renderers merge per parent anyway.
    for (auto it = group_by.rbegin(); it != group_by.rend(); ++it) {
      frames.push_back(intern(GroupFrameName(*it, ValueOf(timeline.lanes[lane], *it))));
    }
  }

  // Sum each (group, stack) over time: a group is a lane, or, for every lane
  // past max_groups, the one "other groups" group (id `lanes`).
  std::vector<uint32_t> group_of_lane(lanes);
  for (size_t rank = 0; rank < lanes; ++rank) {
    group_of_lane[order[rank]] = rank < max_groups ? order[rank] : static_cast<uint32_t>(lanes);
  }
  const size_t stacks = timeline.profile.stacks.size();
  std::unordered_map<uint64_t, int64_t> sums;
  std::vector<uint64_t> keys;  // first-seen order: answers stay deterministic
  for (const storage::TimelinePoint& p : timeline.points) {
    if (p.lane >= lanes || p.stack >= stacks) continue;
    const uint64_t key = static_cast<uint64_t>(group_of_lane[p.lane]) * stacks + p.stack;
    auto [it, inserted] = sums.try_emplace(key, 0);
    if (inserted) keys.push_back(key);
    it->second += p.value;
  }
  // The label frames of a group: its lane's (any lane of "other groups").
  std::vector<uint32_t> lane_of_group(lanes + 1, 0);
  for (uint32_t lane = 0; lane < lanes; ++lane) lane_of_group[group_of_lane[lane]] = lane;

  out.stacks.reserve(keys.size());
  for (uint64_t key : keys) {
    const storage::StackValue& stack = timeline.profile.stacks[key % stacks];
    const std::vector<uint32_t>& labels = lane_frames[lane_of_group[key / stacks]];
    storage::StackValue grouped;
    grouped.frames.reserve(stack.frames.size() + labels.size());
    grouped.frames = stack.frames;
    grouped.frames.insert(grouped.frames.end(), labels.begin(), labels.end());
    grouped.value = sums.at(key);
    out.stacks.push_back(std::move(grouped));
  }
  return out;
}

}  // namespace warpscope::query
