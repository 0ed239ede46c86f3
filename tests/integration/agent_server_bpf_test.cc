// The whole pipeline for real: `warpscope-agent run` (BPF, root) streaming to
// a real warpscope-server process on loopback with the embedded store.
//  - shares: a known 3:1 workload comes back through format=pprof with its
//    functions in the right proportions and its labels;
//  - the server is killed with SIGKILL mid-stream and restarted: the agent
//    spools meanwhile and its spooled batches arrive, in order, with no gap;
//  - the agent is killed with SIGKILL and restarted: at most the window it
//    had not uploaded yet is lost;
//  - the agent is killed with SIGKILL while the server stalls (SIGSTOP):
//    every window it had made is on disk and arrives after the restart.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "tests/integration/agent_process.h"
#include "tests/integration/pprof_reader.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr char kToken[] = "agent-server-token";
const std::string kProgs = WS_TESTPROGS_DIR;
constexpr int kUploadSeconds = 2;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class AgentServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    StartServer(0);
  }
  void TearDown() override {
    StopAgent();
    if (workload_ > 0) {
      kill(workload_, SIGKILL);
      WaitProcess(workload_);
    }
    server_.reset();
    RunProcess({"rm", "-rf", dir_});
  }
  void StartServer(int port) {
    auto s = ServerProcess::Start(WS_SERVER_BIN, dir_ + "/data", {"--token", kToken}, port);
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
  }
  void StartAgent(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"--server", server_->url(), "--token", kToken, "--frequency", "99",
                                  "--upload-interval", std::to_string(kUploadSeconds) + "s", "--state-dir",
                                  dir_ + "/agent", "--node-name", "test-node"};
    args.insert(args.end(), extra.begin(), extra.end());
    agent_ = std::make_unique<AgentProcess>(WS_AGENT_BIN, args, dir_ + "/agent.log");
    ASSERT_TRUE(agent_->started());
  }
  // SIGTERM: the agent uploads (or spools) its last window and exits 0.
  int StopAgent() { return agent_ ? agent_->Stop() : 0; }
  void KillAgent() { agent_->Kill(); }
  json GetJson(const std::string& path) { return GetApiJson(server_->port(), path, kToken); }
  std::string PidSelector() { return UrlEncode("{pid=\"" + std::to_string(workload_) + "\"}"); }
  // The workload's profile of `type` over `range` ("from=...&to=..."), through format=pprof.
  void FetchPprof(const std::string& type, const std::string& range, perftools::profiles::Profile* p) {
    HttpResult r = HttpGet(server_->port(), "/api/v1/profile?type=" + type + "&format=pprof&" + range +
                                                "&selector=" + PidSelector(), kToken);
    ASSERT_EQ(r.status, 200) << r.body;
    auto raw = Gunzip(r.body);
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE(p->ParseFromString(*raw));
  }
  // Start times (unix ms) of the workload's upload windows in [from_ms, to_ms):
  // the agent stamps each window's samples with the window's start.
  std::vector<int64_t> WindowStarts(int64_t from_ms, int64_t to_ms) {
    json s = GetJson("/api/v1/series?from=" + std::to_string(from_ms) + "&to=" + std::to_string(to_ms) +
                     "&step=1s&selector=" + PidSelector());
    std::set<int64_t> starts;
    for (const auto& series : s["series"]) {
      for (const auto& p : series["points"]) {
        if (p[1].get<int64_t>() > 0) starts.insert(p[0].get<int64_t>());
      }
    }
    return {starts.begin(), starts.end()};
  }
  // The longest stretch without a window start, counting the range's ends.
  static int64_t LongestGapMs(const std::vector<int64_t>& starts, int64_t from_ms, int64_t to_ms) {
    int64_t gap = 0, last = from_ms;
    for (int64_t t : starts) {
      gap = std::max(gap, t - last);
      last = t;
    }
    return std::max(gap, to_ms - last);
  }
  // Waits until the server has samples of the workload up to `until_ms`.
  bool WaitForData(int64_t until_ms, int timeout_s) {
    for (int i = 0; i < timeout_s * 4; ++i) {
      json s = GetJson("/api/v1/series?from=" + std::to_string(until_ms - 60'000) + "&to=" + std::to_string(NowMs()) +
                       "&step=1s&selector=" + PidSelector());
      int64_t last = 0;
      for (const auto& series : s["series"]) {
        for (const auto& p : series["points"]) last = std::max(last, p[0].get<int64_t>());
      }
      if (last >= until_ms - 1000) return true;
      std::this_thread::sleep_for(250ms);
    }
    return false;
  }

  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<AgentProcess> agent_;
  pid_t workload_ = -1;
};

TEST_F(AgentServerTest, KnownWorkloadHasItsSharesThroughPprof) {
  workload_ = StartProcess({kProgs + "/cpu_split", "12"});
  const int64_t start_ms = NowMs();
  StartAgent();
  std::this_thread::sleep_for(10s);
  EXPECT_EQ(StopAgent(), 0);
  const std::string range = "from=" + std::to_string(start_ms - 1000) + "&to=" + std::to_string(NowMs() + 1000);
  perftools::profiles::Profile p;
  ASSERT_NO_FATAL_FAILURE(FetchPprof("cpu", range, &p));
  int64_t total = 0, hot = 0, cold = 0;
  for (const auto& s : p.sample()) {
    total += s.value(0);
    for (uint64_t id : s.location_id()) {
      const auto& loc = p.location(id - 1);
      bool h = false, c = false;
      for (const auto& line : loc.line()) {
        const std::string& name = p.string_table(p.function(line.function_id() - 1).name());
        h |= name == "hot_three_quarters";
        c |= name == "cold_one_quarter";
      }
      if (h) hot += s.value(0);
      if (c) cold += s.value(0);
      if (h || c) break;
    }
  }
  ASSERT_GT(total, 500) << "too few samples of the workload: " << total;
  const double hot_share = static_cast<double>(hot) / total, cold_share = static_cast<double>(cold) / total;
  EXPECT_NEAR(hot_share, 0.75, 0.05);
  EXPECT_NEAR(cold_share, 0.25, 0.05);
  printf("through the server: %lld samples, hot %.3f cold %.3f\n", static_cast<long long>(total), hot_share,
         cold_share);

  json targets = GetJson("/api/v1/targets?" + range);
  bool found = false;
  for (const auto& node : targets["nodes"]) {
    if (node["node"] != "test-node") continue;
    for (const auto& proc : node["processes"]) {
      if (proc.value("pid", "") == std::to_string(workload_)) {
        found = true;
        EXPECT_EQ(proc.value("comm", ""), "cpu_split");
        EXPECT_NE(proc.value("exe", "").find("testprogs/cpu_split"), std::string::npos) << proc.dump();
      }
    }
  }
  EXPECT_TRUE(found) << targets.dump();
}

// `run --off-cpu`: the blocked time of a program that blocks 3:1 in two
// functions is stored as the off_cpu type and comes back split 3:1, with
// its wait_reason labels as series labels.
TEST_F(AgentServerTest, OffCpuTimeIsStoredAndServedAsItsOwnType) {
  workload_ = StartProcess({kProgs + "/off_cpu_split", "14"});
  const int64_t start_ms = NowMs();
  StartAgent({"--off-cpu"});
  std::this_thread::sleep_for(10s);
  EXPECT_EQ(StopAgent(), 0);
  const int64_t end_ms = NowMs();
  const std::string range = "from=" + std::to_string(start_ms - 1000) + "&to=" + std::to_string(end_ms + 1000);
  perftools::profiles::Profile p;
  ASSERT_NO_FATAL_FAILURE(FetchPprof("off_cpu", range, &p));
  ASSERT_GE(p.sample_type_size(), 1);
  EXPECT_EQ(p.string_table(p.sample_type(0).type()), "off_cpu");
  EXPECT_EQ(p.string_table(p.sample_type(0).unit()), "nanoseconds");
  int64_t total = 0, sleep = 0, pipe = 0;
  for (const auto& s : p.sample()) {
    total += s.value(0);
    bool a = false, b = false;
    for (uint64_t id : s.location_id()) {
      for (const auto& line : p.location(id - 1).line()) {
        const std::string& name = p.string_table(p.function(line.function_id() - 1).name());
        a |= name == "sleep_a_while";
        b |= name == "wait_on_pipe";
      }
    }
    if (a) sleep += s.value(0);
    if (b) pipe += s.value(0);
  }
  printf("off_cpu through the server: %.3f s blocked over %.3f s, sleep %lld ns, pipe %lld ns\n", total / 1e9,
         (end_ms - start_ms) / 1e3, static_cast<long long>(sleep), static_cast<long long>(pipe));
  ASSERT_GT(total, 5'000'000'000) << "the program blocked for nearly all of the agent's 10 s";
  EXPECT_NEAR(static_cast<double>(sleep) / static_cast<double>(sleep + pipe), 0.75, 0.05);
  json labels = GetJson("/api/v1/label_values?name=wait_reason");
  printf("wait_reason values: %s\n", labels.dump().c_str());
  EXPECT_NE(labels.dump().find("sleep"), std::string::npos);
  EXPECT_NE(labels.dump().find("poll"), std::string::npos);
}

TEST_F(AgentServerTest, ServerKilledMidStreamGetsTheSpooledBatchesAfterRestart) {
  workload_ = StartProcess({kProgs + "/cpu_split", "40"});
  StartAgent();
  std::this_thread::sleep_for(std::chrono::seconds(3 * kUploadSeconds + 2));  // the agent is streaming
  const int port = server_->port();
  const int64_t kill_ms = NowMs();
  server_->Kill();
  std::this_thread::sleep_for(8s);  // four windows go to the spool
  const int64_t restart_ms = NowMs();
  StartServer(port);
  // The spool drains (backoff is at most a few seconds this early), then new windows flow again.
  std::this_thread::sleep_for(std::chrono::seconds(3 * kUploadSeconds));
  const int64_t end_ms = NowMs() - 2000 * kUploadSeconds;
  ASSERT_TRUE(WaitForData(end_ms, 30)) << "no data after the restart";
  EXPECT_EQ(StopAgent(), 0);
  // Windows follow each other without a hole from before the kill to after
  // the restart: the windows the agent spooled while the server was down arrived.
  const std::vector<int64_t> starts = WindowStarts(kill_ms - 4000 * kUploadSeconds, end_ms);
  const int64_t gap = LongestGapMs(starts, kill_ms - 3000 * kUploadSeconds, end_ms - 1000 * kUploadSeconds);
  EXPECT_LE(gap, 1000 * kUploadSeconds + 1500) << "a hole in the windows around a server down for "
                                                << (restart_ms - kill_ms) << " ms";
  EXPECT_GE(starts.size(), static_cast<size_t>((end_ms - kill_ms) / 1000 / kUploadSeconds));
  printf("server down %lld ms; %zu windows, longest gap %lld ms\n", static_cast<long long>(restart_ms - kill_ms),
         starts.size(), static_cast<long long>(gap));
}

TEST_F(AgentServerTest, AgentKilledMidStreamLosesAtMostTheWindowInFlight) {
  workload_ = StartProcess({kProgs + "/cpu_split", "40"});
  const int64_t start_ms = NowMs();
  StartAgent();
  std::this_thread::sleep_for(std::chrono::seconds(3 * kUploadSeconds + 3));
  const int64_t kill_ms = NowMs();
  KillAgent();
  const int64_t restart_ms = NowMs();
  StartAgent();
  std::this_thread::sleep_for(std::chrono::seconds(4 * kUploadSeconds));
  EXPECT_EQ(StopAgent(), 0);
  const int64_t end_ms = NowMs();
  // Lost: at most the window in flight at the kill (one upload interval)
  // plus the restart itself (BPF load, first unwind tables): so between the
  // last window before the kill and the first after it, at most two
  // intervals and the restart.
  const int64_t restart_cost_ms = 4000;
  const std::vector<int64_t> starts = WindowStarts(start_ms, end_ms);
  const int64_t gap = LongestGapMs(starts, start_ms + 3000, end_ms - 2000 * kUploadSeconds);
  EXPECT_LE(gap, 2000 * kUploadSeconds + restart_cost_ms + 1000)
      << "windows lost around an agent kill at +" << (kill_ms - start_ms) << " ms";
  printf("agent killed at +%lld ms, restarted in %lld ms: %zu windows, longest gap %lld ms\n",
         static_cast<long long>(kill_ms - start_ms), static_cast<long long>(restart_ms - kill_ms), starts.size(),
         static_cast<long long>(gap));
}

// The server stalls (SIGSTOP: an upload hangs in flight, nothing is
// answered) while the agent makes windows; then the agent is killed with
// SIGKILL, the server resumes and a new agent starts on the same state
// directory. Each window was written to the spool when it was made, so the
// windows of the stall all arrive: no hole before the window in progress at
// the kill.
TEST_F(AgentServerTest, AgentKilledWhileTheServerStallsLosesNoWindowItMade) {
  workload_ = StartProcess({kProgs + "/cpu_split", "60"});
  StartAgent();
  std::this_thread::sleep_for(std::chrono::seconds(3 * kUploadSeconds + 2));  // the agent is streaming
  const int64_t stall_ms = NowMs();
  ASSERT_EQ(kill(server_->pid(), SIGSTOP), 0);
  std::this_thread::sleep_for(std::chrono::seconds(5 * kUploadSeconds));  // five windows made meanwhile
  const int64_t kill_ms = NowMs();
  KillAgent();
  ASSERT_EQ(kill(server_->pid(), SIGCONT), 0);
  StartAgent();
  std::this_thread::sleep_for(std::chrono::seconds(3 * kUploadSeconds));
  const int64_t end_ms = NowMs() - 2000 * kUploadSeconds;
  ASSERT_TRUE(WaitForData(end_ms, 30)) << "no data after the restart";
  EXPECT_EQ(StopAgent(), 0);
  // From before the stall to the last window the killed agent had made (the
  // one in progress at the kill is lost): no hole.
  const std::vector<int64_t> starts = WindowStarts(stall_ms - 4000 * kUploadSeconds, kill_ms);
  const int64_t gap = LongestGapMs(starts, stall_ms - 3000 * kUploadSeconds, kill_ms - 1000 * kUploadSeconds - 500);
  EXPECT_LE(gap, 1000 * kUploadSeconds + 1500) << "windows made while the server stalled for "
                                                << (kill_ms - stall_ms) << " ms were lost with the agent";
  printf("server stalled %lld ms, agent killed: %zu windows, longest gap %lld ms\n",
         static_cast<long long>(kill_ms - stall_ms), starts.size(), static_cast<long long>(gap));
}

}  // namespace
}  // namespace warpscope::testing
