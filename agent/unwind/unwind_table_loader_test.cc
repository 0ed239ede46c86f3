// UnwindTableLoader against real BPF maps of the shapes the sampler declares:
// tables of exited processes stay idle and are taken back by the next process
// of the same binaries, and give way when a new table needs their rows.
// Creating BPF maps needs root (CAP_BPF): skipped otherwise; labelled `bpf`.
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "agent/process/process_table.h"
#include "agent/unwind/unwind_table_loader.h"

namespace warpscope {
namespace {

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root for BPF maps";
  }
  void TearDown() override {
    for (pid_t pid : children_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    for (int fd : {fds_.entries, fds_.pages, fds_.exec_mappings, fds_.proc_info}) {
      if (fd >= 0) close(fd);
    }
  }

  UnwindMapFds MakeMaps(const UnwindMapSizes& sizes) {
    fds_.entries = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_entries", 4, sizeof(ws_unwind_entry), sizes.entries, nullptr);
    fds_.pages = bpf_map_create(BPF_MAP_TYPE_HASH, "t_pages", sizeof(ws_unwind_page_key), sizeof(ws_unwind_page),
                                sizes.pages, nullptr);
    fds_.exec_mappings =
        bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_mappings", 4, sizeof(ws_exec_mapping), sizes.exec_mappings, nullptr);
    fds_.proc_info = bpf_map_create(BPF_MAP_TYPE_HASH, "t_procs", 4, sizeof(ws_proc_info), sizes.processes, nullptr);
    EXPECT_GE(fds_.entries, 0);
    EXPECT_GE(fds_.pages, 0);
    EXPECT_GE(fds_.exec_mappings, 0);
    EXPECT_GE(fds_.proc_info, 0);
    return fds_;
  }

  // A child that runs `argv` until the test ends; its maps are read once the
  // exec is done (its main executable is mapped).
  const ProcessInfo* Start(const std::vector<const char*>& argv) {
    const pid_t pid = fork();
    if (pid == 0) {
      execv(argv[0], const_cast<char* const*>(argv.data()));
      _exit(127);
    }
    children_.push_back(pid);
    StatusOr<std::string> self_exe = ProcFs().ReadExeLink(static_cast<uint32_t>(getpid()));
    const std::string self = self_exe.ok() ? *self_exe : "";
    for (int i = 0; i < 200; ++i) {
      StatusOr<std::string> exe = ProcFs().ReadExeLink(static_cast<uint32_t>(pid));
      if (exe.ok() && *exe != self) break;  // exec'ed (/bin may be a link to /usr/bin)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the dynamic loader has mapped the libraries
    return table_.OnProcessSeen(static_cast<uint32_t>(pid));
  }

  // The table id of the process's main-executable mapping in the BPF maps.
  uint32_t ExeTableOf(const ProcessInfo& info) {
    ws_proc_info proc{};
    if (bpf_map_lookup_elem(fds_.proc_info, &info.pid, &proc) != 0) return WS_TABLE_NONE;
    for (uint32_t i = 0; i < proc.count; ++i) {
      const uint32_t index = proc.first + i;
      ws_exec_mapping m{};
      if (bpf_map_lookup_elem(fds_.exec_mappings, &index, &m) != 0) continue;
      for (const MemoryMapping& mm : info.mappings) {
        if (mm.start == m.start && mm.path == info.exe_path) return m.table_id;
      }
    }
    return WS_TABLE_NONE;
  }

  UnwindMapFds fds_;
  ProcessTable table_{ProcFs()};
  std::vector<pid_t> children_;
};

const std::vector<const char*> kSleep = {"/bin/sleep", "30", nullptr};
const std::vector<const char*> kTail = {"/usr/bin/tail", "-f", "/dev/null", nullptr};

TEST_F(LoaderTest, TablesOfExitedProcessesStayIdleAndAreTakenBack) {
  const UnwindMapSizes sizes = ComputeUnwindMapSizes(8 << 20);
  UnwindTableLoader loader(MakeMaps(sizes), sizes, ProcFs());
  const ProcessInfo* first = Start(kSleep);
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(loader.Describe(*first).ok());
  const uint64_t built = loader.stats().tables_built;
  ASSERT_GE(built, 2u);  // sleep and libc at least
  const uint32_t sleep_table = ExeTableOf(*first);
  EXPECT_NE(sleep_table, WS_TABLE_NONE);
  loader.Forget(first->pid);
  EXPECT_EQ(loader.stats().tables_idle, built);
  EXPECT_EQ(loader.stats().tables_freed, 0u);

  // Another process of the same binaries builds nothing.
  const ProcessInfo* second = Start(kSleep);
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(loader.Describe(*second).ok());
  EXPECT_EQ(loader.stats().tables_built, built);
  EXPECT_EQ(loader.stats().tables_reused, built);
  EXPECT_EQ(loader.stats().tables_idle, 0u);
  EXPECT_EQ(ExeTableOf(*second), sleep_table);

  // Past the grace period the idle tables are unloaded.
  loader.Forget(second->pid);
  loader.ExpireIdle(UnwindTableLoader::Clock::now() + kIdleTableGrace);
  EXPECT_EQ(loader.stats().tables_freed, built);
  EXPECT_EQ(loader.stats().tables_live, 0u);
  EXPECT_EQ(loader.stats().rows_used, 0u);
}

TEST_F(LoaderTest, IdleTablesGiveWayToANewTable) {
  // Rows for exactly what both processes need at once, less one: the second
  // one's tables fit only once idle tables of the first are unloaded.
  const UnwindMapSizes big = ComputeUnwindMapSizes(8 << 20);
  uint64_t both_rows = 0;
  {
    UnwindTableLoader sizing(MakeMaps(big), big, ProcFs());
    const ProcessInfo* a = Start(kSleep);
    const ProcessInfo* b = Start(kTail);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ASSERT_TRUE(sizing.Describe(*a).ok());
    ASSERT_TRUE(sizing.Describe(*b).ok());
    both_rows = sizing.stats().rows_used;
    TearDown();
    children_.clear();
    fds_ = UnwindMapFds();
  }
  UnwindMapSizes sizes = big;
  sizes.entries = static_cast<uint32_t>(both_rows - 1);
  UnwindTableLoader loader(MakeMaps(sizes), sizes, ProcFs());
  const ProcessInfo* first = Start(kSleep);
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(loader.Describe(*first).ok());
  loader.Forget(first->pid);
  const ProcessInfo* second = Start(kTail);
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(loader.Describe(*second).ok());
  EXPECT_GE(loader.stats().tables_freed, 1u);
  EXPECT_EQ(loader.stats().tables_no_space, 0u);
  EXPECT_NE(ExeTableOf(*second), WS_TABLE_NONE);
  EXPECT_LE(loader.stats().rows_used, sizes.entries);
}

}  // namespace
}  // namespace warpscope
