// End-to-end tests of the .eh_frame unwinder: programs built without frame
// pointers, Debian's python3, and binaries that are deleted or corrupt while
// mapped. Real agent, real BPF; needs root; labelled `bpf`.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "tests/integration/pprof_reader.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

const std::string kAgent = WS_AGENT_BIN;
const std::string kProgs = WS_TESTPROGS_DIR;

class UnwindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root for BPF (CI runs as root)";
    dir_ = MakeTempDir();
  }

  // Records `pid` for `seconds` and returns the decoded profile.
  DecodedProfile Record(pid_t pid, const std::string& seconds, std::vector<std::string> extra = {}) {
    const std::string out = dir_ + "/p" + std::to_string(pid) + ".pb.gz";
    std::vector<std::string> argv = {kAgent, "record", "--pid", std::to_string(pid), "--duration", seconds,
                                     "--output", out, "--top", "0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = RunProcess(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    last_err_ = r.err;
    auto p = ReadPprofFile(out);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? *p : DecodedProfile{};
  }

  std::string dir_;
  std::string last_err_;
};

double Share(const DecodedProfile& p, const std::string& fn) {
  const int64_t total = p.TotalCount();
  return total ? static_cast<double>(p.CountContaining(fn)) / total : 0;
}

// Share of samples whose stacks contain every function in `fns`.
double ShareWithAll(const DecodedProfile& p, const std::vector<std::string>& fns) {
  int64_t n = 0;
  for (const auto& s : p.samples) {
    bool all = true;
    for (const auto& f : fns) all &= s.Contains(f);
    if (all) n += s.count;
  }
  return p.TotalCount() ? static_cast<double>(n) / p.TotalCount() : 0;
}

// The share of a process's samples whose walk ended as `end` (StackEndName:
// root, too_deep, ...), from the pprof comments ("unwind pid=P ... root=N");
// -1 without that process's line.
double EndShare(const DecodedProfile& p, pid_t pid, const std::string& end) {
  const auto& st = p.raw.string_table();
  std::regex line("unwind pid=" + std::to_string(pid) + " comm=\\S* samples=(\\d+).*");
  std::regex count(" " + end + "=(\\d+)");
  for (int64_t c : p.raw.comment()) {
    std::smatch m;
    const std::string text = st[static_cast<int>(c)];
    if (!std::regex_match(text, m, line)) continue;
    const double samples = std::stod(m[1]);
    std::smatch r;
    return std::regex_search(text, r, count) ? std::stod(r[1]) / samples : 0;
  }
  return -1;
}

double RootShare(const DecodedProfile& p, pid_t pid) { return EndShare(p, pid, "root"); }

TEST_F(UnwindTest, CProgramWithoutFramePointersUnwindsToMain) {
  pid_t prog = StartProcess({kProgs + "/unwind_c", "6"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  DecodedProfile p = Record(prog, "4");
  WaitProcess(prog);
  printf("unwind_c: %lld samples, main %.4f, root %.4f, recursion %.3f, qsort %.3f, shlib %.3f\n",
         static_cast<long long>(p.TotalCount()), Share(p, "main"), RootShare(p, prog),
         ShareWithAll(p, {"recurse", "main"}), ShareWithAll(p, {"compare_slowly", "sort_things", "main"}),
         ShareWithAll(p, {"lib_callback", "unwind_lib_apply", "through_library", "main"}));
  ASSERT_GT(p.TotalCount(), 200);
  EXPECT_GE(Share(p, "main"), 0.99);
  EXPECT_GE(RootShare(p, prog), 0.99);
  // Each path shows its whole chain, through libc's qsort and through the shared library.
  EXPECT_GT(ShareWithAll(p, {"recurse", "main"}), 0.05);
  EXPECT_GT(ShareWithAll(p, {"compare_slowly", "sort_things", "main"}), 0.05);
  EXPECT_GT(ShareWithAll(p, {"lib_callback", "unwind_lib_apply", "through_library", "main"}), 0.05);
  // 60 levels of recursion are all there.
  for (const auto& s : p.samples) {
    if (!s.Contains("burn") || !s.Contains("recurse")) continue;
    int depth = 0;
    for (const auto& f : s.frames) depth += f.function == "recurse";
    EXPECT_EQ(depth, 61);
  }
}

TEST_F(UnwindTest, FramePointerWalkIsWorseOnTheSameProgram) {
  // The comparison that shows the unwinder is doing the work.
  pid_t prog = StartProcess({kProgs + "/unwind_c", "4"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  DecodedProfile p = Record(prog, "2", {"--frame-pointers"});
  WaitProcess(prog);
  printf("unwind_c with --frame-pointers: main %.3f\n", Share(p, "main"));
  EXPECT_LT(Share(p, "main"), 0.9);
}

TEST_F(UnwindTest, CppProgramWithoutFramePointersUnwindsToMain) {
  pid_t prog = StartProcess({kProgs + "/unwind_cpp", "5"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  DecodedProfile p = Record(prog, "3");
  WaitProcess(prog);
  printf("unwind_cpp: %lld samples, main %.4f, root %.4f\n", static_cast<long long>(p.TotalCount()),
         Share(p, "main"), RootShare(p, prog));
  ASSERT_GT(p.TotalCount(), 150);
  EXPECT_GE(Share(p, "main"), 0.99);
  EXPECT_GE(RootShare(p, prog), 0.99);
  EXPECT_GT(ShareWithAll(p, {"workload::Square::Area(unsigned long) const", "main"}), 0.05);
}

// A recursion 200 deep: both drivers fill every frame slot the unwinder has
// (WS_MAX_STACK_FRAMES, 128), the tail-call one across its chain of programs,
// and say the stack was cut.
TEST_F(UnwindTest, DeepStacksFillEveryFrameWithEitherDriver) {
  for (const std::string driver : {"bpf_loop", "tail_call"}) {
    pid_t prog = StartProcess({kProgs + "/unwind_cpp", "4", "200"});
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    DecodedProfile p = Record(prog, "2", {"--unwinder-driver", driver});
    WaitProcess(prog);
    int64_t deep = 0, in_recurse = 0;
    size_t deepest = 0;
    for (const auto& s : p.samples) {
      if (!s.Contains("workload::Square::Area(unsigned long) const")) continue;
      in_recurse += s.count;
      size_t user = 0;
      for (const auto& f : s.frames) user += f.function.find("Recurse") != std::string::npos ||
                                             f.function.find("Area") != std::string::npos ||
                                             f.function.find("Burn") != std::string::npos;
      deepest = std::max(deepest, user);
      if (user >= 128) deep += s.count;
    }
    const double too_deep = EndShare(p, prog, "too_deep");
    printf("%s: %lld samples in the recursion, %lld with 128 frames, deepest %zu; too_deep %.3f of %lld\n",
           driver.c_str(), static_cast<long long>(in_recurse), static_cast<long long>(deep), deepest, too_deep,
           static_cast<long long>(p.TotalCount()));
    ASSERT_GT(in_recurse, 50) << driver;
    EXPECT_GE(static_cast<double>(deep) / in_recurse, 0.95) << driver;
    EXPECT_EQ(deepest, 128u) << driver;
    // Every stack in the recursion is cut, and said to be.
    EXPECT_GE(too_deep, 0.95 * static_cast<double>(in_recurse) / static_cast<double>(p.TotalCount())) << driver;
  }
}

TEST_F(UnwindTest, DebianPython3UnwindsToInterpreterMain) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "/usr/bin/python3 not installed";
  pid_t prog = StartProcess({"/usr/bin/python3", "-c",
                             "import time\nend = time.time() + 5\nx = 0\nwhile time.time() < end:\n    x += 1\n"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  DecodedProfile p = Record(prog, "3");
  WaitProcess(prog);
  // Debian's python3 is stripped: main itself has no symbol, but Py_BytesMain
  // (exported) is its callee and __libc_start_call_main (libc6-dbg) its caller.
  printf("python3: %lld samples, Py_BytesMain %.4f, root %.4f\n", static_cast<long long>(p.TotalCount()),
         Share(p, "Py_BytesMain"), RootShare(p, prog));
  ASSERT_GT(p.TotalCount(), 150);
  EXPECT_GE(RootShare(p, prog), 0.99);
  EXPECT_GE(Share(p, "Py_BytesMain"), 0.99);
}

TEST_F(UnwindTest, LibraryLoadedLaterGetsATable) {
  pid_t prog = StartProcess({kProgs + "/dlopen_late", "1", "4"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  DecodedProfile p = Record(prog, "5");
  WaitProcess(prog);
  const double through_lib = ShareWithAll(p, {"late_burn", "unwind_lib_apply", "main", "_start"});
  printf("dlopen_late: %lld samples, whole stacks through the dlopen'ed library %.3f, root %.3f\n",
         static_cast<long long>(p.TotalCount()), through_lib, RootShare(p, prog));
  // About 3/4 of the time is spent through the library; at most the first
  // drain interval after dlopen may miss its table.
  EXPECT_GT(through_lib, 0.5);
  EXPECT_GE(RootShare(p, prog), 0.7);  // without the late table it would be about 0.25
}

TEST_F(UnwindTest, StacksCrossSignalFrames) {
  pid_t prog = StartProcess({kProgs + "/signal_handler", "5"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  DecodedProfile p = Record(prog, "3");
  WaitProcess(prog);
  int64_t in_handler = 0, whole = 0;
  for (const auto& s : p.samples) {
    if (!s.Contains("handler_work")) continue;
    in_handler += s.count;
    if (s.Contains("on_signal") && s.Contains("main") && s.Contains("_start")) whole += s.count;
  }
  printf("signal_handler: %lld samples, %lld in the handler, %lld of those whole through the signal frame\n",
         static_cast<long long>(p.TotalCount()), static_cast<long long>(in_handler), static_cast<long long>(whole));
  ASSERT_GT(in_handler, 10);
  EXPECT_GE(static_cast<double>(whole) / in_handler, 0.95);
  EXPECT_GE(RootShare(p, prog), 0.99);
}

TEST_F(UnwindTest, ExecutableDeletedWhileMapped) {
  const std::string copy = dir_ + "/unwind_c_copy";
  ASSERT_EQ(RunProcess({"/bin/cp", kProgs + "/unwind_c", copy}).exit_code, 0);
  pid_t prog = StartProcess({copy, "4", "recursion"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(unlink(copy.c_str()), 0);
  DecodedProfile p = Record(prog, "2");
  WaitProcess(prog);
  printf("deleted executable: main %.4f\n", Share(p, "main"));
  EXPECT_GE(Share(p, "main"), 0.99) << "tables come from /proc/PID/map_files";
}

TEST_F(UnwindTest, CorruptUnwindInfoFallsBackWithoutCrashing) {
  // A copy of the program whose .eh_frame bytes are garbage: it still runs
  // (nothing throws), the agent must neither crash nor hang on it.
  const std::string copy = dir_ + "/unwind_c_corrupt";
  ASSERT_EQ(RunProcess({"/bin/cp", kProgs + "/unwind_c", copy}).exit_code, 0);
  auto sections = RunProcess({"/usr/bin/readelf", "-SW", copy});
  std::smatch m;
  std::regex eh("\\.eh_frame\\s+PROGBITS\\s+[0-9a-f]+\\s+([0-9a-f]+)\\s+([0-9a-f]+)");
  ASSERT_TRUE(std::regex_search(sections.out, m, eh)) << sections.out;
  const long offset = std::stol(m[1], nullptr, 16), size = std::stol(m[2], nullptr, 16);
  {
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(offset);
    uint32_t seed = 12345;
    for (long i = 0; i < size; ++i) {
      seed = seed * 1103515245 + 12345;
      f.put(static_cast<char>(seed >> 16));
    }
  }
  chmod(copy.c_str(), 0755);
  pid_t prog = StartProcess({copy, "3", "recursion"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  DecodedProfile p = Record(prog, "1");
  WaitProcess(prog);
  EXPECT_GT(p.TotalCount(), 30) << "samples are still recorded";
}

// The counters the agent writes into the profile's comments ("name=value").
std::map<std::string, uint64_t> CountersOf(const DecodedProfile& p) {
  std::map<std::string, uint64_t> counters;
  const auto& st = p.raw.string_table();
  for (int64_t c : p.raw.comment()) {
    const std::string text = st[static_cast<int>(c)];
    const size_t eq = text.find('=');
    if (eq != std::string::npos && text.find(' ') == std::string::npos) {
      counters[text.substr(0, eq)] = std::strtoull(text.c_str() + eq + 1, nullptr, 10);
    }
  }
  return counters;
}

TEST_F(UnwindTest, ProcessesExitingDuringTableLoadDoNotHurt) {
  const std::string out = dir_ + "/churn.pb.gz";
  pid_t agent = StartProcess({kAgent, "record", "--all", "--duration", "9", "--output", out});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // Many short-lived processes, several at a time: some exit while their
  // tables are being built. All are gone well before the recording ends, so
  // their exits are processed and the tables only they used go idle. Each
  // burns ~30 ms beyond the interpreter's start-up, so that on a loaded CI
  // machine enough of them are still on a CPU when sampled to be described
  // ("pass" alone let a CI run describe only 15).
  // First a few one after another, with a pause after each for its exit
  // to be processed: on a loaded machine the churn below may keep one
  // python3 alive at every moment, and then no table is ever idle to take
  // back.
  // Each runs ~0.3 s, long enough to be sampled on a loaded machine.
  for (int i = 0; i < 3; ++i) {
    WaitProcess(StartProcess({"/usr/bin/python3", "-c", "sum(range(10000000))"}));
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  std::vector<std::thread> waiters;
  for (int i = 0; i < 150; ++i) {
    pid_t p = StartProcess({"/usr/bin/python3", "-c", "sum(range(1000000))"});
    if (i % 10 == 0) {
      WaitProcess(p);
    } else {
      waiters.emplace_back([p] { WaitProcess(p); });
    }
  }
  for (auto& t : waiters) t.join();
  EXPECT_EQ(WaitProcess(agent), 0);
  auto p = ReadPprofFile(out);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::map<std::string, uint64_t> counters = CountersOf(*p);
  printf("churn: %llu processes described, %llu tables built, %llu taken back from idle\n",
         static_cast<unsigned long long>(counters["unwind_processes_described"]),
         static_cast<unsigned long long>(counters["unwind_tables_built"]),
         static_cast<unsigned long long>(counters["unwind_tables_reused"]));
  EXPECT_GT(counters["unwind_processes_described"], 20u);
  // python3's table outlives each process and the next one takes it back.
  // (Absolute table counts are not checked: they count every process on the
  // machine, and ctest -j2 runs another test beside this one.)
  EXPECT_GT(counters["unwind_tables_reused"], 0u);
}

// 100 short-lived processes of one binary, never two of them alive at once:
// the binary's table is built for the first, kept idle between them and
// taken back by each next one, and the file is not read again.
TEST_F(UnwindTest, ShortLivedProcessesOfOneBinaryBuildItsTableOnce) {
  // A copy of its own: no other process on the machine maps this file.
  const std::string binary = dir_ + "/short_lived_once";
  ASSERT_EQ(RunProcess({"/bin/cp", kProgs + "/short_lived", binary}).exit_code, 0);
  const std::string out = dir_ + "/once.pb.gz";
  const std::string log = dir_ + "/once.log";
  pid_t agent = StartProcess({kAgent, "record", "--all", "--frequency", "199", "--duration", "7", "--output", out,
                              "--top", "0", "--verbose"},
                             log);
  // Sampling has started once the agent says it records.
  for (int i = 0; i < 200; ++i) {
    std::ifstream started(log);
    const std::string text((std::istreambuf_iterator<char>(started)), std::istreambuf_iterator<char>());
    if (text.find("warpscope-agent: recording") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (int i = 0; i < 100; ++i) WaitProcess(StartProcess({binary, "0.04"}));
  EXPECT_EQ(WaitProcess(agent), 0);
  auto p = ReadPprofFile(out);
  ASSERT_TRUE(p.ok()) << p.status().ToString();

  // Most of them were sampled, described and unwound to main() from their table.
  std::set<std::string> pids, whole;
  for (const auto& sample : p->samples) {
    auto pid = sample.labels.find("pid");
    if (!sample.Contains("short_lived_work") || pid == sample.labels.end()) continue;
    pids.insert(pid->second);
    if (sample.Contains("main")) whole.insert(pid->second);
  }
  std::ifstream in(log);
  std::string line;
  int builds = 0;
  while (std::getline(in, line)) builds += line.find("built the table of " + binary + " ") != std::string::npos;
  printf("one binary: %zu processes sampled, %zu with whole stacks, its table built %d time(s)\n", pids.size(),
         whole.size(), builds);
  EXPECT_GE(pids.size(), 50u);
  EXPECT_GE(whole.size(), pids.size() * 9 / 10);
  EXPECT_EQ(builds, 1);
}

}  // namespace
}  // namespace warpscope::testing

namespace warpscope::testing {
namespace {

TEST_F(UnwindTest, UprobeStacksUseTheSameUnwinder) {
  // The entry point GPU launch stacks will use: a uprobe on a libc function
  // called from code without frame pointers.
  pid_t prog = StartProcess({kProgs + "/unwind_c", "5", "qsort"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::string libc;
  for (const char* candidate : {"/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"}) {
    if (access(candidate, R_OK) == 0) {
      libc = candidate;
      break;
    }
  }
  ASSERT_FALSE(libc.empty());
  auto r = RunProcess({kAgent, "probe-stack", "--pid", std::to_string(prog), "--uprobe", libc + ":qsort",
                       "--duration", "2s", "--top", "1"});
  WaitProcess(prog);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  printf("%s", r.out.c_str());
  EXPECT_NE(r.out.find("0 dropped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stack ends: root="), std::string::npos) << "every stack reached its root:\n" << r.out;
  for (const char* fn : {"#0 qsort", "sort_things", "main", "_start"}) {
    EXPECT_NE(r.out.find(fn), std::string::npos) << fn << " missing:\n" << r.out;
  }
}

#ifdef WS_CUDA_LIBRARY_PATH
// Launch stacks for GPU time (docs/design/gpu_time.md): the uprobe on libwarpscope_cuda.so's
// probe function sees the probe's arguments (correlation id, launch kind,
// graph exec id) and the whole stack of the code that launched.
TEST_F(UnwindTest, UprobeOnTheCudaLaunchProbeSeesItsArgumentsAndCaller) {
  pid_t prog = StartProcess({kProgs + "/cuda_probe_caller", WS_CUDA_LIBRARY_PATH, "4"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto r = RunProcess({kAgent, "probe-stack", "--pid", std::to_string(prog), "--uprobe",
                       std::string(WS_CUDA_LIBRARY_PATH) + ":warpscope_cuda_launch_probe", "--duration", "2s", "--top",
                       "1"});
  WaitProcess(prog);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  printf("%s", r.out.c_str());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(warpscope_cuda_launch_probe: (\d+) calls, (\d+) stacks)")))
      << r.out;
  EXPECT_GT(std::stoull(m[1]), 200u) << "about 1,000 calls/s for 2 s";
  EXPECT_EQ(m[1], m[2]) << "every call captured";
  // Correlation ids count up from 1000 (the agent attached a little after the start).
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(arguments of the first calls: \((\d+), 1, 77\) \((\d+), 1, 77\))")))
      << r.out;
  EXPECT_GE(std::stoull(m[1]), 1000u);
  EXPECT_EQ(std::stoull(m[2]), std::stoull(m[1]) + 1);
  EXPECT_NE(r.out.find("stack ends: root="), std::string::npos) << r.out;
  for (const char* fn : {"#0 warpscope_cuda_launch_probe", "enqueue_kernel", "training_step", "main"}) {
    EXPECT_NE(r.out.find(fn), std::string::npos) << fn << " missing:\n" << r.out;
  }
}
#endif

}  // namespace
}  // namespace warpscope::testing
