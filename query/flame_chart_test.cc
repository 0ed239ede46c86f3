#include "query/flame_chart.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "query/render_test_frames.h"

namespace warpscope::query {
namespace {

using nlohmann::json;
using testing::CpuProfile;
using testing::Kernel;
using testing::Native;
using testing::Python;
using testing::Stack;

constexpr int64_t kMs = 1'000'000;

// Three stacks; lanes: main (small), worker (large), idle (smallest).
storage::StackTimeline Timeline() {
  storage::StackTimeline t;
  t.profile = CpuProfile({Stack({Native("main"), Native("load")}, 0),
                          Stack({Python("train", "t.py", 3), Native("step"), Kernel("do_syscall")}, 0),
                          Stack({Native("main"), Native("idle")}, 0)});
  t.lanes = {{{"thread", "main"}}, {{"thread", "worker"}}, {{"thread", "zz"}}};
  t.points = {{0, 1000 * kMs, 0, 2}, {0, 2000 * kMs, 1, 1}, {1, 1000 * kMs, 1, 5},
              {1, 2000 * kMs, 0, 3}, {1, 2000 * kMs, 1, 4}, {2, 3000 * kMs, 2, 1}};
  for (const storage::TimelinePoint& p : t.points) {
    t.profile.stacks[p.stack].value += p.value;
    t.profile.total += p.value;
  }
  return t;
}

// A stack of the answer as its frames' names, root first.
std::vector<std::string> Names(const json& a, int stack) {
  std::vector<std::string> out;
  for (const json& f : a["stacks"][stack]) out.push_back(a["names"][a["frames"][f.get<int>()][0].get<int>()]);
  return out;
}

TEST(FlameChartTest, LanesByTotalStacksRootFirstPointsInTimeOrder) {
  const json a = json::parse(RenderFlameChartJson(Timeline(), {.max_lanes = 32, .from_ns = 500 * kMs, .to_ns = 4000 * kMs}));
  EXPECT_EQ(a["version"], 1);
  EXPECT_EQ(a["type"], "cpu");
  EXPECT_EQ(a["unit"], "samples");
  EXPECT_EQ(a["period_nanos"], 10'000'000);
  EXPECT_EQ(a["from_ms"], 500);
  EXPECT_EQ(a["to_ms"], 4000);
  EXPECT_EQ(a["total"], 16);
  EXPECT_EQ(a["truncated_lanes"], 0);
  ASSERT_EQ(a["lanes"].size(), 3u);
  EXPECT_EQ(a["lanes"][0]["labels"], json({{"thread", "worker"}}));
  EXPECT_EQ(a["lanes"][0]["total"], 12);
  EXPECT_EQ(a["lanes"][1]["labels"], json({{"thread", "main"}}));
  EXPECT_EQ(a["lanes"][2]["labels"], json({{"thread", "zz"}}));
  const json& worker = a["lanes"][0]["points"];
  ASSERT_EQ(worker.size(), 3u);
  EXPECT_EQ(worker[0][0], 1000);
  EXPECT_EQ(Names(a, worker[0][1]), (std::vector<std::string>{"train", "step", "do_syscall"}));
  EXPECT_EQ(worker[0][2], 5);
  EXPECT_EQ(worker[1][0], 2000);
  EXPECT_EQ(Names(a, worker[1][1]), (std::vector<std::string>{"main", "load"}));
  EXPECT_EQ(worker[2][0], 2000);
  EXPECT_EQ(worker[2][2], 4);
  // Frames carry binary and kind; each frame and stack is listed once.
  EXPECT_EQ(a["stacks"].size(), 3u);
  EXPECT_EQ(a["frames"].size(), 6u);
  for (const json& f : a["frames"]) {
    const std::string name = a["names"][f[0].get<int>()];
    if (name == "do_syscall") {
      EXPECT_EQ(f[2], 1);
      EXPECT_EQ(a["binaries"][f[1].get<int>()], "[kernel.kallsyms]");
    }
    if (name == "train") {
      EXPECT_EQ(f[2], 2);
    }
    if (name == "load") {
      EXPECT_EQ(a["binaries"][f[1].get<int>()], "app");
    }
  }
}

TEST(FlameChartTest, LanesPastTheLimitAreCountedNotSent) {
  const json a = json::parse(RenderFlameChartJson(Timeline(), {.max_lanes = 1}));
  ASSERT_EQ(a["lanes"].size(), 1u);
  EXPECT_EQ(a["lanes"][0]["labels"]["thread"], "worker");
  EXPECT_EQ(a["truncated_lanes"], 2);
  EXPECT_EQ(a["truncated_total"], 4);
  EXPECT_EQ(a["total"], 16);
  // Only the stacks the kept lane uses: not "idle".
  EXPECT_EQ(a["stacks"].size(), 2u);
  for (const json& name : a["names"]) EXPECT_NE(name, "idle");
}

TEST(FlameChartTest, EmptyTimelineIsAValidAnswer) {
  storage::StackTimeline t;
  t.profile.type = {"cpu", "samples", 10'000'000};
  const json a = json::parse(RenderFlameChartJson(t, {}));
  EXPECT_EQ(a["total"], 0);
  EXPECT_TRUE(a["lanes"].empty());
  EXPECT_TRUE(a["stacks"].empty());
  EXPECT_TRUE(a["frames"].empty());
}

}  // namespace
}  // namespace warpscope::query
