#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "agent/process/process_table.h"
#include "agent/symbolize/binary_files.h"
#include "agent/symbolize/symbolizer.h"
#include "base/file_util.h"

namespace warpscope {
namespace {

namespace fs = std::filesystem;

const std::string kFixtureDir = WS_SYMFIXTURE_DIR;
const std::string kFixtureLib = kFixtureDir + "/libwsfixture.so";
const std::string kSplitLib = kFixtureDir + "/split/libwsfixture_split_bid.so";

uint32_t SelfPid() { return static_cast<uint32_t>(getpid()); }
uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%" PRIx64, v);
  return buf;
}

__attribute__((noinline)) int LocalMarker(int x) {
  static volatile int sink;
  for (int i = 0; i < x; ++i) sink = sink + i;
  return sink;
}

// The fixture libraries stay loaded for the whole test binary.
class SymbolizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    lib_ = dlopen(kFixtureLib.c_str(), RTLD_NOW);
    split_ = dlopen(kSplitLib.c_str(), RTLD_NOW);
  }
  void SetUp() override {
    ASSERT_NE(lib_, nullptr) << kFixtureLib;
    ASSERT_NE(split_, nullptr) << kSplitLib;
  }
  static void* Sym(void* handle, const char* name) { return dlsym(handle, name); }

  static inline void* lib_ = nullptr;
  static inline void* split_ = nullptr;
};

TEST_F(SymbolizerTest, SelfSharedLibraries) {
  Symbolizer s{ProcFs()};
  s.OnProcessSeen(SelfPid());
  const uint64_t loaded_after_seen = s.stats().binaries_loaded;
  EXPECT_GT(loaded_after_seen, 2u);  // test binary, libc, libstdc++, fixtures...

  auto static_address = reinterpret_cast<void* (*)()>(Sym(lib_, "ws_fixture_static_address"));
  auto split_static = reinterpret_cast<void* (*)()>(Sym(split_, "ws_split_static_address"));
  const struct {
    uint64_t addr;
    const char* name;
    const char* system_name;
  } cases[] = {
      {Addr(Sym(lib_, "ws_fixture_exported")), "ws_fixture_exported", "ws_fixture_exported"},
      {Addr(Sym(lib_, "_ZN9wsfixture7ComputeEi")), "wsfixture::Compute(int)", "_ZN9wsfixture7ComputeEi"},
      {Addr(static_address()), "ws_fixture_static(int)", "_ZL17ws_fixture_statici"},
      {Addr(split_static()), "ws_split_static", "ws_split_static"},  // only in the .debug file
      {Addr(dlsym(RTLD_DEFAULT, "getpid")), "getpid", "getpid"},
  };
  for (const auto& c : cases) {
    for (bool is_return : {false, true}) {
      const uint64_t addr = c.addr + (is_return ? 1 : 0);
      SymbolizedFrame f = s.SymbolizeUser(SelfPid(), addr, is_return);
      ASSERT_EQ(f.functions.size(), 1u);
      EXPECT_EQ(f.functions[0].name, c.name);
      EXPECT_EQ(f.functions[0].system_name, c.system_name);
      EXPECT_TRUE(f.has_mapping);
      EXPECT_EQ(f.address, addr);
      EXPECT_FALSE(f.mapping.is_kernel);
      EXPECT_EQ(f.mapping.id, 0u);
      EXPECT_LE(f.mapping.memory_start, addr);
      EXPECT_GT(f.mapping.memory_limit, addr);
    }
  }
  SymbolizedFrame f = s.SymbolizeUser(SelfPid(), cases[0].addr, false);
  EXPECT_EQ(f.mapping.filename, fs::canonical(kFixtureLib).string());
  EXPECT_EQ(f.mapping.build_id, WS_SYMFIXTURE_BUILD_ID);

  // The call site in the test binary itself (not stripped).
  f = s.SymbolizeUser(SelfPid(), Addr(reinterpret_cast<void*>(&LocalMarker)), false);
  EXPECT_NE(f.functions[0].name.find("LocalMarker(int)"), std::string::npos) << f.functions[0].name;

  const SymbolizerStats st = s.stats();
  EXPECT_EQ(st.user_frames, std::size(cases) * 2 + 2);
  EXPECT_EQ(st.user_symbolized, st.user_frames);
  EXPECT_EQ(st.binaries_loaded, loaded_after_seen);  // everything was loaded eagerly
  EXPECT_GT(st.symbol_bytes, 0u);
}

TEST_F(SymbolizerTest, UnknownAnonAndVdso) {
  void* jit = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(jit, MAP_FAILED);
  Symbolizer s{ProcFs()};
  s.OnProcessSeen(SelfPid());

  SymbolizedFrame f = s.SymbolizeUser(SelfPid(), 0x10, false);
  EXPECT_FALSE(f.has_mapping);
  ASSERT_EQ(f.functions.size(), 1u);
  EXPECT_EQ(f.functions[0].name, "[unknown]+0x10");

  f = s.SymbolizeUser(SelfPid(), Addr(jit) + 0x20, true);
  EXPECT_FALSE(f.has_mapping);
  EXPECT_EQ(f.functions[0].name, "[anon]+0x" + Hex(Addr(jit) + 0x20));
  munmap(jit, 4096);

  void* vdso = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
  void* gettime = vdso ? dlsym(vdso, "__vdso_clock_gettime") : nullptr;
  if (gettime == nullptr) GTEST_SKIP() << "no vdso clock_gettime";
  f = s.SymbolizeUser(SelfPid(), Addr(gettime), false);
  EXPECT_TRUE(f.has_mapping);
  EXPECT_EQ(f.mapping.filename, "[vdso]");
  EXPECT_NE(f.functions[0].name.find("clock_gettime"), std::string::npos) << f.functions[0].name;
  EXPECT_EQ(s.stats().user_no_mapping, 2u);
}

struct Child {
  pid_t pid = -1;
  int stdin_fd = -1;
  uint64_t global_fn = 0;
  uint64_t static_fn = 0;
};

// Starts a fixture executable; it prints two function addresses and waits for stdin to close.
Child Spawn(const std::string& path) {
  int in[2], out[2];
  Child c;
  if (pipe(in) != 0 || pipe(out) != 0) return c;
  c.pid = fork();
  if (c.pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[1]);
    close(out[0]);
    execl(path.c_str(), path.c_str(), nullptr);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  c.stdin_fd = in[1];
  FILE* f = fdopen(out[0], "r");
  char line[128] = {};
  if (fgets(line, sizeof(line), f) != nullptr) {
    char* end = nullptr;
    c.global_fn = strtoull(line, &end, 16);
    c.static_fn = strtoull(end, nullptr, 16);
  }
  fclose(f);
  return c;
}

void Finish(Child& c) {
  close(c.stdin_fd);
  int status = 0;
  waitpid(c.pid, &status, 0);
}

TEST_F(SymbolizerTest, ChildProcessSymbolsSurviveExit) {
  for (const std::string exe : {"ws_symfixture_exe", "ws_symfixture_exe_nopie", "deleted"}) {
    SCOPED_TRACE(exe);
    std::string path = kFixtureDir + "/" + exe;
    if (exe == "deleted") {
      path = kFixtureDir + "/ws_symfixture_exe.deleted." + std::to_string(getpid());
      fs::copy_file(kFixtureDir + "/ws_symfixture_exe", path, fs::copy_options::overwrite_existing);
    }
    Child child = Spawn(path);
    ASSERT_GT(child.pid, 0);
    ASSERT_NE(child.global_fn, 0u);
    if (exe == "deleted") unlink(path.c_str());  // only /proc/PID/map_files reaches it now

    Symbolizer s{ProcFs()};
    const uint32_t pid = static_cast<uint32_t>(child.pid);
    s.OnProcessSeen(pid);
    Finish(child);
    s.OnExit(pid);

    SymbolizedFrame f = s.SymbolizeUser(pid, child.global_fn, false);
    EXPECT_EQ(f.functions[0].name, "ws_exe_global_work");
    EXPECT_EQ(f.mapping.filename, path);
    EXPECT_FALSE(f.mapping.build_id.empty());
    f = s.SymbolizeUser(pid, child.static_fn + 2, true);
    EXPECT_EQ(f.functions[0].name, "ws_exe_static_work");
    EXPECT_EQ(s.stats().elf_load_errors, 0u);

    s.EndEpoch();  // the exited process is forgotten
    f = s.SymbolizeUser(pid, child.global_fn, false);
    EXPECT_FALSE(f.has_mapping);
    EXPECT_EQ(f.functions[0].name, "[unknown]+0x" + Hex(child.global_fn));
  }
}

// A fixture /proc: mappings point at copies of the fixture libraries, which
// the symbolizer reaches through their plain paths (no map_files there).
TEST_F(SymbolizerTest, FixtureProcFs) {
  char tmpl[] = "/tmp/ws_symbolize_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  fs::create_directories(root + "/42");
  fs::create_directories(root + "/libs");
  const std::string lib_a = root + "/libs/libwsfixture.so";
  const std::string lib_b = root + "/libs/libwsfixture_again.so";
  const std::string stripped = root + "/libs/libwsfixture_split_bid.so";  // no .debug next to it
  fs::copy_file(kFixtureLib, lib_a);
  fs::copy_file(kFixtureLib, lib_b);
  fs::copy_file(kSplitLib, stripped);
  std::ofstream(root + "/libs/notelf.so") << "not an ELF file";

  // Where the real process has the fixture's code mapped, to reuse its offsets.
  ProcessTable self{ProcFs()};
  const uint64_t exported = Addr(Sym(lib_, "ws_fixture_exported"));
  const MemoryMapping* lib_map = self.FindMapping(SelfPid(), exported);
  ASSERT_NE(lib_map, nullptr);
  const uint64_t split_static = Addr(reinterpret_cast<void* (*)()>(Sym(split_, "ws_split_static_address"))());
  Dl_info info;
  ASSERT_NE(dladdr(reinterpret_cast<void*>(split_static), &info), 0);
  const uint64_t split_static_vaddr = split_static - Addr(info.dli_fbase);
  const MemoryMapping split_map = *self.FindMapping(SelfPid(), split_static);

  const uint64_t a = 0x100000000, b = 0x200000000, c = 0x300000000;
  auto line = [](uint64_t start, const MemoryMapping& m, uint64_t inode, const std::string& path) {
    return Hex(start) + "-" + Hex(start + (m.end - m.start)) + " r-xp " + Hex(m.offset) + " 08:01 " +
           std::to_string(inode) + " " + path + "\n";
  };
  std::ofstream(root + "/42/maps") << line(a, *lib_map, 1001, lib_a) << line(b, *lib_map, 1002, lib_b)
                                   << line(c, split_map, 1003, stripped)
                                   << "500000000-500001000 r-xp 00001000 08:01 1004 " << root << "/libs/notelf.so\n"
                                   << "600000000-600001000 r-xp 00000000 08:01 1005 /nonexistent/libgone.so\n"
                                   << "700000000-700001000 r-xp 00000000 00:00 0 \n"
                                   << "7ff000000000-7ff000002000 r-xp 00000000 00:00 0 [vdso]\n";

  Symbolizer s{ProcFs(root)};
  s.OnProcessSeen(42);
  EXPECT_EQ(s.stats().binaries_loaded, 2u);  // two paths, one build id: one table
  EXPECT_EQ(s.stats().elf_load_errors, 2u);

  const uint64_t off = exported - lib_map->start;
  for (uint64_t base : {a, b}) {
    SymbolizedFrame f = s.SymbolizeUser(42, base + off, false);
    EXPECT_EQ(f.functions[0].name, "ws_fixture_exported");
    EXPECT_EQ(f.mapping.build_id, WS_SYMFIXTURE_BUILD_ID);
    EXPECT_EQ(f.mapping.memory_start, base);
    EXPECT_EQ(f.mapping.file_offset, lib_map->offset);
  }
  EXPECT_EQ(s.SymbolizeUser(42, a + off, false).mapping.filename, lib_a);
  EXPECT_EQ(s.SymbolizeUser(42, b + off, false).mapping.filename, lib_b);

  SymbolizedFrame f = s.SymbolizeUser(42, c + (split_static - split_map.start), false);
  EXPECT_TRUE(f.has_mapping);
  EXPECT_EQ(f.functions[0].name, "libwsfixture_split_bid.so+0x" + Hex(split_static_vaddr));
  EXPECT_EQ(s.SymbolizeUser(42, 0x500000010, false).functions[0].name, "notelf.so+0x1010");
  EXPECT_EQ(s.SymbolizeUser(42, 0x500000020, false).functions[0].name, "notelf.so+0x1020");
  EXPECT_EQ(s.SymbolizeUser(42, 0x600000abc, false).functions[0].name, "libgone.so+0xabc");
  EXPECT_EQ(s.SymbolizeUser(42, 0x700000005, false).functions[0].name, "[anon]+0x700000005");
  f = s.SymbolizeUser(42, 0x7ff000000010, false);
  EXPECT_TRUE(f.has_mapping);
  EXPECT_EQ(f.mapping.filename, "[vdso]");
  EXPECT_EQ(f.functions[0].name, "[vdso]+0x10");  // no /proc/42/mem in the fixture
  EXPECT_EQ(s.SymbolizeUser(42, 0x800000000, false).functions[0].name, "[unknown]+0x800000000");
  EXPECT_EQ(s.SymbolizeUser(43, 0x100, false).functions[0].name, "[unknown]+0x100");  // no such process

  const SymbolizerStats st = s.stats();
  EXPECT_EQ(st.elf_load_errors, 2u);  // unreadable binaries are not retried
  EXPECT_EQ(st.binaries_loaded, 2u);
  EXPECT_EQ(st.user_symbolized, 2u + 2u);
  EXPECT_EQ(st.user_no_symbol, 5u);
  EXPECT_EQ(st.user_no_mapping, 3u);
  fs::remove_all(root);
}

// The symbol-table budget: tables of binaries no known process maps are
// dropped, least recently used first, once the tables exceed the budget and a
// table was read since the last look; tables in use always stay.
TEST_F(SymbolizerTest, UnmappedTablesAreDroppedOverTheBudget) {
  char tmpl[] = "/tmp/ws_symbolize_evict.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  fs::create_directories(root + "/libs");
  const std::string lib = root + "/libs/libwsfixture.so", lib_copy = root + "/libs/libwsfixture_copy.so";
  const std::string exe = root + "/libs/exe", nopie = root + "/libs/exe_nopie";
  fs::copy_file(kFixtureLib, lib);
  fs::copy_file(kFixtureLib, lib_copy);  // the same build: one table for both
  fs::copy_file(kFixtureDir + "/ws_symfixture_exe", exe);
  fs::copy_file(kFixtureDir + "/ws_symfixture_exe_nopie", nopie);

  ProcessTable self{ProcFs()};
  const uint64_t exported = Addr(Sym(lib_, "ws_fixture_exported"));
  const MemoryMapping lib_map = *self.FindMapping(SelfPid(), exported);
  const uint64_t a = 0x100000000;
  auto line = [&](uint64_t start, uint64_t inode, const std::string& path) {
    return Hex(start) + "-" + Hex(start + (lib_map.end - lib_map.start)) + " r-xp " + Hex(lib_map.offset) +
           " 08:01 " + std::to_string(inode) + " " + path + "\n";
  };
  const std::string lib_line = line(a, 2001, lib), copy_line = line(0x500000000, 2002, lib_copy);
  const std::string exe_line = line(0x200000000, 2003, exe), nopie_line = line(0x300000000, 2004, nopie);
  auto start = [&](uint32_t pid, const std::string& maps) {
    fs::create_directories(root + "/" + std::to_string(pid));
    std::ofstream(root + "/" + std::to_string(pid) + "/maps") << maps;
  };
  auto stop = [&](Symbolizer& s, uint32_t pid) {
    fs::remove_all(root + "/" + std::to_string(pid));
    s.OnExit(pid);
  };
  auto epoch = [](Symbolizer& s, const std::function<void()>& work) {
    s.BeginEpoch();
    work();
    s.EndEpoch();
  };

  // Each table's size, from a symbolizer with the default budget.
  size_t lib_bytes = 0, exe_bytes = 0, nopie_bytes = 0;
  {
    Symbolizer probe{ProcFs(root)};
    start(81, lib_line);
    start(82, exe_line);
    start(83, nopie_line);
    probe.OnProcessSeen(81);
    lib_bytes = probe.stats().symbol_bytes;
    probe.OnProcessSeen(82);
    exe_bytes = probe.stats().symbol_bytes - lib_bytes;
    probe.OnProcessSeen(83);
    nopie_bytes = probe.stats().symbol_bytes - lib_bytes - exe_bytes;
    ASSERT_GT(lib_bytes, 0u);
    ASSERT_GT(exe_bytes, 0u);
    ASSERT_GT(nopie_bytes, 0u);
    for (uint32_t pid : {81, 82, 83}) stop(probe, pid);
  }

  {
    SCOPED_TRACE("budget of one byte: every unmapped table goes");
    Symbolizer s{ProcFs(root), "/proc/kallsyms", /*cache_bytes=*/1};
    start(51, lib_line);
    start(52, exe_line + copy_line);
    epoch(s, [&] {
      s.OnProcessSeen(51);
      s.OnProcessSeen(52);
    });
    EXPECT_EQ(s.stats().binaries_loaded, 2u);  // the copy shares the library's table
    EXPECT_EQ(s.stats().binaries_evicted, 0u);  // both mapped
    EXPECT_EQ(s.stats().symbol_bytes, lib_bytes + exe_bytes);

    epoch(s, [&] { stop(s, 52); });
    EXPECT_EQ(s.stats().binaries_evicted, 0u);  // nothing read since the last look

    start(53, nopie_line);
    epoch(s, [&] { s.OnProcessSeen(53); });
    // The exe goes; the copy's entry goes too, but its table is the library's,
    // which process 51 still maps.
    EXPECT_EQ(s.stats().binaries_evicted, 1u);
    EXPECT_EQ(s.stats().symbol_bytes, lib_bytes + nopie_bytes);
    EXPECT_EQ(s.SymbolizeUser(51, a + (exported - lib_map.start), false).functions[0].name, "ws_fixture_exported");

    start(54, exe_line + copy_line);  // the exe again: read again
    epoch(s, [&] { s.OnProcessSeen(54); });
    EXPECT_EQ(s.stats().binaries_loaded, 4u);
    EXPECT_EQ(s.SymbolizeUser(54, 0x500000000 + (exported - lib_map.start), false).functions[0].name,
              "ws_fixture_exported");
    for (uint32_t pid : {51, 53, 54}) stop(s, pid);
  }

  {
    SCOPED_TRACE("least recently used first");
    Symbolizer s{ProcFs(root), "/proc/kallsyms", /*cache_bytes=*/lib_bytes + exe_bytes};
    start(71, exe_line);
    start(72, nopie_line);
    epoch(s, [&] { s.OnProcessSeen(71); });
    epoch(s, [&] { s.OnProcessSeen(72); });
    epoch(s, [&] { s.SymbolizeUser(71, 0x200000010, false); });  // the exe was used last
    epoch(s, [&] {
      stop(s, 71);
      stop(s, 72);
    });
    EXPECT_EQ(s.stats().binaries_evicted, 0u);  // exe + nopie fit the budget
    start(73, lib_line);
    epoch(s, [&] { s.OnProcessSeen(73); });
    EXPECT_EQ(s.stats().binaries_evicted, 1u);  // nopie, the older one, is enough
    EXPECT_EQ(s.stats().symbol_bytes, lib_bytes + exe_bytes);
    start(74, exe_line);
    epoch(s, [&] { s.OnProcessSeen(74); });
    EXPECT_EQ(s.stats().binaries_loaded, 3u);  // the exe was kept
    stop(s, 73);
    stop(s, 74);
  }
  fs::remove_all(root);
}

// Every reader of one binary shares one open of it while a scope is alive;
// the file's identity carries its size and modification time.
TEST(BinaryFilesTest, ReadersInAScopeShareOneOpen) {
  ProcessTable table{ProcFs()};
  const ProcessInfo* self = table.OnProcessSeen(static_cast<uint32_t>(getpid()));
  ASSERT_NE(self, nullptr);
  const MemoryMapping* exe = nullptr;
  for (const MemoryMapping& m : self->mappings) {
    if (m.IsFileBacked() && m.path == self->exe_path) exe = &m;
  }
  ASSERT_NE(exe, nullptr);
  struct stat st;
  ASSERT_EQ(stat(exe->path.c_str(), &st), 0);
  EXPECT_EQ(exe->file_size, static_cast<uint64_t>(st.st_size));
  EXPECT_EQ(exe->file_mtime_ns, int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec);

  BinaryFiles files{ProcFs()};
  const uint64_t before = ElfFilesOpened();
  {
    BinaryFiles::Scope scope(&files);
    auto a = files.Open(self->pid, *exe);
    auto b = files.Open(self->pid, *exe);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->get(), b->get());
    EXPECT_FALSE((*a)->BuildId().empty());
    files.CountKnown(self->mappings);
  }
  EXPECT_EQ(ElfFilesOpened() - before, 1u);
  EXPECT_EQ(files.stats().opened, 1u);
  EXPECT_EQ(files.stats().shared, 1u);
  EXPECT_GT(files.stats().known, 0u);  // the other libraries: no reader asked for them
  // Outside a scope every open is its own.
  ASSERT_TRUE(files.Open(self->pid, *exe).ok());
  EXPECT_EQ(ElfFilesOpened() - before, 2u);
}

// The [vdso] is read whole once per distinct image: another process mapping
// the same image (at another address) costs a read of its ELF header.
TEST(BinaryFilesTest, VdsoImageIsReadOncePerImage) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    execl("/bin/sleep", "sleep", "30", nullptr);
    _exit(127);
  }
  ProcessTable table{ProcFs()};
  BinaryFiles files{ProcFs()};
  std::shared_ptr<const std::string> images[2];
  const uint32_t pids[2] = {static_cast<uint32_t>(getpid()), static_cast<uint32_t>(child)};
  for (int i = 0; i < 2; ++i) {
    const ProcessInfo* info = nullptr;
    for (int tries = 0; tries < 200; ++tries) {  // until the child has exec'd
      info = table.OnMapsChanged(pids[i]);
      if (info != nullptr && (i == 0 || info->exe_path == "/usr/bin/sleep" || info->exe_path == "/bin/sleep")) break;
      usleep(10000);
    }
    ASSERT_NE(info, nullptr);
    const MemoryMapping* vdso = nullptr;
    for (const MemoryMapping& m : info->mappings) {
      if (m.path == "[vdso]") vdso = &m;
    }
    ASSERT_NE(vdso, nullptr);
    images[i] = files.VdsoImage(pids[i], *vdso);
    ASSERT_NE(images[i], nullptr);
    EXPECT_EQ(images[i]->size(), vdso->end - vdso->start);
    EXPECT_EQ(images[i]->compare(0, 4, "\x7f" "ELF"), 0);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(images[0], images[1]);  // the same image, handed back
  EXPECT_EQ(files.stats().vdso_reads, 1u);
}

TEST(SymbolizerKernelTest, RealKallsyms) {
  Symbolizer s{ProcFs()};
  Status init = s.Init();
  if (init.code() == StatusCode::kFailedPrecondition) GTEST_SKIP() << init.ToString();
  ASSERT_TRUE(init.ok()) << init.ToString();

  StatusOr<std::string> text = ReadFileToString("/proc/kallsyms");
  ASSERT_TRUE(text.ok());
  const size_t pos = text->find(" T schedule\n");
  ASSERT_NE(pos, std::string::npos);
  const uint64_t schedule = strtoull(text->substr(text->rfind('\n', pos) + 1, 16).c_str(), nullptr, 16);

  SymbolizedFrame f = s.SymbolizeKernel(schedule + 1, true);
  EXPECT_TRUE(f.has_mapping);
  EXPECT_TRUE(f.mapping.is_kernel);
  EXPECT_EQ(f.mapping.filename, "[kernel.kallsyms]");
  EXPECT_LE(f.mapping.memory_start, schedule);
  EXPECT_GT(f.mapping.memory_limit, schedule);
  ASSERT_EQ(f.functions.size(), 1u);
  EXPECT_EQ(f.functions[0].name, "schedule");
  EXPECT_EQ(f.address, schedule + 1);

  f = s.SymbolizeKernel(0x1000, false);
  EXPECT_EQ(f.functions[0].name, "[kernel]+0x1000");
  EXPECT_TRUE(f.mapping.is_kernel);

  // A module (or BPF program) symbol, when the running kernel has any.
  for (size_t start = 0, end; start < text->size(); start = end + 1) {
    end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    const std::string line = text->substr(start, end - start);
    const size_t open = line.find("\t[");
    // BPF programs come and go while other tests run; modules stay.
    if (open == std::string::npos || line.find("[bpf]") != std::string::npos || line.size() < 20 ||
        (line[17] != 't' && line[17] != 'T')) {
      continue;
    }
    f = s.SymbolizeKernel(strtoull(line.c_str(), nullptr, 16), false);
    EXPECT_EQ(f.mapping.filename, line.substr(open + 1)) << line;
    break;
  }
  EXPECT_EQ(s.stats().kernel_frames, s.stats().kernel_symbolized + 1);
}

TEST(SymbolizerKernelTest, HiddenAddressesStillNameFrames) {
  const std::string path = "/tmp/ws_hidden_kallsyms." + std::to_string(getpid());
  std::ofstream(path) << "0000000000000000 T _stext\n0000000000000000 t foo\n";
  Symbolizer s{ProcFs(), path};
  Status init = s.Init();
  unlink(path.c_str());
  EXPECT_EQ(init.code(), StatusCode::kFailedPrecondition);
  SymbolizedFrame f = s.SymbolizeKernel(0xffffffff81234567, true);
  EXPECT_EQ(f.functions[0].name, "[kernel]+0xffffffff81234567");
  EXPECT_EQ(f.mapping.filename, "[kernel.kallsyms]");
}

}  // namespace
}  // namespace warpscope
