#include "query/profile_diff.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "query/render_test_frames.h"

namespace warpscope::query {
namespace {

using nlohmann::json;
using testing::CpuProfile;
using testing::Native;
using testing::Stack;
using testing::TestStack;

json Parse(const std::string& text) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(parsed.is_discarded()) << text;
  return parsed;
}

TEST(ProfileDiffTest, ExactAnswerWithNodesOnOneSideOnly) {
  const storage::MergedProfile base = CpuProfile({
      Stack({Native("main"), Native("old_path")}, 6),
      Stack({Native("main"), Native("shared")}, 4),
  });
  const storage::MergedProfile target = CpuProfile({
      Stack({Native("main"), Native("shared")}, 10),
      Stack({Native("main"), Native("new_path")}, 5),
      Stack({Native("main")}, 1),
  });
  EXPECT_EQ(RenderDiffJson(base, target, {}),
            R"({"version":1,"type":"cpu","unit":"samples","period_nanos":10000000,)"
            R"("base_total":10,"target_total":16,"truncated":0,)"
            R"("names":["total","main","new_path","old_path","shared"],"binaries":["","app"],)"
            R"("nodes":[[-1,0,0,3,0,10,0,16],[0,1,1,0,0,10,1,16],[1,2,1,0,0,0,5,5],)"
            R"([1,3,1,0,6,6,0,0],[1,4,1,0,4,4,10,10]]})");
}

TEST(ProfileDiffTest, EmptySidesAndTypeFromEitherSide) {
  const storage::MergedProfile target = CpuProfile({Stack({Native("main")}, 2)});
  const json a = Parse(RenderDiffJson(storage::MergedProfile{}, target, {}));
  EXPECT_EQ(a["type"], "cpu");
  EXPECT_EQ(a["base_total"], 0);
  EXPECT_EQ(a["nodes"], json::parse(R"([[-1,0,0,3,0,0,0,2],[0,1,1,0,0,0,2,2]])"));
  const json b = Parse(RenderDiffJson(target, storage::MergedProfile{}, {}));
  EXPECT_EQ(b["type"], "cpu");
  EXPECT_EQ(b["target_total"], 0);
}

TEST(ProfileDiffTest, FoldingRanksByShareOfEitherSide) {
  // Base total 1000, target total 10: "t_only" is 100% of the target but
  // tiny in absolute terms; it must survive folding, "b_small" and "b_smaller" must not.
  std::vector<TestStack> base_stacks = {Stack({Native("main"), Native("b_big")}, 990),
                                                  Stack({Native("main"), Native("b_small")}, 10),
                                                  Stack({Native("main"), Native("b_smaller")}, 5)};
  const storage::MergedProfile base = CpuProfile(base_stacks);
  const storage::MergedProfile target = CpuProfile({Stack({Native("main"), Native("t_only")}, 10)});
  const json answer = Parse(RenderDiffJson(base, target, {.max_nodes = 5}));
  std::vector<std::string> names;
  for (const json& node : answer["nodes"]) names.push_back(answer["names"][node[1].get<int>()]);
  EXPECT_EQ(names, (std::vector<std::string>{"total", "main", "b_big", "t_only", "other"}));
  EXPECT_EQ(answer["truncated"], 2);
  EXPECT_EQ(answer["nodes"][1], json::parse("[0,1,1,0,0,1005,0,10]"));
  EXPECT_EQ(answer["nodes"][4], json::parse("[1,4,0,3,15,15,0,0]"));
}

TEST(ProfileDiffTest, FoldingKeepsBothSidesConsistentOnRandomTrees) {
  std::mt19937 rng(11);
  const auto random_profile = [&rng](int stacks) {
    std::vector<TestStack> out;
    for (int i = 0; i < stacks; ++i) {
      std::vector<storage::ResolvedFrame> frames;
      const int depth = 1 + static_cast<int>(rng() % 6);
      for (int d = 0; d < depth; ++d) frames.push_back(Native("f" + std::to_string(rng() % 5)));
      out.push_back(Stack(frames, 1 + static_cast<int64_t>(rng() % 50)));
    }
    return CpuProfile(out);
  };
  const storage::MergedProfile base = random_profile(300);
  const storage::MergedProfile target = random_profile(200);
  for (size_t max_nodes : {2, 9, 100, 100000}) {
    SCOPED_TRACE(max_nodes);
    const json answer = Parse(RenderDiffJson(base, target, {.max_nodes = max_nodes}));
    const json& nodes = answer["nodes"];
    EXPECT_LE(nodes.size(), max_nodes);
    EXPECT_EQ(answer["base_total"], base.total);
    EXPECT_EQ(answer["target_total"], target.total);
    EXPECT_EQ(nodes[0][5], base.total);
    EXPECT_EQ(nodes[0][7], target.total);
    std::vector<int64_t> base_children(nodes.size(), 0), target_children(nodes.size(), 0);
    for (size_t i = 1; i < nodes.size(); ++i) {
      const int64_t parent = nodes[i][0].get<int64_t>();
      ASSERT_LT(parent, static_cast<int64_t>(i));
      base_children[parent] += nodes[i][5].get<int64_t>();
      target_children[parent] += nodes[i][7].get<int64_t>();
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      EXPECT_EQ(nodes[i][5].get<int64_t>(), nodes[i][4].get<int64_t>() + base_children[i]) << i;
      EXPECT_EQ(nodes[i][7].get<int64_t>(), nodes[i][6].get<int64_t>() + target_children[i]) << i;
    }
  }
}

}  // namespace
}  // namespace warpscope::query
