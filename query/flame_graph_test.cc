#include "query/flame_graph.h"

#include <gtest/gtest.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "query/render_test_frames.h"

namespace warpscope::query {
namespace {

using nlohmann::json;
using testing::CpuProfile;
using testing::Inlined;
using testing::Kernel;
using testing::Native;
using testing::Python;
using testing::Stack;
using testing::TestStack;

json Parse(const std::string& text) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(parsed.is_discarded()) << text.substr(0, 2000);
  return parsed;
}

// "name [binary] kind self total" per node, indented by depth: readable expectations.
std::vector<std::string> Outline(const json& answer) {
  std::vector<std::string> lines;
  std::vector<int> depth;
  for (const json& node : answer["nodes"]) {
    const int parent = node[0].get<int>();
    depth.push_back(parent < 0 ? 0 : depth[parent] + 1);
    std::string line(2 * depth.back(), ' ');
    line += answer["names"][node[1].get<int>()].get<std::string>();
    const std::string binary = answer["binaries"][node[2].get<int>()].get<std::string>();
    if (!binary.empty()) line += " [" + binary + "]";
    for (size_t i = 3; i < node.size(); ++i) line += " " + std::to_string(node[i].get<int64_t>());
    lines.push_back(line);
  }
  return lines;
}

// Structure every answer must have, whatever was folded: preorder parents,
// total = self + children's totals per side, valid string indices.
void ExpectConsistentTree(const json& answer, int sides) {
  const json& nodes = answer["nodes"];
  ASSERT_GE(nodes.size(), 1u);
  std::vector<std::vector<int64_t>> child_sum(nodes.size(), std::vector<int64_t>(sides, 0));
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json& node = nodes[i];
    ASSERT_EQ(node.size(), 4u + 2 * sides);
    const int64_t parent = node[0].get<int64_t>();
    if (i == 0) {
      EXPECT_EQ(parent, -1);
    } else {
      ASSERT_GE(parent, 0);
      ASSERT_LT(parent, static_cast<int64_t>(i));
      for (int s = 0; s < sides; ++s) child_sum[parent][s] += node[5 + 2 * s].get<int64_t>();
    }
    ASSERT_LT(node[1].get<size_t>(), answer["names"].size());
    ASSERT_LT(node[2].get<size_t>(), answer["binaries"].size());
    ASSERT_LE(node[3].get<int>(), 3);
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int s = 0; s < sides; ++s) {
      EXPECT_EQ(nodes[i][5 + 2 * s].get<int64_t>(), nodes[i][4 + 2 * s].get<int64_t>() + child_sum[i][s])
          << "node " << i << " side " << s;
    }
  }
}

TEST(FlameGraphTest, ExactAnswerForSmallProfile) {
  const storage::MergedProfile profile = CpuProfile({
      Stack({Native("main"), Native("compute"), Native("memcpy", "/lib/libc.so.6")}, 3),
      Stack({Native("main"), Native("compute")}, 2),
      Stack({Native("main"), Native("alpha")}, 1),
  });
  EXPECT_EQ(RenderFlameGraphJson(profile, {}),
            R"({"version":1,"type":"cpu","unit":"samples","period_nanos":10000000,"total":6,"truncated":0,)"
            R"("names":["total","main","alpha","compute","memcpy"],"binaries":["","app","libc.so.6"],)"
            R"("nodes":[[-1,0,0,3,0,6],[0,1,1,0,0,6],[1,2,1,0,1,1],[1,3,1,0,2,5],[3,4,2,0,3,3]]})");
}

TEST(FlameGraphTest, EmptyProfile) {
  storage::MergedProfile empty;
  EXPECT_EQ(RenderFlameGraphJson(empty, {}),
            R"({"version":1,"type":"","unit":"","period_nanos":0,"total":0,"truncated":0,)"
            R"("names":["total"],"binaries":[""],"nodes":[[-1,0,0,3,0,0]]})");
}

TEST(FlameGraphTest, StackWithoutFramesIsRootSelfTime) {
  storage::MergedProfile profile = CpuProfile({Stack({}, 4), Stack({Native("main")}, 1)});
  const json answer = Parse(RenderFlameGraphJson(profile, {}));
  EXPECT_EQ(Outline(answer), (std::vector<std::string>{"total 3 4 5", "  main [app] 0 1 1"}));
}

TEST(FlameGraphTest, RecursionNestsAndMergesByFunctionNotLine) {
  const storage::MergedProfile profile = CpuProfile({
      Stack({Native("main", "/usr/bin/app", 0x10, 1), Native("fib", "/usr/bin/app", 0x20, 5),
             Native("fib", "/usr/bin/app", 0x24, 7), Native("fib", "/usr/bin/app", 0x24, 7)},
            2),
      Stack({Native("main", "/usr/bin/app", 0x11, 2), Native("fib", "/usr/bin/app", 0x28, 9)}, 1),
  });
  const json answer = Parse(RenderFlameGraphJson(profile, {}));
  EXPECT_EQ(Outline(answer), (std::vector<std::string>{
                                 "total 3 0 3",
                                 "  main [app] 0 0 3",
                                 "    fib [app] 0 1 3",
                                 "      fib [app] 0 0 2",
                                 "        fib [app] 0 2 2",
                             }));
  ExpectConsistentTree(answer, 1);
}

TEST(FlameGraphTest, InlinedPythonAndKernelFramesAreNodesOfTheirOwn) {
  const storage::MergedProfile profile = CpuProfile({
      Stack({Native("main"), Native("compute", "/usr/bin/app", 0x40), Inlined(Native("helper", "/usr/bin/app", 0x40)),
             Kernel("entry_SYSCALL_64"), Kernel("do_syscall_64")},
            2),
      Stack({Python("<module>", "/srv/run.py", 1), Python("Model.forward", "/srv/model.py", 42)}, 5),
  });
  const json answer = Parse(RenderFlameGraphJson(profile, {}));
  // Sorted by name: "<module>" < "main" (bytewise).
  EXPECT_EQ(Outline(answer), (std::vector<std::string>{
                                 "total 3 0 7",
                                 "  <module> [/srv/run.py] 2 0 5",
                                 "    Model.forward [/srv/model.py] 2 5 5",
                                 "  main [app] 0 0 2",
                                 "    compute [app] 0 0 2",
                                 "      helper [app] 0 0 2",
                                 "        entry_SYSCALL_64 [[kernel.kallsyms]] 1 0 2",
                                 "          do_syscall_64 [[kernel.kallsyms]] 1 2 2",
                             }));
}

TEST(FlameGraphTest, SameNameInOtherBinaryOrKindIsAnotherNode) {
  const storage::MergedProfile profile = CpuProfile({
      Stack({Native("main"), Native("init", "/usr/bin/app")}, 1),
      Stack({Native("main"), Native("init", "/lib/libx.so")}, 1),
      Stack({Native("main"), Kernel("init")}, 1),
  });
  const json answer = Parse(RenderFlameGraphJson(profile, {}));
  EXPECT_EQ(Outline(answer), (std::vector<std::string>{
                                 "total 3 0 3",
                                 "  main [app] 0 0 3",
                                 "    init [[kernel.kallsyms]] 1 1 1",
                                 "    init [app] 0 1 1",
                                 "    init [libx.so] 0 1 1",
                             }));
  // One string per distinct name.
  EXPECT_EQ(answer["names"], json::parse(R"(["total","main","init"])"));
}

TEST(FlameGraphTest, FoldsSmallChildrenIntoOther) {
  // main has children a (50), b (30), c (2), d (1): with 5 rows, a and b stay.
  const storage::MergedProfile profile = CpuProfile({
      Stack({Native("main"), Native("a")}, 50),
      Stack({Native("main"), Native("b")}, 30),
      Stack({Native("main"), Native("c")}, 2),
      Stack({Native("main"), Native("d")}, 1),
  });
  const json answer = Parse(RenderFlameGraphJson(profile, {.max_nodes = 5}));
  EXPECT_EQ(Outline(answer), (std::vector<std::string>{
                                 "total 3 0 83",
                                 "  main [app] 0 0 83",
                                 "    a [app] 0 50 50",
                                 "    b [app] 0 30 30",
                                 "    other 3 3 3",
                             }));
  EXPECT_EQ(answer["truncated"], 2);
  ExpectConsistentTree(answer, 1);

  // The smallest budget: the root and one "other".
  const json tiny = Parse(RenderFlameGraphJson(profile, {.max_nodes = 0}));
  EXPECT_EQ(Outline(tiny), (std::vector<std::string>{"total 3 0 83", "  other 3 83 83"}));
  EXPECT_EQ(tiny["truncated"], 5);
}

TEST(FlameGraphTest, FoldingKeepsTotalsConsistentOnRandomTrees) {
  std::mt19937 rng(7);
  std::vector<TestStack> stacks;
  for (int i = 0; i < 400; ++i) {
    std::vector<storage::ResolvedFrame> frames;
    const int depth = 1 + static_cast<int>(rng() % 8);
    for (int d = 0; d < depth; ++d) frames.push_back(Native("f" + std::to_string(rng() % 4)));
    stacks.push_back(Stack(frames, 1 + static_cast<int64_t>(rng() % 100)));
  }
  const storage::MergedProfile profile = CpuProfile(stacks);
  const json full = Parse(RenderFlameGraphJson(profile, {.max_nodes = 1'000'000}));
  ASSERT_EQ(full["truncated"], 0);
  const size_t all = full["nodes"].size();
  for (size_t max_nodes : {2, 3, 7, 50, 333, 1000}) {
    SCOPED_TRACE(max_nodes);
    const json answer = Parse(RenderFlameGraphJson(profile, {.max_nodes = max_nodes}));
    EXPECT_LE(answer["nodes"].size(), max_nodes);
    EXPECT_EQ(answer["total"], profile.total);
    EXPECT_EQ(answer["nodes"][0][5], profile.total);
    ExpectConsistentTree(answer, 1);
    // Every kept node is a node of the full tree; the rest are "other" rows.
    size_t others = 0;
    for (const json& node : answer["nodes"]) others += node[3] == 3 ? 1 : 0;
    EXPECT_EQ(answer["nodes"].size() - others + 1 + answer["truncated"].get<size_t>(), all);
    // A budget close to the tree's size is used well, not wasted.
    if (max_nodes >= 50 && max_nodes < all) {
      EXPECT_GE(answer["nodes"].size() + 2, max_nodes);
    }
  }
}

TEST(FlameGraphTest, WeirdBytesInNamesStayValidJson) {
  const storage::MergedProfile profile = CpuProfile({
      Stack({Native("quote\" back\\slash\nnewline\x01", "/bin/we\"ird"), Native("bad\xFF\xC0utf8"),
             Native(std::string("nul\0byte", 8))},
            1),
  });
  const json answer = Parse(RenderFlameGraphJson(profile, {}));
  EXPECT_EQ(answer["names"][1], "quote\" back\\slash\nnewline\x01");
  EXPECT_EQ(answer["names"][2], "bad\xEF\xBF\xBD\xEF\xBF\xBDutf8");
  EXPECT_EQ(answer["names"][3], std::string("nul\0byte", 8));
  EXPECT_EQ(answer["binaries"][1], "we\"ird");
}

// 50k distinct stacks of depth 30, the size the UI must stay fast for.
// Prints the time; no timed assertion (the machine is shared).
TEST(FlameGraphTest, BenchmarkFiftyThousandStacksOfDepthThirty) {
  std::mt19937 rng(1);
  storage::MergedProfile profile;
  profile.type = {"cpu", "samples", 10'000'000};
  const std::vector<std::string> binaries = {"/usr/bin/app", "/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/libtorch.so"};
  // The frame table: frame d * 64 + f is function f of depth d.
  for (int d = 0; d < 30; ++d) {
    for (int f = 0; f < 64; ++f) {
      profile.frames.push_back(Native("ns::Class" + std::to_string(d) + "::method_" + std::to_string(f) +
                                          "(std::vector<int> const&)",
                                      binaries[f % binaries.size()], 0x1000 + d * 64 + f, d));
      profile.frames.back().location_id = 1 + d * 64 + f;  // as storage numbers distinct frames
    }
  }
  for (int i = 0; i < 50'000; ++i) {
    storage::StackValue stack;
    // Shared prefixes as real profiles have: each level picks among few functions near
    // the root and many near the leaves.
    for (int d = 0; d < 30; ++d) {
      const uint32_t fanout = d < 5 ? 3 : 40;
      const uint32_t f = rng() % fanout;
      stack.frames.push_back(static_cast<uint32_t>(d * 64 + f));
    }
    std::reverse(stack.frames.begin(), stack.frames.end());
    stack.value = 1 + rng() % 20;
    profile.total += stack.value;
    profile.stacks.push_back(std::move(stack));
  }
  for (size_t max_nodes : {size_t{8192}, size_t{2'000'000}}) {
    // CPU time as well as wall time: the machine is shared.
    const auto cpu_ms = [] {
      timespec ts{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
    };
    const double cpu_start = cpu_ms();
    const auto start = std::chrono::steady_clock::now();
    const std::string text = RenderFlameGraphJson(profile, {.max_nodes = max_nodes});
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const double cpu = cpu_ms() - cpu_start;
    std::printf("[ benchmark ] 50k stacks x depth 30, max_nodes %zu: %.2f MB, %.1f ms wall, %.1f ms CPU\n",
                max_nodes, static_cast<double>(text.size()) / 1e6, ms, cpu);
    if (max_nodes > 10'000) continue;  // parsing 26 MB with nlohmann takes seconds and proves nothing new
    const json answer = Parse(text);
    EXPECT_LE(answer["nodes"].size(), max_nodes);
    EXPECT_EQ(answer["total"], profile.total);
  }
}

}  // namespace
}  // namespace warpscope::query
