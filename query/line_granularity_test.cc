#include "query/line_granularity.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "query/flame_graph.h"

namespace warpscope::query {
namespace {

storage::ResolvedFrame Python(const std::string& name, int64_t line) {
  storage::ResolvedFrame f;
  f.kind = warpscope::v1::FRAME_KIND_PYTHON;
  f.function_name = name;
  f.file = "/srv/train.py";
  f.line = line;
  return f;
}

// Two lines of one Python function: one node at function granularity, two
// at line granularity, each with its own samples.
TEST(LineGranularityTest, OneNodePerFunctionAndLine) {
  storage::MergedProfile p;
  p.type = {"cpu", "samples", 1};
  p.frames = {Python("train_step", 42), Python("train_step", 57), Python("main", 3)};
  storage::ResolvedFrame native;
  native.function_name = "gemm";
  native.file = "/src/blas/blas.cc";
  native.line = 120;
  native.mapping_file = "/usr/lib/libblas.so";
  p.frames.push_back(native);
  storage::ResolvedFrame no_line;
  no_line.function_name = "memcpy";
  no_line.mapping_file = "/usr/lib/libc.so.6";
  p.frames.push_back(no_line);
  p.stacks = {{{0, 2}, 5}, {{1, 2}, 3}, {{4, 3, 0, 2}, 2}};
  p.total = 10;

  const nlohmann::json by_function = nlohmann::json::parse(RenderFlameGraphJson(p, {}));
  EXPECT_EQ(by_function["nodes"].size(), 5u);  // total, main, train_step, gemm, memcpy
  SplitFramesByLine(&p);
  const nlohmann::json j = nlohmann::json::parse(RenderFlameGraphJson(p, {}));
  std::map<std::string, int64_t> totals;
  for (const auto& n : j["nodes"]) totals[j["names"][n[1].get<int>()]] = n[5].get<int64_t>();
  EXPECT_EQ(totals["main:3"], 10);
  EXPECT_EQ(totals["train_step:42"], 7);
  EXPECT_EQ(totals["train_step:57"], 3);
  EXPECT_EQ(totals["gemm blas.cc:120"], 2);
  EXPECT_EQ(totals["memcpy"], 2) << "no line: the name stays";
  EXPECT_EQ(j["binaries"][1], "/srv/train.py");
}

}  // namespace
}  // namespace warpscope::query
