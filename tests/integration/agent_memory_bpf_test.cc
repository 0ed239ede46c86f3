// The agent's memory does not grow with the size of the binaries it reads.
// Two generated executables (bench/lib/gen_big_binary.py), one eight times
// the other in functions, .eh_frame, .symtab and .strtab; beside each, a
// fresh agent (`run`, profiling that process only) builds its unwind table
// and symbol table and names its samples. The agent's peak RSS while it
// does so (VmHWM, reset just before the binary starts) must be the same for
// both, within 25 %: before the tables were built and kept in spill files,
// the larger binary took the agent from ~70 to ~150 MB (200,000 functions:
// +60 MB).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/agent_process.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kToken[] = "memory-token";

struct Reading {
  int64_t peak_kb = 0;
  int64_t steady_kb = 0;
  int64_t spilled_symbol_tables = 0;
  int64_t unwind_tables_built = 0;
  std::string log;
};

class AgentMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the agent needs root";
    dir_ = MakeTempDir();
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    auto s = ServerProcess::Start(WS_SERVER_BIN, dir_ + "/data", {"--token", kToken});
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
  }
  void TearDown() override {
    server_.reset();
    if (!dir_.empty()) RunProcess({"rm", "-rf", dir_});
  }

  std::string Generate(int functions) {
    const std::string out = dir_ + "/big" + std::to_string(functions);
    ProcessResult r = RunProcess({"/usr/bin/python3", WS_GEN_BIG_BINARY, std::to_string(functions), out}, 600);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }

  // A fresh agent beside `binary`: its peak RSS from the binary's start until
  // both of its tables are built and two windows have named its samples.
  Reading Measure(const std::string& binary) {
    Reading reading;
    const pid_t workload = StartProcess({binary});
    EXPECT_GT(workload, 0);
    const int metrics_port = FreePort();
    const std::string name = binary.substr(binary.rfind('/') + 1);
    AgentProcess agent(WS_AGENT_BIN,
                       {"--server", server_->url(), "--token", kToken, "--state-dir", dir_ + "/agent-" + name,
                        "--upload-interval", "2s", "--no-gpu-metrics", "--no-gpu-time", "--pid",
                        std::to_string(workload), "--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)},
                       dir_ + "/agent-" + name + ".log");
    EXPECT_TRUE(agent.started());
    auto counter = [&](const std::string& event) { return AgentEventCounter(metrics_port, event); };
    // Up (its endpoint answers); then the peak is counted from here.
    for (int i = 0; i < 200 && counter("unwind_tables_built") < 0; ++i) std::this_thread::sleep_for(100ms);
    std::ofstream(std::string("/proc/") + std::to_string(agent.pid()) + "/clear_refs") << "5";
    const auto deadline = std::chrono::steady_clock::now() + 90s;
    while (std::chrono::steady_clock::now() < deadline &&
           (counter("symbol_tables_spilled") < 1 || counter("user_frames_symbolized") < 200)) {
      std::this_thread::sleep_for(200ms);
    }
    std::this_thread::sleep_for(4s);  // two more windows
    reading.peak_kb = ProcStatusKb(agent.pid(), "VmHWM");
    reading.steady_kb = ProcStatusKb(agent.pid(), "VmRSS");
    reading.spilled_symbol_tables = counter("symbol_tables_spilled");
    reading.unwind_tables_built = counter("unwind_tables_built");
    kill(workload, SIGKILL);
    WaitProcess(workload);
    EXPECT_EQ(agent.Stop(), 0);
    reading.log = agent.Log();
    return reading;
  }

  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(AgentMemoryTest, PeakRssBesideABinaryDoesNotGrowWithItsSize) {
  const std::string small = Generate(25'000);
  const std::string large = Generate(200'000);
  struct stat a {}, b {};
  ASSERT_EQ(stat(small.c_str(), &a), 0);
  ASSERT_EQ(stat(large.c_str(), &b), 0);
  ASSERT_GT(b.st_size, 6 * a.st_size);
  const Reading r_small = Measure(small);
  const Reading r_large = Measure(large);
  std::cerr << "binary " << a.st_size / 1000000.0 << " MB: agent peak " << r_small.peak_kb / 1024 << " MB, steady "
            << r_small.steady_kb / 1024 << " MB\n"
            << "binary " << b.st_size / 1000000.0 << " MB: agent peak " << r_large.peak_kb / 1024 << " MB, steady "
            << r_large.steady_kb / 1024 << " MB\n";
  // Both really read their binary: its symbols went to a spill file and its
  // unwind table was built.
  EXPECT_GE(r_small.spilled_symbol_tables, 1) << r_small.log;
  EXPECT_GE(r_large.spilled_symbol_tables, 1) << r_large.log;
  EXPECT_GE(r_small.unwind_tables_built, 1) << r_small.log;
  EXPECT_GE(r_large.unwind_tables_built, 1) << r_large.log;
  ASSERT_GT(r_small.peak_kb, 0);
  EXPECT_LE(static_cast<double>(r_large.peak_kb) / static_cast<double>(r_small.peak_kb), 1.25);
  EXPECT_LE(static_cast<double>(r_large.steady_kb) / static_cast<double>(r_small.steady_kb), 1.25);
}

}  // namespace
}  // namespace warpscope::testing
