// The agent's probe attaching against a hostile local user (needs root, and
// unprivileged user namespaces: Debian's default). An unprivileged process
// (uid 65534, in `unshare -Urm`: its own user and mount namespaces) maps
// copies of the libraries the agent probes (libwarpscope_cuda.so for the
// launch probe, libtorch_python.so for the autograd probes), bind-mounts a
// FIFO over each path in its mount namespace and connects to the CUDA
// socket (tests/testprogs/hostile_cuda_client.c). An agent that opened the
// library by that path blocked in open() for ever, on its sampling thread:
// no upload again, and SIGTERM ignored. The agent must keep uploading,
// probe the files the process really maps, and stop on SIGTERM in time.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include "tests/integration/agent_process.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kToken[] = "probe-hostile-token";
constexpr uid_t kNobody = 65534;

// The value of `name` (with its Hostname label) in the agent's /metrics, or -1.
int64_t MetricValue(int port, const std::string& name, const std::string& event = "") {
  const HttpResult m = HttpGet(port, "/metrics", "");
  if (m.status != 200) return -1;
  const std::string pattern = event.empty() ? name + R"(\{[^}]*\} ([0-9.e+]+))"
                                            : name + R"(\{[^}]*event="?)" + event + R"("?[^}]*\} ([0-9.e+]+))";
  std::smatch match;
  if (!std::regex_search(m.body, match, std::regex(pattern))) return -1;
  return static_cast<int64_t>(std::stod(match[1]));
}

// Whether an unprivileged user can make its own user and mount namespaces here.
bool UserNamespacesWork() {
  const ProcessResult r = RunProcess({"/usr/bin/setpriv", "--reuid", std::to_string(kNobody), "--regid",
                                      std::to_string(kNobody), "--clear-groups", "/usr/bin/unshare", "-Urm", "/bin/true"},
                                     20);
  return r.exit_code == 0;
}

class ProbeHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "needs root (BPF)";
    dir_ = MakeTempDir();
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    auto s = ServerProcess::Start(WS_SERVER_BIN, dir_ + "/data", {"--token", kToken});
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
  }
  void TearDown() override {
    if (hostile_ > 0) {
      kill(hostile_, SIGKILL);
      WaitProcess(hostile_);
    }
    if (agent_ && agent_->pid() > 0) agent_->Kill();
    server_.reset();
    RunProcess({"rm", "-rf", dir_});
  }
  // A copy readable by every user, in a directory of its own.
  std::string Copy(const std::string& from, const std::string& name) {
    const std::string dir = dir_ + "/lib-" + name;
    std::filesystem::create_directories(dir);
    const std::string to = dir + "/" + name;
    std::filesystem::copy_file(from, to);
    chmod(dir.c_str(), 0755);
    chmod(to.c_str(), 0755);
    return to;
  }
  std::string Socket() const { return dir_ + "/cuda.sock"; }
  void StartAgent() {
    metrics_port_ = FreePort();
    agent_ = std::make_unique<AgentProcess>(
        WS_AGENT_BIN,
        std::vector<std::string>{"--server", server_->url(), "--token", kToken, "--upload-interval", "1s",
                                 "--state-dir", dir_ + "/agent", "--node-name", "hostile-node", "--no-gpu-metrics",
                                 "--cuda-socket", Socket(), "--gpu-time-mode", "exact", "--metrics-listen",
                                 "127.0.0.1:" + std::to_string(metrics_port_)},
        dir_ + "/agent.log");
    ASSERT_TRUE(agent_->started());
    struct stat st {};
    for (int i = 0; i < 400 && stat(Socket().c_str(), &st) != 0; ++i) std::this_thread::sleep_for(50ms);
    ASSERT_EQ(stat(Socket().c_str(), &st), 0) << agent_->Log();
  }
  int64_t Sent() { return MetricValue(metrics_port_, "warpscope_agent_upload_batches_sent_total"); }
  int64_t Event(const std::string& event) { return MetricValue(metrics_port_, "warpscope_agent_events_total", event); }
  // Waits until `done` holds, up to `timeout`.
  template <typename Pred>
  static bool WaitUntil(Pred done, std::chrono::seconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (done()) return true;
      std::this_thread::sleep_for(100ms);
    }
    return done();
  }

  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<AgentProcess> agent_;
  int metrics_port_ = 0;
  pid_t hostile_ = -1;
};

TEST_F(ProbeHostileTest, AFifoOverAProbedLibraryNeitherStopsUploadsNorSigterm) {
  if (!UserNamespacesWork()) GTEST_SKIP() << "unprivileged user namespaces are off here";
  const std::string launch_library = Copy(WS_CUDA_LIBRARY_PATH, "libwarpscope_cuda.so");
  const std::string autograd_library = Copy(std::string(WS_FAKE_TORCH_DIR) + "/libtorch_python.so",
                                            "libtorch_python.so");
  const std::string client = Copy(WS_HOSTILE_CLIENT, "hostile_cuda_client");
  const std::string fifo_dir = dir_ + "/fifos";
  std::filesystem::create_directories(fifo_dir);
  ASSERT_EQ(chown(fifo_dir.c_str(), kNobody, kNobody), 0);

  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return Sent() >= 2; }, 30s)) << "the agent never uploaded\n" << agent_->Log();

  const std::string out = dir_ + "/hostile.out";
  hostile_ = StartProcess({"/usr/bin/setpriv", "--reuid", std::to_string(kNobody), "--regid", std::to_string(kNobody),
                           "--clear-groups", "/usr/bin/unshare", "-Urm", client, Socket(), "60", fifo_dir, launch_library,
                           autograd_library},
                          dir_ + "/hostile.err", out);
  ASSERT_TRUE(WaitForFileText(out, "connected", 20)) << "the hostile client did not connect";

  // Uploads go on: one window a second.
  const int64_t before = Sent();
  std::this_thread::sleep_for(6s);
  const int64_t after = Sent();
  EXPECT_GE(after - before, 3) << "uploads stopped after the hostile process connected\n" << agent_->Log();

  // The files the process maps are probed (through the mapping, not the FIFO at their paths).
  EXPECT_TRUE(WaitUntil([&] { return Event("gpu_probe_files_attached") >= 1; }, 10s))
      << "gpu_probe_files_attached " << Event("gpu_probe_files_attached") << "\n" << agent_->Log();
  EXPECT_TRUE(WaitUntil([&] { return Event("gpu_autograd_probe_files_attached") >= 1; }, 10s))
      << "gpu_autograd_probe_files_attached " << Event("gpu_autograd_probe_files_attached");

  // SIGTERM while the hostile process is still connected: the agent stops in
  // far less than the deployments' grace period (45 s).
  const auto term = std::chrono::steady_clock::now();
  const pid_t agent = agent_->pid();
  kill(agent, SIGTERM);
  bool exited = false;
  while (!exited && std::chrono::steady_clock::now() - term < 20s) {
    siginfo_t info{};
    exited = waitid(P_PID, agent, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == agent;
    if (!exited) std::this_thread::sleep_for(50ms);
  }
  const double stop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - term).count();
  EXPECT_TRUE(exited) << "SIGTERM did not stop the agent within 20 s\n" << agent_->Log();
  if (exited) {
    EXPECT_EQ(agent_->Stop(), 0);  // reaps it
  } else {
    agent_->Kill();
  }
  printf("uploads in 6 s with the hostile process connected: %lld; stopped %.2f s after SIGTERM\n",
         static_cast<long long>(after - before), stop_s);
}

}  // namespace
}  // namespace warpscope::testing
