#include "agent/collectors/cpu_energy/cpu_info.h"

#include <gtest/gtest.h>

#include <fstream>

namespace warpscope {
namespace {

TEST(CpuInfoTest, X86ModelNameAndLogicalCpus) {
  const CpuModel m = ParseCpuInfo(
      "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz\n\n"
      "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz\n",
      "x86_64");
  EXPECT_EQ(m.model, "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz");
  EXPECT_EQ(m.arch, "x86_64");
  EXPECT_EQ(m.logical_cpus, 2);
}

TEST(CpuInfoTest, ArmHasOnlyItsPartNumber) {
  const CpuModel m = ParseCpuInfo(
      "processor\t: 0\nBogoMIPS\t: 243.75\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n\n"
      "processor\t: 1\nCPU part\t: 0xd0c\n",
      "aarch64");
  EXPECT_EQ(m.model, "arm:0xd0c");
  EXPECT_EQ(m.logical_cpus, 2);
}

TEST(CpuInfoTest, EachWindowSaysTheModelAndTheWattsGiven) {
  const std::string path = ::testing::TempDir() + "/cpuinfo";
  std::ofstream(path) << "processor : 0\nmodel name : AMD EPYC 7R32\n";
  CpuInfoCollector with(path, 4.5), without(path, std::nullopt);
  Window w;
  ASSERT_TRUE(with.FinishWindow(&w).ok());
  ASSERT_EQ(w.metrics.size(), 2u);
  EXPECT_EQ(w.metrics[0].metric, "cpu_info");
  EXPECT_EQ(w.metrics[0].value, 1);
  EXPECT_EQ(*FindLabel(w.metrics[0], "cpu_model"), "AMD EPYC 7R32");
  EXPECT_EQ(w.metrics[1].metric, "cpu_watts_per_core");
  EXPECT_EQ(w.metrics[1].value, 4.5);
  Window w2;
  ASSERT_TRUE(without.FinishWindow(&w2).ok());
  EXPECT_EQ(w2.metrics.size(), 1u);
}

}  // namespace
}  // namespace warpscope
