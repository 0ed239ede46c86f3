#include "base/cpu_list.h"

#include <gtest/gtest.h>

namespace warpscope {
namespace {

TEST(CpuListTest, ParsesKernelFormat) {
  EXPECT_EQ(ParseCpuList("0-3,5,7-8\n").value(), (std::vector<uint32_t>{0, 1, 2, 3, 5, 7, 8}));
  EXPECT_EQ(ParseCpuList("0").value(), (std::vector<uint32_t>{0}));
  EXPECT_FALSE(ParseCpuList("").ok());
  EXPECT_FALSE(ParseCpuList("3-1").ok());
  EXPECT_FALSE(ParseCpuList("a").ok());
}

TEST(CpuListTest, OnlineCpusIsNotEmpty) {
  auto cpus = OnlineCpus();
  ASSERT_TRUE(cpus.ok()) << cpus.status().ToString();
  EXPECT_GE(cpus->size(), 1u);
}

}  // namespace
}  // namespace warpscope
