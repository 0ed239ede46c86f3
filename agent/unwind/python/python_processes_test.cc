// Detection and naming against real interpreters: PythonBinary on real ELF
// files, PythonProcesses::Describe/Resolve on live processes (no BPF map: fd -1).
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <memory>
#include <sstream>
#include <string>

#include "agent/process/process_table.h"
#include "agent/unwind/python/python_binary.h"
#include "tests/support/python_interpreters.h"
#include "agent/unwind/python/python_processes.h"
#include "bpf/intf/unwind.h"

namespace warpscope {
namespace {

using testing::ChildProcess;

constexpr char kIdleScript[] = "import sys; print('up', flush=True); sys.stdin.read()";

// A running interpreter (blocked on stdin) and its maps.
struct LivePython {
  std::unique_ptr<ChildProcess> child;
  ProcessTable table{ProcFs()};
  const ProcessInfo* info = nullptr;
};

void StartIdle(const std::string& python, LivePython* live) {
  auto child = ChildProcess::Start({python, "-c", kIdleScript});
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  live->child = std::move(child).value();
  ASSERT_TRUE(live->child->ReadLine(10000).ok());
  live->info = live->table.OnProcessSeen(live->child->pid());
  ASSERT_NE(live->info, nullptr);
}

TEST(PythonBinaryTest, VersionFromFileName) {
  auto v = PythonVersionFromFileName("/usr/lib/x86_64-linux-gnu/libpython3.10.so.1.0");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->major, 3);
  EXPECT_EQ(v->minor, 10);
  v = PythonVersionFromFileName("/opt/venv/bin/python3.12");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->minor, 12);
  v = PythonVersionFromFileName("/usr/lib/libpython3.13t.so");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->minor, 13);
  EXPECT_FALSE(PythonVersionFromFileName("/usr/bin/python3"));
  EXPECT_FALSE(PythonVersionFromFileName("/usr/bin/bash"));
}

TEST(PythonBinaryTest, OnlySupportedVersionsHaveLayouts) {
  for (int minor : {10, 11, 12, 13}) EXPECT_NE(FindPythonLayout({3, minor, 0}), nullptr) << minor;
  for (auto v : {PythonVersion{3, 9, 18}, PythonVersion{3, 14, 0}, PythonVersion{2, 7, 18}}) {
    EXPECT_EQ(FindPythonLayout(v), nullptr) << v.ToString();
  }
}

TEST(PythonBinaryTest, ReadsEveryTestInterpreter) {
  auto pythons = testing::FindTestPythons();
  ASSERT_TRUE(pythons.ok()) << pythons.status().ToString();
  for (const auto& py : *pythons) {
    SCOPED_TRACE(testing::Describe(py));
    // The file holding the runtime: the executable itself or its libpython.
    LivePython live;
    ASSERT_NO_FATAL_FAILURE(StartIdle(py.path, &live));
    PythonProcesses python(-1, ProcFs());
    EXPECT_EQ(python.Describe(*live.info), WS_PROC_PYTHON);
    const PythonVersion* v = python.VersionOf(live.child->pid());
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->minor, py.version.minor);
    // 3.11+ exports Py_Version; 3.10's version comes from the file name (no micro).
    EXPECT_EQ(v->micro, py.version.minor >= 11 ? py.version.micro : -1);
    EXPECT_EQ(python.stats().processes, 1u);
  }
}

TEST(PythonBinaryTest, NonPythonFilesAndProcesses) {
  auto bin = ReadPythonBinary("/bin/true", "/bin/true");
  EXPECT_EQ(bin.status().code(), StatusCode::kNotFound);
  bin = ReadPythonBinary("/etc/hostname", "/etc/hostname");
  EXPECT_FALSE(bin.ok());
  auto child = ChildProcess::Start({"/bin/cat"});
  ASSERT_TRUE(child.ok());
  ProcessTable table{ProcFs()};
  const ProcessInfo* info = table.OnProcessSeen((*child)->pid());
  ASSERT_NE(info, nullptr);
  PythonProcesses python(-1, ProcFs());
  EXPECT_EQ(python.Describe(*info), 0u);
  EXPECT_EQ(python.VersionOf((*child)->pid()), nullptr);
}

// Past its bound, the per-binary cache keeps only what described processes run.
TEST(PythonBinaryTest, BinaryCacheIsBounded) {
  auto pythons = testing::FindTestPythons();
  ASSERT_TRUE(pythons.ok()) << pythons.status().ToString();
  ASSERT_FALSE(pythons->empty());
  LivePython live;
  ASSERT_NO_FATAL_FAILURE(StartIdle(pythons->front().path, &live));
  // A process that is not Python; its line says it has exec'ed (maps read
  // before the exec would still be the test binary's).
  auto shell = ChildProcess::Start({"/bin/sh", "-c", "echo up; read x"});
  ASSERT_TRUE(shell.ok());
  ASSERT_TRUE((*shell)->ReadLine(10000).ok());
  const ProcessInfo* shell_info = live.table.OnProcessSeen((*shell)->pid());
  ASSERT_NE(shell_info, nullptr);

  PythonProcesses python(-1, ProcFs(), /*max_binaries=*/1);
  EXPECT_EQ(python.Describe(*shell_info), 0u);
  EXPECT_EQ(python.Describe(*live.info), WS_PROC_PYTHON);
  EXPECT_EQ(python.binaries_cached(), 2u);  // the shell's "not CPython", and the interpreter's file
  python.EndEpoch();
  EXPECT_EQ(python.binaries_cached(), 1u);  // the interpreter's stays: a process runs it
  EXPECT_NE(python.VersionOf(live.child->pid()), nullptr);
  EXPECT_EQ(python.Describe(*shell_info), 0u);  // asked again, and still the same answer
}

TEST(PythonBinaryTest, UnsupportedVersionGetsNoFlag) {
  const char* old = "/root/.pyenv/versions/3.9.18/bin/python3.9";
  if (access(old, X_OK) != 0) GTEST_SKIP() << "no CPython 3.9 here";
  LivePython live;
  ASSERT_NO_FATAL_FAILURE(StartIdle(old, &live));
  PythonProcesses python(-1, ProcFs());
  EXPECT_EQ(python.Describe(*live.info), 0u);
  EXPECT_EQ(python.stats().unsupported_processes, 1u);
}

// Resolve: a known code object by its address and fingerprint; a wrong
// fingerprint (the address now holds another object) never takes the name.
TEST(PythonProcessesTest, ResolvesByAddressAndFingerprint) {
  auto pythons = testing::FindTestPythons();
  ASSERT_TRUE(pythons.ok());
  const char* script =
      "import sys\n"
      "class K:\n"
      "    def meth(self, a, b):\n"
      "        return a + b\n"
      "c = K.meth.__code__\n"
      "print(id(c), c.co_argcount, c.co_flags, c.co_firstlineno, next(c.co_lines())[2], flush=True)\n"
      "sys.stdin.read()\n";
  for (const auto& py : *pythons) {
    SCOPED_TRACE(testing::Describe(py));
    auto child = ChildProcess::Start({py.path, "-c", script});
    ASSERT_TRUE(child.ok());
    auto line = (*child)->ReadLine(10000);
    ASSERT_TRUE(line.ok());
    unsigned long long addr = 0;
    unsigned argcount = 0, flags = 0, first = 0;
    int line0 = 0;  // the line of instruction 0
    ASSERT_EQ(sscanf(line->c_str(), "%llu %u %u %u %d", &addr, &argcount, &flags, &first, &line0), 5);
    ProcessTable table{ProcFs()};
    const ProcessInfo* info = table.OnProcessSeen((*child)->pid());
    ASSERT_NE(info, nullptr);
    PythonProcesses python(-1, ProcFs());
    ASSERT_EQ(python.Describe(*info), WS_PROC_PYTHON);
    const uint32_t fp = ws_py_fingerprint(argcount, flags, first);
    PythonFrame f = python.Resolve((*child)->pid(), addr, fp, 0);
    EXPECT_TRUE(f.resolved);
    EXPECT_EQ(f.name, py.version.minor >= 11 ? "K.meth" : "meth");
    EXPECT_EQ(f.filename, "<string>");
    EXPECT_EQ(f.line, line0);
    PythonFrame wrong = python.Resolve((*child)->pid(), addr, fp ^ 0x5a5a, 0);
    EXPECT_FALSE(wrong.resolved);
    EXPECT_EQ(wrong.name, "[python: code object unavailable]");
    // Prefetch reads both slots' worth and caches the good one.
    const uint64_t frames[] = {WS_PY_FRAME_TAG | addr, (uint64_t{fp} << 32) | 2};
    python.Prefetch((*child)->pid(), frames, 2);
    EXPECT_GE(python.stats().code_objects_read, 2u);
  }
}

// A code object inside the interpreter's image (3.11 and 3.12 deep-freeze
// the bootstrap modules into its data) is the same in every process of that
// binary: the second process takes it without a read. Code objects on the
// heap are read for each process.
TEST(PythonProcessesTest, StaticCodeObjectsAreSharedAcrossProcesses) {
  auto pythons = testing::FindTestPythons();
  ASSERT_TRUE(pythons.ok());
  const char* script =
      "import sys, importlib._bootstrap as b\n"
      "def f(): pass\n"
      "for c in (b._find_and_load.__code__, f.__code__):\n"
      "    print(id(c), c.co_argcount, c.co_flags, c.co_firstlineno, end=' ')\n"
      "print(flush=True)\n"
      "sys.stdin.read()\n";
  for (const auto& py : *pythons) {
    SCOPED_TRACE(testing::Describe(py));
    PythonProcesses python(-1, ProcFs());
    ProcessTable table{ProcFs()};
    std::unique_ptr<ChildProcess> children[2];
    for (int i = 0; i < 2; ++i) {
      auto child = ChildProcess::Start({py.path, "-c", script});
      ASSERT_TRUE(child.ok());
      children[i] = std::move(child).value();
      auto line = children[i]->ReadLine(10000);
      ASSERT_TRUE(line.ok());
      unsigned long long addr[2] = {};
      unsigned argcount[2] = {}, flags[2] = {}, first[2] = {};
      ASSERT_EQ(sscanf(line->c_str(), "%llu %u %u %u %llu %u %u %u", &addr[0], &argcount[0], &flags[0], &first[0],
                       &addr[1], &argcount[1], &flags[1], &first[1]),
                8);
      const ProcessInfo* info = table.OnProcessSeen(children[i]->pid());
      ASSERT_NE(info, nullptr);
      ASSERT_EQ(python.Describe(*info), WS_PROC_PYTHON);
      const uint64_t read_before = python.stats().code_objects_read;
      const uint64_t shared_before = python.stats().code_objects_shared;
      PythonFrame boot = python.Resolve(children[i]->pid(), addr[0], ws_py_fingerprint(argcount[0], flags[0], first[0]), 0);
      EXPECT_TRUE(boot.resolved);
      EXPECT_EQ(boot.name, "_find_and_load");
      PythonFrame heap = python.Resolve(children[i]->pid(), addr[1], ws_py_fingerprint(argcount[1], flags[1], first[1]), 0);
      EXPECT_TRUE(heap.resolved);
      EXPECT_EQ(heap.name, "f");
      EXPECT_EQ(heap.filename, "<string>");
      const bool deep_frozen = py.version.minor == 11 || py.version.minor == 12;
      const uint64_t shared = python.stats().code_objects_shared - shared_before;
      const uint64_t read = python.stats().code_objects_read - read_before;
      EXPECT_EQ(shared + read, 2u);
      if (i == 0 || !deep_frozen) {
        EXPECT_EQ(shared, 0u) << "only code objects in the image are shared";
      } else {
        EXPECT_EQ(shared, 1u);  // _find_and_load, from the first process; f is read
      }
    }
  }
}

// The code-object caches of all processes stay within their byte budget:
// past it, the process holding the most gives its cache up (counted), and a
// frame of it reads its code object again and still resolves.
TEST(PythonProcessesTest, CodeObjectCachesStayWithinTheirBudget) {
  auto pythons = testing::FindTestPythons();
  ASSERT_TRUE(pythons.ok());
  ASSERT_FALSE(pythons->empty());
  const auto& py = pythons->front();
  const char* script =
      "import sys\n"
      "fs = []\n"
      "for i in range(200):\n"
      "    exec('def f%d(a):\\n    return a + %d\\n' % (i, i))\n"
      "    fs.append(eval('f%d' % i))\n"
      "print(' '.join('%d:%d:%d:%d' % (id(f.__code__), f.__code__.co_argcount, f.__code__.co_flags,\n"
      "                                f.__code__.co_firstlineno) for f in fs), flush=True)\n"
      "sys.stdin.read()\n";
  constexpr size_t kBudget = 16 << 10;  // a few dozen code objects
  PythonProcesses python(-1, ProcFs(), 4096, nullptr, kBudget);
  ProcessTable table{ProcFs()};
  std::vector<std::unique_ptr<ChildProcess>> children;
  std::vector<std::vector<std::array<unsigned long long, 4>>> codes;
  for (int i = 0; i < 2; ++i) {
    auto child = ChildProcess::Start({py.path, "-c", script});
    ASSERT_TRUE(child.ok());
    auto line = (*child)->ReadLine(10000);
    ASSERT_TRUE(line.ok());
    std::vector<std::array<unsigned long long, 4>> mine;
    std::istringstream in(*line);
    std::string item;
    while (in >> item) {
      std::array<unsigned long long, 4> c{};
      ASSERT_EQ(sscanf(item.c_str(), "%llu:%llu:%llu:%llu", &c[0], &c[1], &c[2], &c[3]), 4);
      mine.push_back(c);
    }
    ASSERT_EQ(mine.size(), 200u);
    const ProcessInfo* info = table.OnProcessSeen((*child)->pid());
    ASSERT_NE(info, nullptr);
    ASSERT_EQ(python.Describe(*info), WS_PROC_PYTHON);
    children.push_back(std::move(child).value());
    codes.push_back(std::move(mine));
  }
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < children.size(); ++i) {
      for (const auto& c : codes[i]) {
        const uint32_t fp = ws_py_fingerprint(static_cast<uint32_t>(c[1]), static_cast<uint32_t>(c[2]),
                                              static_cast<uint32_t>(c[3]));
        PythonFrame f = python.Resolve(children[i]->pid(), c[0], fp, 0);
        ASSERT_TRUE(f.resolved);
        ASSERT_EQ(f.name.rfind("f", 0), 0u);
        ASSERT_LE(python.stats().code_bytes, kBudget);
      }
    }
  }
  EXPECT_GT(python.stats().code_bytes, 0u);
  EXPECT_GT(python.stats().code_cache_evictions, 0u);
  EXPECT_GE(python.stats().code_objects_read, 800u) << "given up caches are read again";
}

}  // namespace
}  // namespace warpscope
