#include "query/grouped_profile.h"

#include "base/saturating.h"
#include "query/flame_chart.h"

#include <algorithm>
#include <cstdint>
#include <limits>
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

  // Groups: the max_groups largest lanes, each its own, and one group of
  // every lane after them ("other groups"). A group is named by its first
  // lane, whose label frames it takes.
  const size_t lanes = timeline.lanes.size();
  const std::vector<uint32_t> order = LanesByTotal(timeline).order;
  max_groups = std::max<size_t>(max_groups, 1);
  std::vector<uint32_t> group_of_lane(lanes);
  for (size_t rank = 0; rank < lanes; ++rank) group_of_lane[order[rank]] = order[std::min(rank, max_groups)];

  // Each group's label frames, root side last (stacks are leaf first).
  std::vector<std::vector<uint32_t>> group_frames(lanes);
  std::unordered_map<std::string, uint32_t> frame_of_name;
  const auto intern = [&](std::string name) {
    const auto [it, inserted] = frame_of_name.try_emplace(name, static_cast<uint32_t>(out.frames.size()));
    if (inserted) out.frames.push_back(GroupFrame(std::move(name), out.frames.size() - first_group_frame));
    return it->second;
  };
  // The first lanes up to and including the first of "other groups" name one each.
  for (size_t rank = 0; rank < std::min(max_groups + 1, lanes); ++rank) {
    const uint32_t lane = order[rank];
    std::vector<uint32_t>& frames = group_frames[lane];
    if (rank == max_groups) {
      frames.push_back(intern(kOtherGroupsName));
      continue;
    }
    // Distinct names per level: "pid=7" under two comms is two frames of one
    // function, which the renderers merge per parent anyway.
    for (auto it = group_by.rbegin(); it != group_by.rend(); ++it) {
      frames.push_back(intern(GroupFrameName(*it, ValueOf(timeline.lanes[lane], *it))));
    }
  }

  // Sum each (group, stack) over time.
  const size_t stacks = timeline.profile.stacks.size();
  std::unordered_map<uint64_t, int64_t> sums;
  std::vector<uint64_t> keys;  // first-seen order: answers stay deterministic
  for (const storage::TimelinePoint& p : timeline.points) {
    if (p.lane >= lanes || p.stack >= stacks) continue;
    const uint64_t key = static_cast<uint64_t>(group_of_lane[p.lane]) * stacks + p.stack;
    auto [it, inserted] = sums.try_emplace(key, 0);
    if (inserted) keys.push_back(key);
    SaturatingAddTo(it->second, p.value);
  }

  out.stacks.reserve(keys.size());
  for (uint64_t key : keys) {
    const std::vector<uint32_t>& stack = timeline.profile.stacks[key % stacks].frames;
    const std::vector<uint32_t>& labels = group_frames[key / stacks];
    storage::StackValue grouped;
    grouped.frames.reserve(stack.size() + labels.size());
    grouped.frames.insert(grouped.frames.end(), stack.begin(), stack.end());
    grouped.frames.insert(grouped.frames.end(), labels.begin(), labels.end());
    grouped.value = sums.at(key);
    out.stacks.push_back(std::move(grouped));
  }
  return out;
}

}  // namespace warpscope::query
