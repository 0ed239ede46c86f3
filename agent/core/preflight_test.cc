#include "agent/core/preflight.h"

#include <gtest/gtest.h>

namespace warpscope {
namespace {

uint64_t Caps(std::initializer_list<int> caps) {
  uint64_t v = 0;
  for (int c : caps) v |= 1ull << c;
  return v;
}

TEST(PreflightTest, NamesEveryMissingCapability) {
  PreflightFacts f;
  f.btf_present = true;
  f.effective_caps = 0;
  Status s = CheckCanProfile(f);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("missing CAP_BPF, CAP_PERFMON"), std::string::npos) << s.message();

  f.effective_caps = Caps({kCapBpf});
  s = CheckCanProfile(f);
  EXPECT_NE(s.message().find("missing CAP_PERFMON"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("missing CAP_BPF"), std::string::npos) << s.message();
}

TEST(PreflightTest, AcceptsBpfPlusPerfmonOrSysAdmin) {
  PreflightFacts f;
  f.btf_present = true;
  f.effective_caps = Caps({kCapBpf, kCapPerfmon});
  EXPECT_TRUE(CheckCanProfile(f).ok());
  f.effective_caps = Caps({kCapSysAdmin});
  EXPECT_TRUE(CheckCanProfile(f).ok());
}

TEST(PreflightTest, KernelWithoutBtf) {
  PreflightFacts f;
  f.effective_caps = Caps({kCapSysAdmin});
  f.btf_present = false;
  Status s = CheckCanProfile(f);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("BTF"), std::string::npos);
}

TEST(PreflightTest, ReadsThisProcess) {
  PreflightFacts f = ReadPreflightFacts();
  // Whatever this machine is, reading the facts must not crash and BTF state is a fact.
  EXPECT_EQ(f.btf_path, "/sys/kernel/btf/vmlinux");
}

}  // namespace
}  // namespace warpscope
