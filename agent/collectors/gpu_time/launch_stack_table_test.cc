#include "agent/collectors/gpu_time/launch_stack_table.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

namespace warpscope::gpu {
namespace {

// Distinct stacks of this process's own code: `depth` return addresses
// inside this test binary, differing by `variant`.
ws_stack StackOf(uint32_t variant, uint32_t depth) {
  ws_stack s{};
  s.len = depth;
  const uint64_t base = reinterpret_cast<uint64_t>(&StackOf);
  for (uint32_t i = 0; i < depth; ++i) s.frames[i] = base + 16 + (i == 0 ? variant : i);
  return s;
}

// A symbolized stack holds its names: the table is bound by bytes as well as
// by count. Past the byte bound new stacks are refused (counted); stacks
// already in it are still found; expiry gives the bytes back.
TEST(LaunchStackTable, HoldsAtMostItsByteBudget) {
  Symbolizer symbolizer{ProcFs()};
  const uint32_t pid = static_cast<uint32_t>(getpid());
  symbolizer.OnProcessSeen(pid);
  constexpr size_t kBudget = 64 << 10;
  LaunchStackTable table(&symbolizer, nullptr, 100'000, kBudget);
  const uint64_t first = table.Intern(pid, StackOf(0, 20), 1);
  ASSERT_NE(first, 0u);
  const uint64_t one = table.stats().bytes;
  EXPECT_GT(one, 20 * sizeof(CapturedFrame));
  uint64_t refused = 0;
  for (uint32_t v = 1; v < 1000; ++v) refused += table.Intern(pid, StackOf(v, 20), 2) == 0;
  EXPECT_GT(refused, 0u);
  EXPECT_EQ(table.stats().full, refused);
  EXPECT_LE(table.stats().bytes, kBudget + one);  // the last one admitted may cross it
  EXPECT_NE(table.Find(first), nullptr);
  EXPECT_EQ(table.Intern(pid, StackOf(0, 20), 3), first) << "a stack already held is found, budget or not";
  table.Expire(103, 100);  // everything but `first` (used at 3) was last used before 3
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.stats().bytes, one);
}

}  // namespace
}  // namespace warpscope::gpu
