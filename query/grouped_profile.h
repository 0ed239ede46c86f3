// A profile split by series labels (the flame graph's `group_by`): every
// stack of a group gets one frame per group label under the root
// ("comm=python3", then "pid=4242"), so one node-wide graph shows each
// process or thread as its own subtree, as Parca's "group by" does.
//
// Label frames have kind kGroupFrameKind (frame_label.h). It reads a StackTimeline (the store's per-lane answer) and sums each lane's
// points over time: one scan of the store, one unit for every group.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "query/frame_label.h"
#include "storage/profile_store.h"

namespace warpscope::query {

// The name of the label frame (`comm=python3`); a group without the label
// reads `comm=` with nothing after it.
std::string GroupFrameName(const std::string& label, const std::string& value);

// The lanes past the `max_groups` largest share one group, whose single label
// frame is named this.
inline constexpr char kOtherGroupsName[] = "other groups";

// `timeline`'s lanes as groups under the root, labelled in `group_by` order
// (outermost first). The answer's total and per-stack sums are the timeline's.
storage::MergedProfile GroupedProfile(storage::StackTimeline timeline, const std::vector<std::string>& group_by,
                                      size_t max_groups);

}  // namespace warpscope::query
