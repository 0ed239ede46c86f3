// End-to-end tests of the CPython unwinder: the real agent records real
// interpreters running tests/testprogs/python/workload.py, and the profile must
// show each Python function's qualified name and line, in true order among
// the native frames. Needs root (CI runs as root); labelled `bpf`.
//
// Interpreters: Debian's /usr/bin/python3 always (the test fails without it),
// a virtualenv copy of it, plus pyenv's 3.10-3.13 where installed; WS_TEST_PYTHONS (colon-separated)
// replaces the list. WS_AGENT_BIN and WS_PYTHON_WORKLOAD override the built-in
// paths (to run the built test on another machine, e.g. the GPU host).
#include <gtest/gtest.h>
#include <glob.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/pprof_reader.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

const std::string kAgent = EnvOr("WS_AGENT_BIN", WS_AGENT_BIN);
const std::string kWorkload = EnvOr("WS_PYTHON_WORKLOAD", WS_PYTHON_WORKLOAD);

struct Interpreter {
  std::string path;
  int minor = 0;  // of 3.x
};

// A virtualenv made with --copies: its python3 is a copy at a path that names
// no version (detection must read the binary). Made once per test process.
std::string CopiedVirtualenv() {
  static const std::string python = [] {
    const std::string dir = MakeTempDir() + "/venv";
    ProcessResult r = RunProcess({"/usr/bin/python3", "-m", "venv", "--without-pip", "--copies", dir}, 60);
    return r.exit_code == 0 ? dir + "/bin/python3" : std::string();
  }();
  return python;
}

std::vector<Interpreter> Interpreters() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("WS_TEST_PYTHONS"); env && *env) {
    std::stringstream ss(env);
    for (std::string p; std::getline(ss, p, ':');) {
      if (!p.empty()) paths.push_back(p);
    }
  } else {
    paths.push_back("/usr/bin/python3");
    if (std::string venv = CopiedVirtualenv(); !venv.empty()) paths.push_back(venv);
    for (const char* pattern : {"/root/.pyenv/versions/3.10.*/bin/python3.10", "/root/.pyenv/versions/3.11.*/bin/python3.11",
                                "/root/.pyenv/versions/3.12.*/bin/python3.12", "/root/.pyenv/versions/3.13.*/bin/python3.13"}) {
      glob_t g{};
      if (glob(pattern, 0, nullptr, &g) == 0 && g.gl_pathc > 0) paths.push_back(g.gl_pathv[g.gl_pathc - 1]);
      globfree(&g);
    }
  }
  std::vector<Interpreter> out;
  for (const std::string& p : paths) {
    ProcessResult r = RunProcess({p, "-c", "import sys; print(sys.version_info[1])"}, 30);
    Interpreter i{p, r.exit_code == 0 ? std::atoi(r.out.c_str()) : -1};
    out.push_back(i);
  }
  return out;
}

// "# LINE:name" markers of the workload -> line numbers.
std::map<std::string, int64_t> Markers() {
  std::map<std::string, int64_t> lines;
  std::ifstream in(kWorkload);
  std::string line;
  static const std::regex kMarker(R"(# LINE:(\w+))");
  for (int64_t n = 1; std::getline(in, line); ++n) {
    std::smatch m;
    if (std::regex_search(line, m, kMarker)) lines[m[1]] = n;
  }
  return lines;
}

bool IsPython(const DecodedFrame& f) { return f.mapping.empty() && !f.kernel && !f.filename.empty(); }
bool IsWorkload(const DecodedFrame& f) { return IsPython(f) && f.filename == kWorkload; }

// The sample's workload frames, leaf first.
std::vector<const DecodedFrame*> WorkloadFrames(const DecodedSample& s) {
  std::vector<const DecodedFrame*> out;
  for (const DecodedFrame& f : s.frames) {
    if (IsWorkload(f)) out.push_back(&f);
  }
  return out;
}

class PythonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root for BPF (CI runs as root)";
    dir_ = MakeTempDir();
    markers_ = Markers();
    ASSERT_FALSE(markers_.empty()) << "cannot read " << kWorkload;
    interpreters_ = Interpreters();
    ASSERT_FALSE(interpreters_.empty());
  }

  // Runs the workload in `mode` under every interpreter at once (those
  // `wanted` picks) and records them all in one agent run: one recording
  // instead of one per interpreter keeps the suite short, and the shares
  // asserted are within each process, which sharing the CPUs leaves alone.
  // pids[i] is interpreters_[i]'s process, 0 where not wanted.
  DecodedProfile RecordAll(const std::string& mode, std::vector<pid_t>* pids,
                           bool (*wanted)(const Interpreter&) = nullptr) {
    std::string pid_list;
    pids->assign(interpreters_.size(), 0);
    for (size_t i = 0; i < interpreters_.size(); ++i) {
      if (wanted != nullptr && !wanted(interpreters_[i])) continue;
      // Far longer than the recording: they start one after another on a busy machine and are killed after it.
      (*pids)[i] = StartProcess({interpreters_[i].path, kWorkload, mode, "60"}, "/dev/null",
                                dir_ + "/" + mode + std::to_string(i) + ".out");
      pid_list += (pid_list.empty() ? "" : ",") + std::to_string((*pids)[i]);
    }
    for (size_t i = 0; i < interpreters_.size(); ++i) {
      if ((*pids)[i] == 0) continue;
      EXPECT_TRUE(WaitForFileText(dir_ + "/" + mode + std::to_string(i) + ".out", "ready", 60))
          << interpreters_[i].path << " did not start its " << mode << " workload";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const std::string out = dir_ + "/" + mode + ".pb.gz";
    ProcessResult r = RunProcess({kAgent, "record", "--pid", pid_list, "--duration", "4s", "--frequency", "499",
                                  "--top", "0", "--output", out});
    for (pid_t pid : *pids) {
      if (pid == 0) continue;
      kill(pid, SIGKILL);
      WaitProcess(pid);
    }
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto p = ReadPprofFile(out);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? std::move(p).value() : DecodedProfile{};
  }

  std::string Name(const Interpreter& py, const std::string& qualname) const {
    if (py.minor >= 11) return qualname;
    const size_t dot = qualname.rfind('.');
    return dot == std::string::npos ? qualname : qualname.substr(dot + 1);  // 3.10 has only co_name
  }

  std::string dir_;
  std::map<std::string, int64_t> markers_;
  std::vector<Interpreter> interpreters_;
};

TEST_F(PythonTest, DebianPython3IsTested) {
  ASSERT_EQ(access("/usr/bin/python3", X_OK), 0) << "Debian's python3 is required (scripts/debian-packages.txt)";
  if (std::getenv("WS_TEST_PYTHONS") == nullptr) {
    EXPECT_FALSE(CopiedVirtualenv().empty()) << "python3 -m venv failed (python3-venv, scripts/debian-packages.txt)";
  }
}

// Nested functions with a known 3:1 CPU split: names, lines, order, shares.
TEST_F(PythonTest, NestedFunctionsNamesLinesOrderAndShares) {
  std::vector<pid_t> pids;
  const DecodedProfile p = RecordAll("split", &pids);
  for (size_t i = 0; i < interpreters_.size(); ++i) {
    const Interpreter& py = interpreters_[i];
    SCOPED_TRACE(py.path);
    const pid_t pid = pids[i];
    const std::string spid = std::to_string(pid);
    const int64_t total = p.TotalCount(spid);
    const std::string hot = Name(py, "Pipeline.hot"), cold = Name(py, "Pipeline.cold");
    const std::string middle = Name(py, "Pipeline.middle");
    int64_t hot_n = 0, cold_n = 0, ordered = 0, interleaved = 0;
    for (const DecodedSample& s : p.ForPid(spid)) {
      const auto frames = WorkloadFrames(s);
      if (frames.empty()) continue;
      if (frames[0]->function == hot) hot_n += s.count;
      if (frames[0]->function == cold) cold_n += s.count;
      // Leaf first: hot, middle, outer, run_split, main, <module>, with the call lines.
      if (frames.size() == 6 && frames[0]->function == hot && frames[1]->function == middle &&
          frames[1]->line == markers_["middle_calls_hot"] && frames[2]->function == "outer" &&
          frames[2]->line == markers_["outer_calls_middle"] && frames[3]->function == "run_split" &&
          frames[3]->line == markers_["run_split_calls_outer"] && frames[4]->function == "main" &&
          frames[4]->line == markers_["main"] && frames[5]->function == "<module>" &&
          frames[5]->line == markers_["module"] && frames[0]->line >= markers_["hot_loop"] - 2 &&
          frames[0]->line <= markers_["hot_body"] + 1) {
        ordered += s.count;
      }
      // Python frames sit inside the native stack: the interpreter's own native
      // frames (Py_RunMain, main, ...) remain below <module>.
      auto module = std::find_if(s.frames.begin(), s.frames.end(),
                                 [](const DecodedFrame& f) { return f.function == "<module>"; });
      if (module != s.frames.end() &&
          std::any_of(module + 1, s.frames.end(), [](const DecodedFrame& f) { return !IsPython(f) && !f.kernel; })) {
        interleaved += s.count;
      }
    }
    const double hot_share = total ? static_cast<double>(hot_n) / total : 0;
    const double cold_share = total ? static_cast<double>(cold_n) / total : 0;
    printf("%s split: %lld samples, %s %.3f, %s %.3f, full ordered stack with lines %.3f of hot, native below "
           "<module> %.3f\n",
           py.path.c_str(), static_cast<long long>(total), hot.c_str(), hot_share, cold.c_str(), cold_share,
           hot_n ? static_cast<double>(ordered) / hot_n : 0, total ? static_cast<double>(interleaved) / total : 0);
    EXPECT_GT(total, 400);
    EXPECT_NEAR(hot_share, 0.75, 0.05);
    EXPECT_NEAR(cold_share, 0.25, 0.05);
    EXPECT_GE(ordered, hot_n * 95 / 100) << "hot samples with the whole stack, in order, with call lines";
    EXPECT_GE(interleaved, total * 95 / 100);
  }
}

// A thread pool: each worker thread's Python stack, down to threading's bootstrap.
TEST_F(PythonTest, ThreadPoolShowsEachThreadsStack) {
  std::vector<pid_t> pids;
  const DecodedProfile p = RecordAll("threads", &pids);
  for (size_t i = 0; i < interpreters_.size(); ++i) {
    const Interpreter& py = interpreters_[i];
    SCOPED_TRACE(py.path);
    const pid_t pid = pids[i];
    const std::string spid = std::to_string(pid);
    const int64_t total = p.TotalCount(spid);
    const std::string bootstrap = Name(py, "Thread._bootstrap");
    std::map<std::string, std::map<std::string, int64_t>> by_task_tid;  // task -> tid -> samples
    std::map<std::string, int64_t> whole;  // task -> samples whose stack reaches Thread._bootstrap
    for (const DecodedSample& s : p.ForPid(spid)) {
      const auto frames = WorkloadFrames(s);
      if (frames.size() < 2 || frames[0]->function != "spin_until") continue;
      const std::string task = frames[1]->function;
      by_task_tid[task][s.labels.count("tid") ? s.labels.at("tid") : "?"] += s.count;
      if (s.Contains(bootstrap) && s.Contains("_worker") && frames.size() == 2) whole[task] += s.count;
    }
    for (const std::string task : {"task_alpha", "task_beta", "task_gamma"}) {
      int64_t n = 0, best = 0;
      std::string best_tid;
      for (const auto& [tid, c] : by_task_tid[task]) {
        n += c;
        if (c > best) best = c, best_tid = tid;
      }
      printf("%s threads: %s %lld samples (%.3f of %lld), on tid %s %.3f, reaching %s %.3f\n", py.path.c_str(),
             task.c_str(), static_cast<long long>(n), total ? static_cast<double>(n) / total : 0,
             static_cast<long long>(total), best_tid.c_str(), n ? static_cast<double>(best) / n : 0,
             bootstrap.c_str(), n ? static_cast<double>(whole[task]) / n : 0);
      EXPECT_GT(n, total / 6) << task;
      EXPECT_GE(best, n * 9 / 10) << task << " runs on one pool thread";
      EXPECT_NE(best_tid, spid) << task << " runs on a pool thread, not the main thread";
      EXPECT_GE(whole[task], n * 9 / 10) << task << ": stack down to " << bootstrap;
    }
  }
}

// zlib.compress in a loop: libz's native frames leafward of the Python caller, never the reverse.
TEST_F(PythonTest, CExtensionCallShowsPythonThenNativeFrames) {
  std::vector<pid_t> pids;
  const DecodedProfile p = RecordAll("zlib", &pids);
  for (size_t i = 0; i < interpreters_.size(); ++i) {
    const Interpreter& py = interpreters_[i];
    SCOPED_TRACE(py.path);
    const pid_t pid = pids[i];
    const std::string spid = std::to_string(pid);
    const int64_t total = p.TotalCount(spid);
    int64_t in_loop = 0, through_libz = 0, misordered = 0;
    for (const DecodedSample& s : p.ForPid(spid)) {
      int first_py = -1, last_libz = -1, compress = -1;
      for (int i = 0; i < static_cast<int>(s.frames.size()); ++i) {
        const DecodedFrame& f = s.frames[i];
        if (IsPython(f) && first_py < 0) first_py = i;
        if (f.mapping.find("libz.so") != std::string::npos) last_libz = i;
        if (IsWorkload(f) && f.function == "compress_loop" && compress < 0) compress = i;
      }
      if (compress < 0) continue;
      in_loop += s.count;
      if (last_libz >= 0 && last_libz < compress && first_py == compress &&
          s.frames[compress].line == markers_["compress_call"]) {
        through_libz += s.count;
      }
      if (last_libz >= 0 && first_py >= 0 && first_py < last_libz) misordered += s.count;
    }
    printf("%s zlib: %lld samples, in compress_loop %.3f, libz frames then compress_loop at the call line %.3f, "
           "misordered %lld\n",
           py.path.c_str(), static_cast<long long>(total), total ? static_cast<double>(in_loop) / total : 0,
           in_loop ? static_cast<double>(through_libz) / in_loop : 0, static_cast<long long>(misordered));
    EXPECT_GE(in_loop, total * 9 / 10);
    EXPECT_GE(through_libz, in_loop * 7 / 10);
    EXPECT_EQ(misordered, 0);
  }
}

// 30 Python frames: all of them, in order, each calling line right (3.11+:
// Python calls do not nest the evaluation loop, so the stack fits; 3.10 stacks
// this deep are truncated).
TEST_F(PythonTest, ThirtyPythonFramesAreWhole) {
  std::vector<pid_t> pids;
  const DecodedProfile p = RecordAll("deep", &pids, [](const Interpreter& py) { return py.minor >= 11; });
  for (size_t i = 0; i < interpreters_.size(); ++i) {
    const Interpreter& py = interpreters_[i];
    if (pids[i] == 0) continue;
    SCOPED_TRACE(py.path);
    const pid_t pid = pids[i];
    const std::string spid = std::to_string(pid);
    int64_t total = 0, whole = 0;
    for (const DecodedSample& s : p.ForPid(spid)) {
      total += s.count;
      const auto frames = WorkloadFrames(s);
      if (frames.size() != 30 || frames[0]->function != "spin_until" || frames[29]->function != "<module>") continue;
      bool chain = true;  // frames[1..26] are d26 ... d01, leaf first
      for (int i = 1; i <= 26; ++i) {
        char name[8];
        snprintf(name, sizeof(name), "d%02d", 27 - i);
        chain = chain && frames[i]->function == name;
      }
      if (chain && frames[27]->function == "run_deep" && frames[26]->line == frames[25]->line - 4) whole += s.count;
    }
    printf("%s deep: %lld samples, all 30 Python frames %.3f\n", py.path.c_str(), static_cast<long long>(total),
           total ? static_cast<double>(whole) / total : 0);
    EXPECT_GE(whole, total * 95 / 100);
  }
}

}  // namespace
}  // namespace warpscope::testing
