// `warpscope-agent doctor`, the real binary on this machine: a pass (with the
// fake NVML), each kind of blocker (capabilities dropped with setpriv, no BTF,
// another PID namespace with unshare, a driver without NVML, a wrong token
// against a real server) with its exit code, and `run`'s warning outside the
// host's PID namespace. Root (label bpf): the pass needs the agent's
// privileges.
#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/batch_factory.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

constexpr char kToken[] = "doctor-token";
constexpr int kChecks = 17;

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The report's line of one check ("name  STATUS  found  to do"); empty if none.
std::string Line(const std::string& out, const std::string& check) {
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(check + " ", 0) == 0) return line;
  }
  return "";
}

std::string StatusOf(const std::string& out, const std::string& check) {
  std::istringstream words(Line(out, check));
  std::string name, status;
  words >> name >> status;
  return status;
}

class DoctorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0) return;
    dir_ = new std::string(MakeTempDir());
    auto s = ServerProcess::Start(WS_SERVER_BIN, *dir_ + "/data", {"--token", kToken});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value().release();
    std::ofstream(*dir_ + "/token") << kToken << "\n";
    std::ofstream(*dir_ + "/wrong-token") << "not-the-token\n";
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    if (dir_ != nullptr) (void)std::system(("rm -rf " + *dir_).c_str());
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (CI runs as root)";
    ASSERT_NE(server_, nullptr);
  }

  // warpscope-agent doctor ARGS, optionally behind a wrapper (setpriv, unshare).
  static ProcessResult Doctor(const std::vector<std::string>& args, const std::vector<std::string>& wrapper = {}) {
    std::vector<std::string> argv = wrapper;
    argv.push_back(WS_AGENT_BIN);
    argv.push_back("doctor");
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv, 30);
  }

  static void ExpectOneLinePerCheck(const ProcessResult& r) {
    int lines = 0;
    for (char c : r.out) lines += c == '\n';
    EXPECT_EQ(lines, kChecks + 2) << r.out;  // header, the checks, the summary
    EXPECT_EQ(r.out.find('\033'), std::string::npos) << "colours without a terminal";
  }

  static std::string* dir_;
  static ServerProcess* server_;
};

std::string* DoctorTest::dir_ = nullptr;
ServerProcess* DoctorTest::server_ = nullptr;

TEST_F(DoctorTest, PassesOnThisMachineWithTheFakeNvml) {
  const ProcessResult r = Doctor({"--nvml-library", WS_FAKE_NVML_PATH, "--server", server_->url(), "--token-file",
                                  *dir_ + "/token", "--cuda-socket", *dir_ + "/sock/cuda.sock", "--state-dir",
                                  *dir_ + "/state"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  ExpectOneLinePerCheck(r);
  for (const char* check : {"kernel", "btf", "capabilities", "bpf-syscalls", "host-pid-namespace", "nvml",
                            "cuda-socket", "state-dir", "server", "server-token", "gpu-time-paused"}) {
    EXPECT_EQ(StatusOf(r.out, check), "ok") << Line(r.out, check);
  }
  EXPECT_TRUE(Has(Line(r.out, "nvml"), "driver 580.65.06, CUDA 13.0, 1 GPU")) << r.out;
  // CUPTI is there where the CUDA toolkit is installed; either way not a blocker.
  const std::string cupti = StatusOf(r.out, "cupti");
  EXPECT_TRUE(cupti == "ok" || cupti == "warn") << Line(r.out, "cupti");
  EXPECT_TRUE(Has(r.out, "warpscope-agent doctor: nothing blocks profiling")) << r.out;
}

TEST_F(DoctorTest, MissingCapabilitiesExit3) {
  const ProcessResult r =
      Doctor({"--no-gpu-metrics", "--no-gpu-time"}, {"/usr/bin/setpriv", "--inh-caps=-all", "--bounding-set=-all"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  ExpectOneLinePerCheck(r);
  const std::string caps = Line(r.out, "capabilities");
  EXPECT_EQ(StatusOf(r.out, "capabilities"), "BLOCKED") << caps;
  EXPECT_TRUE(Has(caps, "missing CAP_BPF, CAP_PERFMON")) << caps;
  EXPECT_TRUE(Has(caps, "seccompProfile: {type: Unconfined}")) << caps;
  EXPECT_EQ(StatusOf(r.out, "bpf-syscalls"), "BLOCKED") << r.out;
  EXPECT_TRUE(Has(r.out, "BLOCKED by capabilities, bpf-syscalls")) << r.out;
}

TEST_F(DoctorTest, NoBtfExit4) {
  const ProcessResult r = Doctor({"--no-gpu-metrics", "--btf-path", *dir_ + "/no-vmlinux"});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_EQ(StatusOf(r.out, "btf"), "BLOCKED") << r.out;
  EXPECT_TRUE(Has(Line(r.out, "btf"), "CONFIG_DEBUG_INFO_BTF")) << r.out;
}

TEST_F(DoctorTest, OutsideTheHostPidNamespaceExit6AndRunWarns) {
  const std::vector<std::string> unshare = {"/usr/bin/unshare", "--pid", "--fork", "--mount-proc"};
  const ProcessResult r = Doctor({"--no-gpu-metrics", "--no-gpu-time"}, unshare);
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  const std::string line = Line(r.out, "host-pid-namespace");
  EXPECT_EQ(StatusOf(r.out, "host-pid-namespace"), "BLOCKED") << r.out;
  EXPECT_TRUE(Has(line, "hostPID: true")) << line;

  // `run` says it at once, before anything else can fail (here: a --pid that
  // does not exist, exit 5); in the host's namespace it says nothing.
  const std::vector<std::string> run = {WS_AGENT_BIN, "run",         "--server",         server_->url(),
                                        "--pid",      "4000000",     "--state-dir",      *dir_ + "/state",
                                        "--no-gpu-metrics", "--no-gpu-time"};
  std::vector<std::string> argv = unshare;
  argv.insert(argv.end(), run.begin(), run.end());
  const ProcessResult warned = RunProcess(argv, 30);
  EXPECT_EQ(warned.exit_code, 5) << warned.err;
  EXPECT_TRUE(Has(warned.err, "WARNING: not in the host's PID namespace")) << warned.err;
  EXPECT_TRUE(Has(warned.err, "hostPID: true")) << warned.err;
  const ProcessResult quiet = RunProcess(run, 30);
  EXPECT_EQ(quiet.exit_code, 5) << quiet.err;
  EXPECT_FALSE(Has(quiet.err, "PID namespace")) << quiet.err;
}

TEST_F(DoctorTest, DriverWithoutNvmlExit6) {
  const std::string driver = *dir_ + "/nvidia";
  ASSERT_EQ(std::system(("mkdir -p " + driver).c_str()), 0);
  std::ofstream(driver + "/version")
      << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n";
  std::ofstream(driver + "/params") << "RmProfilingAdminOnly: 1\n";
  const ProcessResult r =
      Doctor({"--nvidia-proc-dir", driver, "--nvml-library", *dir_ + "/missing/libnvidia-ml.so.1",
              "--cuda-socket", *dir_ + "/sock/cuda.sock"});
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  EXPECT_EQ(StatusOf(r.out, "nvidia-driver"), "ok") << r.out;
  EXPECT_TRUE(Has(Line(r.out, "nvidia-driver"), "550.54.15")) << r.out;
  EXPECT_EQ(StatusOf(r.out, "nvml"), "BLOCKED") << r.out;
  EXPECT_TRUE(Has(Line(r.out, "nvml"), "missing/libnvidia-ml.so.1")) << r.out;
  EXPECT_EQ(StatusOf(r.out, "gpu-profiling-access"), "ok") << r.out;
  EXPECT_TRUE(Has(r.out, "BLOCKED by nvml")) << r.out;
}

TEST_F(DoctorTest, WrongTokenBlocksUploadsAndAnUnreachableServerWarns) {
  ProcessResult r = Doctor({"--no-gpu-metrics", "--server", server_->url(), "--token-file", *dir_ + "/wrong-token"});
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  EXPECT_EQ(StatusOf(r.out, "server"), "ok") << r.out;
  EXPECT_EQ(StatusOf(r.out, "server-token"), "BLOCKED") << r.out;
  EXPECT_TRUE(Has(Line(r.out, "server-token"), "refuses the token (GET /api/v1/status: 401)")) << r.out;
  EXPECT_EQ(r.out.find("not-the-token"), std::string::npos) << "the token is never printed";

  r = Doctor({"--no-gpu-metrics", "--server", "http://127.0.0.1:" + std::to_string(FreePort())});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(StatusOf(r.out, "server"), "warn") << r.out;
  EXPECT_TRUE(Has(Line(r.out, "server"), "spools")) << r.out;
  EXPECT_EQ(StatusOf(r.out, "server-token"), "skip") << r.out;
}

// A process of this node whose library stood aside for its own profiler in
// the last hour: the server's cuda_profiling_paused_seconds series names it,
// as a warning that does not block.
TEST_F(DoctorTest, NamesThisNodesProcessesWhoseGpuTimeWasPaused) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const int64_t second = (static_cast<int64_t>(now.tv_sec) - 120) * 1'000'000'000;
  BatchFactory f("doctor-paused", 1, second, second + 1'000'000'000);
  f.AddMetric("cuda_profiling_paused_seconds", "seconds",
              {{"comm", "python3"}, {"node", "doctor-node"}, {"pid", "4242"}, {"reason", "cupti_client"}}, 0.5, second);
  ASSERT_EQ(PostBatch(server_->port(), f.batch(), kToken).status, 200);
  const std::vector<std::string> args = {"--nvml-library", WS_FAKE_NVML_PATH, "--server", server_->url(),
                                         "--token-file", *dir_ + "/token", "--cuda-socket",
                                         *dir_ + "/sock/cuda.sock", "--state-dir", *dir_ + "/state"};
  const ProcessResult r = Doctor(args, {"/usr/bin/env", "WARPSCOPE_NODE_NAME=doctor-node"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(StatusOf(r.out, "gpu-time-paused"), "warn") << Line(r.out, "gpu-time-paused");
  EXPECT_TRUE(Has(Line(r.out, "gpu-time-paused"), "python3 (pid 4242) until")) << r.out;
  // Another node's doctor sees nothing of it.
  const ProcessResult other = Doctor(args, {"/usr/bin/env", "WARPSCOPE_NODE_NAME=another-node"});
  EXPECT_EQ(StatusOf(other.out, "gpu-time-paused"), "ok") << Line(other.out, "gpu-time-paused");
}

}  // namespace
}  // namespace warpscope::testing
