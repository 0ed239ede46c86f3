#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "agent/process/proc_fs.h"
#include "agent/process/proc_maps.h"
#include "agent/process/process_table.h"

namespace warpscope {
namespace {

constexpr char kMapsFixture[] =
    "55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 1311 /usr/bin/cat\n"
    "55d0c0a02000-55d0c0a07000 r-xp 00002000 fd:01 1311                       /usr/bin/cat\n"
    "7f0000000000-7f0000100000 r-xp 00010000 103:02 99  /opt/my app/lib with spaces.so\n"
    "7f0000200000-7f0000300000 r-xp 00000000 08:01 77 /tmp/libgone.so (deleted)\n"
    "7f0000400000-7f0000500000 rwxp 00000000 00:00 0 \n"
    "7f0000500000-7f0000501000 r-xp 00000000 00:00 0                          [anon:v8 jit]\n"
    "this line is garbage\n"
    "7f0000600000-7f00005 r-xp 00000000 00:00 0\n"
    "7f0000700000-7f0000701000 r-xp zz 00:00 0 /bad/offset\n"
    "\n"
    "7ffd1a3e1000-7ffd1a402000 rw-p 00000000 00:00 0                          [stack]\n"
    "7ffd1a5f3000-7ffd1a5f5000 r-xp 00000000 00:00 0                          [vdso]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

TEST(ProcMapsTest, ParsesFixture) {
  std::vector<MemoryMapping> maps = ParseProcMaps(kMapsFixture);
  ASSERT_EQ(maps.size(), 9u);

  EXPECT_EQ(maps[0].start, 0x55d0c0a00000u);
  EXPECT_FALSE(maps[0].executable);
  const MemoryMapping& text = maps[1];
  EXPECT_EQ(text.start, 0x55d0c0a02000u);
  EXPECT_EQ(text.end, 0x55d0c0a07000u);
  EXPECT_EQ(text.offset, 0x2000u);
  EXPECT_TRUE(text.readable && text.executable && !text.writable);
  EXPECT_EQ(text.dev_major, 0xfdu);
  EXPECT_EQ(text.dev_minor, 1u);
  EXPECT_EQ(text.inode, 1311u);
  EXPECT_EQ(text.path, "/usr/bin/cat");
  EXPECT_TRUE(text.IsFileBacked());
  EXPECT_FALSE(text.deleted);

  EXPECT_EQ(maps[2].path, "/opt/my app/lib with spaces.so");
  EXPECT_EQ(maps[2].dev_major, 0x103u);
  EXPECT_EQ(maps[2].offset, 0x10000u);

  EXPECT_EQ(maps[3].path, "/tmp/libgone.so");
  EXPECT_TRUE(maps[3].deleted);
  EXPECT_TRUE(maps[3].IsFileBacked());

  EXPECT_EQ(maps[4].path, "");
  EXPECT_TRUE(maps[4].writable);
  EXPECT_FALSE(maps[4].IsFileBacked());
  EXPECT_FALSE(maps[4].IsPseudo());

  EXPECT_EQ(maps[5].path, "[anon:v8 jit]");
  EXPECT_FALSE(maps[5].IsPseudo());

  EXPECT_EQ(maps[6].path, "[stack]");
  EXPECT_EQ(maps[7].path, "[vdso]");
  EXPECT_TRUE(maps[7].IsPseudo());
  EXPECT_FALSE(maps[7].IsFileBacked());
  EXPECT_EQ(maps[8].path, "[vsyscall]");
  EXPECT_EQ(maps[8].start, 0xffffffffff600000u);
  EXPECT_FALSE(maps[8].readable);
  EXPECT_TRUE(maps[8].executable);
}

TEST(ProcMapsTest, NeverCrashesOnJunk) {
  EXPECT_TRUE(ParseProcMaps("").empty());
  EXPECT_TRUE(ParseProcMaps("\n\n\n").empty());
  EXPECT_TRUE(ParseProcMaps("-").empty());
  EXPECT_TRUE(ParseProcMaps("1-2").empty());
  EXPECT_TRUE(ParseProcMaps("2-1 r-xp 0 0:0 0").empty());  // end before start
  EXPECT_TRUE(ParseProcMaps("1-2 r-x").empty());
  EXPECT_TRUE(ParseProcMaps("1-2 r-xp 0 0:0 12x /a").empty());
  EXPECT_TRUE(ParseProcMaps("ffffffffffffffffffff-1 r-xp 0 0:0 0").empty());  // overflow
  std::vector<MemoryMapping> maps = ParseProcMaps("1-2 r-xp 0 0:0 0\r\n");
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(maps[0].path, "");
}

TEST(ProcFsTest, Paths) {
  ProcFs procfs("/tmp/fake/");
  EXPECT_EQ(procfs.RootPath(42, "/usr/lib/libc.so.6"), "/tmp/fake/42/root/usr/lib/libc.so.6");
  EXPECT_EQ(procfs.MapFilesPath(42, 0x7F00ABCD0000, 0x7f00abcd1000),
            "/tmp/fake/42/map_files/7f00abcd0000-7f00abcd1000");
  EXPECT_EQ(ProcFs().MapFilesPath(1, 0x1000, 0x2000), "/proc/1/map_files/1000-2000");
}

class FixtureProcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ws_process_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void WriteMaps(uint32_t pid, const std::string& text) {
    std::filesystem::create_directories(root_ + "/" + std::to_string(pid));
    std::ofstream(root_ + "/" + std::to_string(pid) + "/maps") << text;
  }
  void RemoveProcess(uint32_t pid) { std::filesystem::remove_all(root_ + "/" + std::to_string(pid)); }

  std::string root_;
};

TEST_F(FixtureProcTest, SeenFindExitCollect) {
  WriteMaps(100, kMapsFixture);
  ProcessTable table{ProcFs(root_)};
  const ProcessInfo* info = table.OnProcessSeen(100);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->pid, 100u);
  EXPECT_FALSE(info->exited);
  EXPECT_EQ(info->exe_path, "");  // fixture has no exe link
  for (const MemoryMapping& m : info->mappings) EXPECT_TRUE(m.executable);
  EXPECT_TRUE(std::is_sorted(info->mappings.begin(), info->mappings.end(),
                             [](const auto& a, const auto& b) { return a.start < b.start; }));
  EXPECT_EQ(info->mappings.size(), 7u);

  const MemoryMapping* m = table.FindMapping(100, 0x55d0c0a03000);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->path, "/usr/bin/cat");
  EXPECT_EQ(table.FindMapping(100, 0x55d0c0a07000), nullptr);  // end is exclusive
  EXPECT_EQ(table.FindMapping(100, 0x55d0c0a01000), nullptr);  // not executable
  EXPECT_EQ(table.FindMapping(100, 0), nullptr);
  ASSERT_NE(table.FindMapping(100, 0xffffffffff600fff), nullptr);

  table.OnExit(100);
  EXPECT_TRUE(table.Find(100)->exited);
  RemoveProcess(100);
  EXPECT_NE(table.FindMapping(100, 0x55d0c0a03000), nullptr);  // kept until collected
  table.CollectExited();
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.Find(100), nullptr);
}

TEST_F(FixtureProcTest, VanishedProcessIsNotAnError) {
  ProcessTable table{ProcFs(root_)};
  EXPECT_EQ(table.OnProcessSeen(7), nullptr);
  EXPECT_EQ(table.FindMapping(7, 0x1000), nullptr);
  EXPECT_EQ(table.size(), 0u);
  // Remembered as gone for this epoch even if the pid shows up meanwhile...
  WriteMaps(7, "1000-2000 r-xp 0 00:00 0 [vdso]\n");
  EXPECT_EQ(table.OnProcessSeen(7), nullptr);
  // ...and retried in the next one (pid reuse).
  table.BeginEpoch();
  EXPECT_NE(table.OnProcessSeen(7), nullptr);
}

TEST_F(FixtureProcTest, MissRereadsOncePerEpoch) {
  WriteMaps(5, "1000-2000 r-xp 0 08:01 1 /bin/a\n");
  ProcessTable table{ProcFs(root_)};
  const uint64_t gen = table.OnProcessSeen(5)->generation;
  // A library appears (dlopen) after the first read.
  WriteMaps(5, "1000-2000 r-xp 0 08:01 1 /bin/a\n3000-4000 r-xp 0 08:01 2 /lib/b.so\n");
  const MemoryMapping* m = table.FindMapping(5, 0x3500);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->path, "/lib/b.so");
  EXPECT_GT(table.Find(5)->generation, gen);

  WriteMaps(5, "1000-2000 r-xp 0 08:01 1 /bin/a\n3000-4000 r-xp 0 08:01 2 /lib/b.so\n5000-6000 r-xp 0 08:01 3 /c\n");
  EXPECT_EQ(table.FindMapping(5, 0x5500), nullptr);  // already re-read this epoch
  EXPECT_EQ(table.FindMapping(5, 0x7000), nullptr);
  table.BeginEpoch();
  EXPECT_NE(table.FindMapping(5, 0x5500), nullptr);

  table.OnExit(5);
  WriteMaps(5, "9000-a000 r-xp 0 08:01 4 /d\n");
  table.BeginEpoch();
  EXPECT_EQ(table.FindMapping(5, 0x9500), nullptr);  // exited: no re-read
}

TEST_F(FixtureProcTest, ExecReplacesMaps) {
  WriteMaps(9, "1000-2000 r-xp 0 08:01 1 /bin/sh\n");
  ProcessTable table{ProcFs(root_)};
  const uint64_t gen = table.OnProcessSeen(9)->generation;
  WriteMaps(9, "8000-9000 r-xp 0 08:01 2 /usr/bin/python3\n");
  table.OnExec(9);
  const ProcessInfo* info = table.Find(9);
  ASSERT_NE(info, nullptr);
  ASSERT_EQ(info->mappings.size(), 1u);
  EXPECT_EQ(info->mappings[0].path, "/usr/bin/python3");
  EXPECT_NE(info->generation, gen);
  EXPECT_EQ(table.FindMapping(9, 0x1500), nullptr);
}

// A process seen before it dlopen'ed libraries: OnMapsChanged reads them now,
// whatever the epoch, and unknown or vanished pids are handled.
TEST_F(FixtureProcTest, MapsChangedRereadsNow) {
  WriteMaps(6, "1000-2000 r-xp 0 08:01 1 /bin/app\n");
  ProcessTable table{ProcFs(root_)};
  const uint64_t gen = table.OnProcessSeen(6)->generation;
  EXPECT_EQ(table.FindMapping(6, 0x3500), nullptr);  // this epoch's miss re-read spent
  WriteMaps(6, "1000-2000 r-xp 0 08:01 1 /bin/app\n3000-4000 r-xp 0 08:01 2 /lib/libwarpscope_cuda.so\n");
  const ProcessInfo* info = table.OnMapsChanged(6);
  ASSERT_NE(info, nullptr);
  ASSERT_EQ(info->mappings.size(), 2u);
  EXPECT_EQ(info->mappings[1].path, "/lib/libwarpscope_cuda.so");
  EXPECT_GT(info->generation, gen);
  WriteMaps(8, "1000-2000 r-xp 0 08:01 1 /bin/other\n");
  EXPECT_NE(table.OnMapsChanged(8), nullptr) << "an unknown pid is read";
  RemoveProcess(6);
  EXPECT_EQ(table.OnMapsChanged(6), nullptr);
  EXPECT_TRUE(table.Find(6)->exited);
}

TEST(ProcSelfTest, RealMaps) {
  ProcFs procfs;
  const uint32_t pid = static_cast<uint32_t>(getpid());
  ASSERT_TRUE(procfs.Exists(pid));
  EXPECT_FALSE(procfs.Exists(0x7ffffff0));
  StatusOr<std::string> comm = procfs.ReadComm(pid);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_EQ(*comm, std::string("process_test").substr(0, 15));

  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe));
  ASSERT_GT(n, 0);

  ProcessTable table{procfs};
  const ProcessInfo* info = table.OnProcessSeen(pid);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->exe_path, std::string(exe, static_cast<size_t>(n)));
  const auto self_fn = reinterpret_cast<uint64_t>(&ParseProcMaps);
  const MemoryMapping* m = table.FindMapping(pid, self_fn);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->path, info->exe_path);
  EXPECT_TRUE(m->IsFileBacked());
  struct stat st;
  EXPECT_EQ(stat(procfs.MapFilesPath(pid, m->start, m->end).c_str(), &st), 0) << "needs root";
  EXPECT_EQ(st.st_ino, m->inode);
}

}  // namespace
}  // namespace warpscope
