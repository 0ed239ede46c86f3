#include "agent/core/preflight.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

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

TEST(PreflightTest, HostPidNamespace) {
  EXPECT_EQ(NotInHostPidNamespace({kHostPidNamespaceInode, 1, true}), "");
  EXPECT_EQ(NotInHostPidNamespace({0, 1, true}), "");  // the ns link unreadable: the other two decide
  EXPECT_NE(NotInHostPidNamespace({4026532178ull, 1, true}).find("pid:[4026532178]"), std::string::npos);
  EXPECT_NE(NotInHostPidNamespace({kHostPidNamespaceInode, 2, true}).find("2 nested"), std::string::npos);
  EXPECT_NE(NotInHostPidNamespace({kHostPidNamespaceInode, 1, false}).find("kthreadd"), std::string::npos);
}

// A container's view: its own /proc (pid 1 is the agent, no kernel threads),
// two NSpid levels, a seccomp filter, capabilities from CapEff.
TEST(PreflightTest, ReadsAFixtureProcRoot) {
  char tmpl[] = "/tmp/preflight_test_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  ASSERT_EQ(mkdir((root + "/self").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root + "/2").c_str(), 0755), 0);
  std::ofstream(root + "/self/status") << "Name:\twarpscope-agent\nNSpid:\t48213\t1\nCapEff:\t000000c000080000\n"
                                          "Seccomp:\t2\n";
  std::ofstream(root + "/2/stat") << "2 (sleep) S 1 2 1 0 -1\n";
  PreflightPaths paths;
  paths.proc_root = root;
  paths.btf_path = root + "/vmlinux";
  const PreflightFacts f = ReadPreflightFacts(paths);
  EXPECT_EQ(f.effective_caps, (1ull << kCapBpf) | (1ull << kCapPerfmon) | (1ull << kCapSysPtrace));
  EXPECT_EQ(f.seccomp_mode, 2);
  EXPECT_EQ(f.pid_ns.nspid_levels, 2);
  EXPECT_FALSE(f.pid_ns.kernel_thread_visible);
  EXPECT_EQ(f.pid_ns.ns_inode, 0u);
  EXPECT_FALSE(f.btf_present);
  EXPECT_NE(NotInHostPidNamespace(f.pid_ns), "");
  std::ofstream(root + "/2/stat") << "2 (kthreadd) S 0 0 0 0 -1\n";
  std::ofstream(root + "/self/status") << "NSpid:\t48213\n";
  EXPECT_EQ(NotInHostPidNamespace(ReadPreflightFacts(paths).pid_ns), "");
  EXPECT_EQ(std::system(("rm -rf " + root).c_str()), 0);
}

}  // namespace
}  // namespace warpscope
