#include "query/grouped_profile.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "query/flame_graph.h"
#include "query/profile_export.h"
#include "query/render_test_frames.h"

namespace warpscope::query {
namespace {

using nlohmann::json;
using testing::CpuProfile;
using testing::Native;
using testing::Stack;

// Lanes (comm, pid): two processes with one pid in two comms (a pid reused),
// and a third process; stacks "main;work" and "main;idle".
storage::StackTimeline Timeline() {
  storage::StackTimeline t;
  t.profile = CpuProfile({Stack({Native("main"), Native("work")}, 0), Stack({Native("main"), Native("idle")}, 0)});
  t.lanes = {{{"comm", "a"}, {"pid", "7"}}, {{"comm", "b"}, {"pid", "7"}}, {{"comm", "c"}}};
  t.points = {{0, 1, 0, 5}, {0, 2, 0, 4}, {0, 2, 1, 1}, {1, 1, 0, 3}, {2, 1, 1, 2}};
  for (const storage::TimelinePoint& p : t.points) {
    t.profile.stacks[p.stack].value += p.value;
    t.profile.total += p.value;
  }
  return t;
}

// "name kind total" per node in preorder, indented by depth.
std::vector<std::string> Outline(const json& a) {
  std::vector<std::string> lines;
  std::vector<int> depth;
  for (const json& n : a["nodes"]) {
    depth.push_back(n[0].get<int>() < 0 ? 0 : depth[n[0].get<int>()] + 1);
    lines.push_back(std::string(2 * depth.back(), ' ') + a["names"][n[1].get<int>()].get<std::string>() + " " +
                    std::to_string(n[3].get<int>()) + " " + std::to_string(n[5].get<int64_t>()));
  }
  return lines;
}

TEST(GroupedProfileTest, EachLaneIsASubtreeLabelledInGroupByOrder) {
  const storage::MergedProfile grouped = GroupedProfile(Timeline(), {"comm", "pid"}, 50);
  EXPECT_EQ(grouped.total, 15);
  const json a = json::parse(RenderFlameGraphJson(grouped, {.max_nodes = 1000}));
  EXPECT_EQ(Outline(a), (std::vector<std::string>{
                            "total 3 15",
                            "  comm=a 5 10",
                            "    pid=7 5 10",
                            "      main 0 10",
                            "        idle 0 1",
                            "        work 0 9",
                            "  comm=b 5 3",
                            "    pid=7 5 3",
                            "      main 0 3",
                            "        work 0 3",
                            "  comm=c 5 2",
                            "    pid= 5 2",
                            "      main 0 2",
                            "        idle 0 2",
                        }));
}

TEST(GroupedProfileTest, LanesPastMaxGroupsShareOneGroup) {
  const json a = json::parse(RenderFlameGraphJson(GroupedProfile(Timeline(), {"comm", "pid"}, 1), {.max_nodes = 1000}));
  EXPECT_EQ(Outline(a), (std::vector<std::string>{
                            "total 3 15",
                            "  comm=a 5 10",
                            "    pid=7 5 10",
                            "      main 0 10",
                            "        idle 0 1",
                            "        work 0 9",
                            "  other groups 5 5",
                            "    main 0 5",
                            "      idle 0 2",
                            "      work 0 3",
                        }));
}

TEST(GroupedProfileTest, CollapsedStacksStartWithTheLabels) {
  const std::string text = RenderCollapsed(GroupedProfile(Timeline(), {"comm"}, 50));
  EXPECT_NE(text.find("comm=a;main;work 9\n"), std::string::npos) << text;
  EXPECT_NE(text.find("comm=c;main;idle 2\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace warpscope::query
