#include "agent/unwind/unwind_map_sizing.h"

#include <gtest/gtest.h>

namespace warpscope {
namespace {

TEST(UnwindMapSizingTest, DefaultBudget) {
  UnwindMapSizes s = ComputeUnwindMapSizes();
  EXPECT_EQ(s.entries, 8u << 20);  // 64 MiB / 8 bytes
  EXPECT_EQ(s.pages, (8u << 20) / 64);
  EXPECT_EQ(s.exec_mappings, 65536u);
  EXPECT_EQ(s.processes, 16384u);
  EXPECT_GT(s.approx_kernel_bytes, 64ull << 20);
  EXPECT_LT(s.approx_kernel_bytes, 80ull << 20);
}

TEST(UnwindMapSizingTest, Clamped) {
  EXPECT_EQ(ComputeUnwindMapSizes(0).entries, 64u << 10);
  EXPECT_EQ(ComputeUnwindMapSizes(0).pages, 4096u);
  EXPECT_EQ(ComputeUnwindMapSizes(1ull << 40).entries, 128u << 20);
}

}  // namespace
}  // namespace warpscope
