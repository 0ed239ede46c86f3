// End-to-end tests of `warpscope-agent record`: the real agent binary, the real
// BPF program in the kernel, and test programs with known answers. Needs root
// (CI runs as root); labelled `bpf` in CTest.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "tests/integration/pprof_reader.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

const std::string kAgent = WS_AGENT_BIN;
const std::string kProgs = WS_TESTPROGS_DIR;

class RecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root for BPF (CI runs as root)";
    dir_ = MakeTempDir();
  }
  std::string dir_;
};

double Share(const DecodedProfile& p, const std::string& fn, const std::string& pid) {
  const int64_t total = p.TotalCount(pid);
  return total ? static_cast<double>(p.CountContaining(fn, pid)) / total : 0;
}

TEST_F(RecordTest, CpuSplitThreeToOneAt99Hz) {
  // 9 s at 99 Hz: ~890 samples put one standard error of a 3/4 share at
  // 1.5 points, so the ±5 point bound is 3.4 errors wide (at 5 s it was 2.6,
  // and CI once saw 0.800).
  pid_t prog = StartProcess({kProgs + "/cpu_split", "11"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::string out = dir_ + "/cpu.pb.gz";
  auto r = RunProcess({kAgent, "record", "--pid", std::to_string(prog), "--duration", "9s", "--frequency", "99",
                       "--top", "40", "--output", out});
  WaitProcess(prog);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("hot_three_quarters"), std::string::npos) << "top functions are printed:\n" << r.out;

  auto p = ReadPprofFile(out);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const std::string pid = std::to_string(prog);
  const int64_t total = p->TotalCount(pid);
  // 9 s at 99 Hz is ~890 samples of one busy thread; a loaded CI machine may give it less CPU.
  EXPECT_GT(total, 550) << "too few samples";
  EXPECT_EQ(total, p->TotalCount()) << "--pid must record only that process";
  const double hot = Share(*p, "hot_three_quarters", pid);
  const double cold = Share(*p, "cold_one_quarter", pid);
  EXPECT_NEAR(hot, 0.75, 0.05) << "hot share";
  EXPECT_NEAR(cold, 0.25, 0.05) << "cold share";
  EXPECT_GE(Share(*p, "main", pid), 0.95) << "main must be in >= 95% of stacks";
  printf("cpu_split: %lld samples, hot %.3f cold %.3f main %.3f\n", static_cast<long long>(total), hot, cold,
         Share(*p, "main", pid));

  // Field checks on the real file: types, period, labels, mappings.
  const auto& raw = p->raw;
  const auto& st = raw.string_table();
  ASSERT_EQ(raw.sample_type_size(), 2);
  EXPECT_EQ(st[raw.sample_type(0).type()], "samples");
  EXPECT_EQ(st[raw.sample_type(0).unit()], "count");
  EXPECT_EQ(st[raw.sample_type(1).type()], "cpu");
  EXPECT_EQ(st[raw.sample_type(1).unit()], "nanoseconds");
  EXPECT_EQ(raw.period(), 1'000'000'000 / 99);
  EXPECT_NEAR(raw.duration_nanos() / 1e9, 9.0, 0.5);
  EXPECT_GT(raw.time_nanos(), 0);
  for (const auto& s : p->samples) {
    EXPECT_EQ(s.labels.at("pid"), pid);
    EXPECT_EQ(s.labels.at("comm"), "cpu_split");
    EXPECT_EQ(s.labels.at("thread_name"), "cpu_split");
    EXPECT_EQ(s.labels.at("tid"), pid);
    EXPECT_EQ(s.cpu_nanos, s.count * raw.period());
  }
  ASSERT_GT(raw.mapping_size(), 0);
  EXPECT_NE(st[raw.mapping(0).filename()].find("testprogs/cpu_split"), std::string::npos)
      << "pprof tools treat the first mapping as the main binary";
  bool found_exe = false;
  for (const auto& m : raw.mapping()) {
    if (st[m.filename()].find("testprogs/cpu_split") == std::string::npos) continue;
    found_exe = true;
    EXPECT_EQ(st[m.build_id()].size(), 40u) << "GNU build id (sha1) in hex";
    EXPECT_TRUE(m.has_functions());
  }
  EXPECT_TRUE(found_exe) << "a mapping for the test program";
}

TEST_F(RecordTest, SyscallHeavyShowsKernelFramesUnderUserFrames) {
  pid_t prog = StartProcess({kProgs + "/syscall_heavy", "5"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::string out = dir_ + "/sys.pb.gz";
  auto r = RunProcess({kAgent, "record", "--pid", std::to_string(prog), "--duration", "3", "--output", out});
  WaitProcess(prog);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto p = ReadPprofFile(out);
  ASSERT_TRUE(p.ok()) << p.status().ToString();

  int64_t total = 0, with_kernel = 0, ordered = 0, with_user_callers = 0, read_in_kernel = 0;
  for (const auto& s : p->samples) {
    total += s.count;
    if (s.frames.empty() || !s.frames.front().kernel) continue;
    with_kernel += s.count;
    // Leaf first: every kernel frame before every user frame.
    size_t i = 0;
    while (i < s.frames.size() && s.frames[i].kernel) ++i;
    bool user_only_after = true;
    for (size_t j = i; j < s.frames.size(); ++j) user_only_after &= !s.frames[j].kernel;
    if (user_only_after) ordered += s.count;
    if (s.Contains("read_zeros") && s.Contains("main")) with_user_callers += s.count;
    for (size_t j = 0; j < i; ++j) {
      if (s.frames[j].function.find("read") != std::string::npos) {
        read_in_kernel += s.count;
        break;
      }
    }
  }
  printf("syscall_heavy: %lld samples, %lld with kernel frames, %lld with read_zeros+main\n",
         static_cast<long long>(total), static_cast<long long>(with_kernel), static_cast<long long>(with_user_callers));
  ASSERT_GT(total, 100);
  EXPECT_GE(with_kernel, total / 2) << "reading /dev/zero is mostly kernel time";
  EXPECT_EQ(ordered, with_kernel) << "kernel frames must sit below user frames";
  EXPECT_GE(with_user_callers, with_kernel * 9 / 10) << "user frames read_zeros and main above the kernel part";
  EXPECT_GE(read_in_kernel, with_kernel * 9 / 10) << "kernel read path symbolized (e.g. ksys_read)";
}

TEST_F(RecordTest, ProcessThatExitsDuringRecordingIsSymbolized) {
  const std::string out = dir_ + "/all.pb.gz";
  pid_t agent = StartProcess({kAgent, "record", "--all", "--duration", "4s", "--output", out});
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  pid_t prog = StartProcess({kProgs + "/short_lived", "1.2"});
  EXPECT_EQ(WaitProcess(prog), 0);
  ASSERT_EQ(WaitProcess(agent), 0);
  auto p = ReadPprofFile(out);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const std::string pid = std::to_string(prog);
  const int64_t total = p->TotalCount(pid);
  printf("short_lived: %lld samples, %.3f with short_lived_work\n", static_cast<long long>(total),
         Share(*p, "short_lived_work", pid));
  ASSERT_GT(total, 40) << "the short-lived process was sampled";
  EXPECT_GE(Share(*p, "short_lived_work", pid), 0.9);
  EXPECT_GE(Share(*p, "main", pid), 0.9);
}

TEST_F(RecordTest, TargetExitingMidRecordEndsRecordingAndKeepsData) {
  pid_t prog = StartProcess({kProgs + "/short_lived", "1.5"});
  const std::string out = dir_ + "/exit.pb.gz";
  const auto start = std::chrono::steady_clock::now();
  auto r = RunProcess({kAgent, "record", "--pid", std::to_string(prog), "--duration", "20s", "--output", out});
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WaitProcess(prog);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(elapsed, 10) << "recording stops when the target exits";
  EXPECT_NE(r.err.find("process exited"), std::string::npos) << r.err;
  auto p = ReadPprofFile(out);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_GT(p->CountContaining("short_lived_work"), 40);
}

TEST_F(RecordTest, CollapsedOutput) {
  pid_t prog = StartProcess({kProgs + "/cpu_split", "4"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::string out = dir_ + "/cpu.folded";
  // 499 Hz: at the default 99 Hz a CI run with another test beside it got 99
  // samples, where one standard deviation of the 3:1 share is 0.044 and the
  // 0.07 bound failed; ~500+ samples make it 0.02.
  auto r = RunProcess({kAgent, "record", "--pid", std::to_string(prog), "--duration", "2", "--frequency", "499",
                       "--format", "collapsed", "--output", out, "--top", "0"});
  WaitProcess(prog);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "") << "--top 0 prints nothing";
  FILE* f = fopen(out.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char line[8192];
  long total = 0, hot = 0;
  while (fgets(line, sizeof(line), f)) {
    std::string s(line);
    ASSERT_EQ(s.rfind("cpu_split;", 0), 0u) << s;
    const size_t space = s.rfind(' ');
    ASSERT_NE(space, std::string::npos);
    const long n = atol(s.c_str() + space + 1);
    ASSERT_GT(n, 0) << s;
    total += n;
    if (s.find(";main;hot_three_quarters;spin ") != std::string::npos) hot += n;
  }
  fclose(f);
  EXPECT_GT(total, 100);
  EXPECT_NEAR(static_cast<double>(hot) / total, 0.75, 0.07);
}

TEST_F(RecordTest, RealOutputOpensInGoToolPprofWithoutWarnings) {
  const char* go = access("/usr/lib/go/bin/go", X_OK) == 0 ? "/usr/lib/go/bin/go" : nullptr;
  if (!go) GTEST_SKIP() << "go (golang-go) not installed";
  pid_t prog = StartProcess({kProgs + "/cpu_split", "3"});
  const std::string out = dir_ + "/all.pb.gz";
  auto r = RunProcess({kAgent, "record", "--all", "--duration", "2", "--output", out});
  WaitProcess(prog);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  setenv("HOME", dir_.c_str(), 1);
  setenv("GOCACHE", (dir_ + "/gocache").c_str(), 1);
  setenv("PPROF_TMPDIR", dir_.c_str(), 1);
  auto top = RunProcess({go, "tool", "pprof", "-top", out});
  EXPECT_EQ(top.exit_code, 0) << top.err;
  for (const char* bad : {"arning", "rror", "ailed"}) EXPECT_EQ(top.err.find(bad), std::string::npos) << top.err;
  EXPECT_NE(top.out.find("spin"), std::string::npos) << top.out;
  auto traces = RunProcess({go, "tool", "pprof", "-traces", out});
  EXPECT_EQ(traces.exit_code, 0) << traces.err;
  EXPECT_NE(traces.out.find("hot_three_quarters"), std::string::npos);
}

TEST_F(RecordTest, BadInputGetsClearErrorsAndExitCodes) {
  auto no_pid = RunProcess({kAgent, "record", "--pid", "999999999", "--output", dir_ + "/x.pb.gz"});
  EXPECT_EQ(no_pid.exit_code, 5) << no_pid.err;
  EXPECT_NE(no_pid.err.find("no process with pid 999999999"), std::string::npos) << no_pid.err;

  auto bad_out = RunProcess({kAgent, "record", "--all", "--output", "/nonexistent-dir/x.pb.gz"});
  EXPECT_EQ(bad_out.exit_code, 2) << bad_out.err;
  EXPECT_NE(bad_out.err.find("/nonexistent-dir"), std::string::npos) << bad_out.err;

  auto dir_out = RunProcess({kAgent, "record", "--all", "--output", dir_});
  EXPECT_EQ(dir_out.exit_code, 2) << dir_out.err;

  auto flag = RunProcess({kAgent, "record", "--all", "--bogus"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_NE(flag.err.find("unknown flag '--bogus'"), std::string::npos) << flag.err;

  auto cmd = RunProcess({kAgent, "frobnicate"});
  EXPECT_EQ(cmd.exit_code, 2);
  EXPECT_EQ(cmd.signal, 0);
}

TEST_F(RecordTest, WithoutCapabilitiesSaysWhichAreMissing) {
  if (access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "setpriv (util-linux) not installed";
  chmod(dir_.c_str(), 0777);
  auto r = RunProcess({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                       kAgent, "record", "--all", "--duration", "1", "--output", dir_ + "/x.pb.gz"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("missing CAP_BPF, CAP_PERFMON"), std::string::npos) << r.err;
  EXPECT_EQ(r.signal, 0);
}

}  // namespace
}  // namespace warpscope::testing
