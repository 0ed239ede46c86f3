#include "query/gpu_kernel_source.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace warpscope::query {
namespace {

using warpscope::v1::FrameKind;

storage::ResolvedFrame Frame(FrameKind kind, const std::string& name, const std::string& system,
                             uint64_t address = 0, const std::string& file = "", int64_t line = 0) {
  storage::ResolvedFrame f;
  f.location_id = address * 16 + static_cast<uint64_t>(kind) + std::hash<std::string>{}(name);
  f.kind = kind;
  f.function_name = name;
  f.system_name = system;
  f.address = address;
  f.file = file;
  f.line = line;
  return f;
}

// Instructions name their cubin as their mapping's build id: the view lists
// each cubin once, with what the caller learnt from the store.
TEST(KernelSourceTest, ListsTheCubinsOfTheKernelsInstructions) {
  const std::string held(32, 'a'), missing(32, 'b');
  storage::MergedProfile p;
  p.frames = {
      Frame(FrameKind::FRAME_KIND_GPU_STALL, "waiting for memory", "smsp__pcsamp_warps_issue_stalled_long_scoreboard"),
      Frame(FrameKind::FRAME_KIND_GPU_INSTRUCTION, "0x0040", "_Z1kv+0x0040", 0x40),
      Frame(FrameKind::FRAME_KIND_GPU_INSTRUCTION, "0x0080", "_Z1kv+0x0080", 0x80),
      Frame(FrameKind::FRAME_KIND_GPU_INSTRUCTION, "0x0040", "_Z1jv+0x0040", 0x40),
      Frame(FrameKind::FRAME_KIND_CUDA_KERNEL, "k()", "_Z1kv"),
      Frame(FrameKind::FRAME_KIND_CUDA_KERNEL, "j()", "_Z1jv"),
  };
  for (int i : {1, 2}) p.frames[i].build_id = held;
  p.frames[3].build_id = missing;
  p.stacks = {{{0, 1, 4}, 3}, {{0, 2, 4}, 1}, {{0, 3, 5}, 2}};
  EXPECT_EQ(KernelCubinHashes(p, "k()"), std::vector<std::string>{held});
  EXPECT_EQ(KernelCubinHashes(p, "_Z1jv"), std::vector<std::string>{missing});
  auto text = RenderKernelSourceJson(p, "k()", {{held, true, 5000}});
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const nlohmann::json j = nlohmann::json::parse(*text);
  ASSERT_EQ(j["cubins"].size(), 1u);
  EXPECT_EQ(j["cubins"][0]["hash"], held);
  EXPECT_TRUE(j["cubins"][0]["stored"].get<bool>());
  EXPECT_EQ(j["cubins"][0]["bytes"], 5000);
}

TEST(StallClassTest, CuptiNamesWithAndWithoutPrefixAndSuffix) {
  EXPECT_EQ(ClassifyStall("smsp__pcsamp_warps_issue_stalled_long_scoreboard"), StallClass::kMemory);
  EXPECT_EQ(ClassifyStall("smsp__pcsamp_warps_issue_stalled_math_pipe_throttle_not_issued"), StallClass::kCompute);
  EXPECT_EQ(ClassifyStall("barrier"), StallClass::kSync);
  EXPECT_EQ(ClassifyStall("smsp__pcsamp_warps_issue_stalled_selected"), StallClass::kIssuing);
  EXPECT_EQ(ClassifyStall("smsp__pcsamp_warps_issue_stalled_branch_resolving"), StallClass::kOther);
  EXPECT_STREQ(StallClassName(StallClass::kMemory), "memory");
}

// Two instructions on two lines of one kernel, launched from two stacks:
// the view merges the stacks, orders by offset, and shares add up.
TEST(KernelSourceTest, InstructionsUnderLinesWithStallsAndShares) {
  storage::MergedProfile p;
  p.frames = {
      Frame(FrameKind::FRAME_KIND_GPU_STALL, "waiting for memory", "smsp__pcsamp_warps_issue_stalled_long_scoreboard"),
      Frame(FrameKind::FRAME_KIND_GPU_STALL, "math pipe busy", "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle"),
      Frame(FrameKind::FRAME_KIND_GPU_INSTRUCTION, "0x0080 FFMA R1, R2, R3, R4", "_Z1kv+0x0080", 0x80),
      Frame(FrameKind::FRAME_KIND_GPU_INSTRUCTION, "0x0040 LDG.E R2, desc[UR4][R2.64]", "_Z1kv+0x0040", 0x40),
      Frame(FrameKind::FRAME_KIND_GPU_LINE, "k.cu:9", "", 0, "/src/k.cu", 9),
      Frame(FrameKind::FRAME_KIND_GPU_LINE, "k.cu:7 in load", "load", 0, "/src/k.cu", 7),
      Frame(FrameKind::FRAME_KIND_CUDA_KERNEL, "k()", "_Z1kv"),
      Frame(FrameKind::FRAME_KIND_NATIVE, "site_a", "site_a", 0x10),
      Frame(FrameKind::FRAME_KIND_NATIVE, "site_b", "site_b", 0x20),
  };
  p.stacks = {{{1, 2, 4, 6, 7}, 30}, {{0, 3, 5, 6, 7}, 60}, {{0, 3, 5, 6, 8}, 10}};
  auto text = RenderKernelSourceJson(p, "k()");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const nlohmann::json j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["system_name"], "_Z1kv");
  EXPECT_EQ(j["total"], 100);
  EXPECT_TRUE(j["sass"].get<bool>());
  ASSERT_EQ(j["stalls"].size(), 2u);
  EXPECT_EQ(j["stalls"][0]["class"], "memory");
  EXPECT_EQ(j["stalls"][0]["value"], 70);
  ASSERT_EQ(j["lines"].size(), 2u);
  EXPECT_EQ(j["lines"][0]["line"], 7) << "the line of the first instruction first";
  EXPECT_EQ(j["lines"][0]["function"], "load");
  EXPECT_EQ(j["lines"][0]["instructions"][0]["offset"], 0x40);
  EXPECT_EQ(j["lines"][0]["instructions"][0]["text"], "LDG.E R2, desc[UR4][R2.64]");
  EXPECT_EQ(j["lines"][0]["instructions"][0]["value"], 70);
  EXPECT_EQ(j["lines"][1]["instructions"][0]["stalls"][0][0], 1) << "math pipe: the second reason";
  EXPECT_DOUBLE_EQ(j["shares"]["memory"].get<double>(), 0.7);
  EXPECT_DOUBLE_EQ(j["shares"]["compute"].get<double>(), 0.3);
  EXPECT_EQ(RenderKernelSourceJson(p, "other()").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(j["cubins"], nlohmann::json::array()) << "instructions without a cubin mapping";
  const std::vector<KernelStalls> shares = KernelStallShares(p);
  ASSERT_EQ(shares.size(), 1u);
  EXPECT_EQ(shares[0].value, 100);

  // 70 % of its cycles on memory: memory bound at the default 60 %, not at 80 %.
  InsightInputs in;
  in.from_ns = 1;
  in.to_ns = 2;
  const std::vector<Insight> found = FindMemoryBoundKernels(p, in, InsightOptions{}, "{pid=\"7\"}");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, "memory_bound");
  EXPECT_EQ(found[0].target, (storage::Labels{{"kernel", "k()"}}));
  EXPECT_EQ(found[0].evidence_type, "gpu_pc");
  EXPECT_EQ(found[0].evidence_selector, "{pid=\"7\"}");
  EXPECT_EQ(found[0].saving_gpu_seconds, 0);
  EXPECT_EQ(found[0].severity, "low") << "no saving estimated: low, however large its share of the cycles";
  InsightOptions strict;
  strict.memory_bound_stall_share = 0.8;
  EXPECT_TRUE(FindMemoryBoundKernels(p, in, strict, "").empty());
}

}  // namespace
}  // namespace warpscope::query
