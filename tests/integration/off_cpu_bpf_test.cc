// End-to-end tests of off-CPU time: `record --type off_cpu` on programs that
// block in known places, a C program without frame pointers and a Python
// program. Real agent, real BPF; needs root; labelled `bpf`.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "tests/integration/pprof_reader.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

const std::string kAgent = WS_AGENT_BIN;
const std::string kProgs = WS_TESTPROGS_DIR;

class OffCpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root for BPF (CI runs as root)";
    dir_ = MakeTempDir();
  }

  DecodedProfile Record(pid_t pid, const std::string& seconds, const std::string& types) {
    const std::string out = dir_ + "/p" + std::to_string(pid) + ".pb.gz";
    auto r = RunProcess({kAgent, "record", "--pid", std::to_string(pid), "--duration", seconds, "--type", types,
                         "--output", out, "--top", "0"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    err_ = r.err;
    auto p = ReadPprofFile(out);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? *p : DecodedProfile{};
  }

  std::string SampleType(const DecodedProfile& p, int i) const {
    const auto& st = p.raw.string_table();
    return st[static_cast<int>(p.raw.sample_type(i).type())] + "/" + st[static_cast<int>(p.raw.sample_type(i).unit())];
  }

  std::string dir_;
  std::string err_;
};

// Blocked nanoseconds under stacks holding `fn`, and their share of all.
int64_t Blocked(const DecodedProfile& p, const std::string& fn) { return p.CountContaining(fn); }
double Share(const DecodedProfile& p, const std::string& fn) {
  return p.TotalCount() ? static_cast<double>(Blocked(p, fn)) / static_cast<double>(p.TotalCount()) : 0;
}
// Blocked nanoseconds of samples labelled wait_reason=`reason`.
int64_t WithReason(const DecodedProfile& p, const std::string& reason) {
  int64_t n = 0;
  for (const auto& s : p.samples) {
    auto it = s.labels.find("wait_reason");
    if (it != s.labels.end() && it->second == reason) n += s.count;
  }
  return n;
}

// 30 ms of nanosleep, then 10 ms of poll on a pipe, over and over, without
// frame pointers: the off-CPU time splits 3:1 under whole stacks, and adds up
// to the wall time the program spent blocked (nearly all of it).
TEST_F(OffCpuTest, CProgramBlocking3To1SplitsItsOffCpuTime) {
  pid_t prog = StartProcess({kProgs + "/off_cpu_split", "8"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  DecodedProfile p = Record(prog, "4", "off_cpu");
  WaitProcess(prog);
  ASSERT_EQ(p.raw.sample_type_size(), 1);
  EXPECT_EQ(SampleType(p, 0), "off_cpu/nanoseconds");
  const double wall = static_cast<double>(p.raw.duration_nanos());
  const double total = static_cast<double>(p.TotalCount());
  const double sleep = Share(p, "sleep_a_while"), pipe = Share(p, "wait_on_pipe"), main = Share(p, "main");
  printf("off_cpu_split: %.3f s blocked of %.3f s, sleep %.3f, pipe %.3f, main %.4f, sleep reason %.3f, poll "
         "reason %.3f\n%s",
         total / 1e9, wall / 1e9, sleep, pipe, main, WithReason(p, "sleep") / total, WithReason(p, "poll") / total,
         err_.c_str());
  ASSERT_GT(total, 0);
  EXPECT_NEAR(total / wall, 1.0, 0.10) << "the thread was blocked nearly all the time";
  const double split = sleep / (sleep + pipe);
  EXPECT_NEAR(split, 0.75, 0.05);
  EXPECT_GE(main, 0.95) << "stacks reach main";
  EXPECT_NEAR(static_cast<double>(WithReason(p, "sleep")) / total, sleep, 0.02);
  EXPECT_NEAR(static_cast<double>(WithReason(p, "poll")) / total, pipe, 0.02);
}

// Both types in one file: off_cpu first, cpu (the default) second.
TEST_F(OffCpuTest, BothTypesGoInOneProfile) {
  pid_t prog = StartProcess({kProgs + "/cpu_split", "6"});
  pid_t blocker = StartProcess({kProgs + "/off_cpu_split", "6"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::string out = dir_ + "/both.pb.gz";
  auto r = RunProcess({kAgent, "record", "--pid", std::to_string(prog) + "," + std::to_string(blocker), "--duration",
                       "3", "--type", "cpu,off_cpu", "--output", out, "--top", "0"});
  WaitProcess(prog);
  WaitProcess(blocker);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto p = ReadPprofFile(out);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->raw.sample_type_size(), 2);
  EXPECT_EQ(SampleType(*p, 0), "off_cpu/nanoseconds");
  EXPECT_EQ(SampleType(*p, 1), "cpu/nanoseconds");
  int64_t off_blocker = 0, cpu_burner = 0;
  for (const auto& s : p->samples) {
    if (s.labels.at("pid") == std::to_string(blocker)) off_blocker += s.count;
    if (s.labels.at("pid") == std::to_string(prog)) cpu_burner += s.cpu_nanos;
  }
  printf("both: off_cpu of the blocker %.3f s, cpu of the burner %.3f s\n", off_blocker / 1e9, cpu_burner / 1e9);
  EXPECT_GT(off_blocker, 2'000'000'000);
  EXPECT_GT(cpu_burner, 1'000'000'000);
}

// A Python program that blocks in two functions (3:1, sleep and select on a
// pipe): both show, with their Python frames, in the right proportion.
TEST_F(OffCpuTest, PythonProgramShowsItsBlockingFunctions) {
  const char* script =
      "import os, select, time\n"
      "r, w = os.pipe()\n"
      "def nap():\n"
      "    time.sleep(0.03)\n"
      "def wait_for_data():\n"
      "    select.select([r], [], [], 0.01)\n"
      "end = time.monotonic() + 8\n"
      "while time.monotonic() < end:\n"
      "    nap()\n"
      "    wait_for_data()\n";
  pid_t prog = StartProcess({"/usr/bin/python3", "-c", script});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  DecodedProfile p = Record(prog, "4", "off_cpu");
  kill(prog, SIGKILL);
  WaitProcess(prog);
  const double nap = Share(p, "nap"), wait = Share(p, "wait_for_data");
  printf("python: %.3f s blocked, nap %.3f, wait_for_data %.3f, <module> %.3f\n", p.TotalCount() / 1e9, nap, wait,
         Share(p, "<module>"));
  ASSERT_GT(p.TotalCount(), 0);
  EXPECT_GT(nap, 0.05);
  EXPECT_GT(wait, 0.05);
  EXPECT_NEAR(nap / (nap + wait), 0.75, 0.08);
  EXPECT_GE(Share(p, "<module>"), 0.9) << "the Python stacks reach the module";
}

}  // namespace
}  // namespace warpscope::testing
