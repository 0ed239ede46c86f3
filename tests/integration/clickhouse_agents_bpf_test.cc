// The whole pipeline on ClickHouse, for real: two `warpscope-agent run`
// processes (BPF, root), each streaming to a different warpscope-server
// replica, both replicas on one ClickHouse database (a real clickhouse-server,
// storage/clickhouse/testing/clickhouse_instance.h). Each replica answers with
// both agents' data: the same answers from either replica, both nodes
// present, the nodes adding up to the whole, and the known 3:1 workload in
// its proportions on each node.
//
// Label `bpf` (root, run alone); needs clickhouse-server like the
// `clickhouse`-labelled tests (fails when it is missing;
// WARPSCOPE_SKIP_CLICKHOUSE=1 skips).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "storage/clickhouse/testing/clickhouse_instance.h"
#include "storage/clickhouse/testing/clickhouse_test_env.h"
#include "tests/integration/agent_process.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

using clickhouse::testing::ClickHouseInstance;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr char kToken[] = "agents-token";
const std::string kProgs = WS_TESTPROGS_DIR;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The hot and cold shares of the workload's samples in a collapsed profile.
struct Shares {
  int64_t total = 0, hot = 0, cold = 0;
};
Shares SharesOf(const std::string& collapsed) {
  Shares s;
  size_t begin = 0;
  while (begin < collapsed.size()) {
    size_t end = collapsed.find('\n', begin);
    if (end == std::string::npos) end = collapsed.size();
    const std::string line = collapsed.substr(begin, end - begin);
    begin = end + 1;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    const int64_t v = std::stoll(line.substr(space + 1));
    s.total += v;
    if (line.find("hot_three_quarters") != std::string::npos) s.hot += v;
    if (line.find("cold_one_quarter") != std::string::npos) s.cold += v;
  }
  return s;
}

TEST(ClickHouseAgentsTest, TwoAgentsTwoReplicasEachReplicaAnswersWithBoth) {
  WS_REQUIRE_CLICKHOUSE();
  const std::string dir = MakeTempDir();
  auto ch = ClickHouseInstance::Start(dir + "/clickhouse");
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  std::vector<std::unique_ptr<ServerProcess>> replicas;
  for (int i = 0; i < 2; ++i) {
    auto s = ServerProcess::Start(WS_SERVER_BIN, dir + "/replica-" + std::to_string(i),
                                  {"--token", kToken, "--storage", (*ch)->Url("ws_agents")});
    ASSERT_TRUE(s.ok()) << s.status().message();
    replicas.push_back(std::move(s).value());
  }
  const pid_t workload = StartProcess({kProgs + "/cpu_split", "30"});
  ASSERT_GT(workload, 0);
  const int64_t start_ms = NowMs();
  std::vector<std::unique_ptr<AgentProcess>> agents;
  for (int i = 0; i < 2; ++i) {
    const std::string node = i == 0 ? "node-a" : "node-b";
    agents.push_back(std::make_unique<AgentProcess>(
        WS_AGENT_BIN,
        std::vector<std::string>{"--server", replicas[i]->url(), "--token", kToken, "--frequency", "99",
                                 "--upload-interval", "2s", "--state-dir", dir + "/agent-" + node, "--node-name", node,
                                 "--pid", std::to_string(workload)},
        dir + "/agent-" + node + ".log"));
    ASSERT_TRUE(agents.back()->started());
  }
  std::this_thread::sleep_for(12s);
  for (auto& a : agents) EXPECT_EQ(a->Stop(), 0) << a->Log();  // each uploads its last window
  kill(workload, SIGKILL);
  WaitProcess(workload);

  const std::string range = "from=" + std::to_string(start_ms - 1000) + "&to=" + std::to_string(NowMs() + 1000);
  auto collapsed = [&](size_t replica, const std::string& selector) {
    HttpResult r = HttpGet(replicas[replica]->port(),
                           "/api/v1/profile?format=collapsed&" + range + "&selector=" + UrlEncode(selector), kToken);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.body;
  };
  const std::string pid_selector = "{pid=\"" + std::to_string(workload) + "\"}";
  const std::string all0 = collapsed(0, pid_selector), all1 = collapsed(1, pid_selector);
  EXPECT_EQ(SharesOf(all0).total, SharesOf(all1).total);
  EXPECT_EQ(all0.size(), all1.size()) << "the replicas answer differently";
  for (size_t r = 0; r < replicas.size(); ++r) {
    const Shares all = SharesOf(r == 0 ? all0 : all1);
    int64_t by_node = 0;
    for (const std::string node : {"node-a", "node-b"}) {
      const Shares s = SharesOf(collapsed(r, "{node=\"" + node + "\", pid=\"" + std::to_string(workload) + "\"}"));
      ASSERT_GT(s.total, 300) << "replica " << r << ": too few samples from " << node << " (its agent sent to replica "
                              << (node == "node-a" ? 0 : 1) << ")";
      EXPECT_NEAR(static_cast<double>(s.hot) / s.total, 0.75, 0.05) << node;
      EXPECT_NEAR(static_cast<double>(s.cold) / s.total, 0.25, 0.05) << node;
      by_node += s.total;
      printf("replica %zu, %s: %lld samples, hot %.3f cold %.3f\n", r, node.c_str(),
             static_cast<long long>(s.total), static_cast<double>(s.hot) / s.total,
             static_cast<double>(s.cold) / s.total);
    }
    EXPECT_EQ(by_node, all.total) << "replica " << r << ": the nodes do not add up to the whole";
    json targets = GetApiJson(replicas[r]->port(), "/api/v1/targets?" + range, kToken);
    std::set<std::string> nodes;
    for (const auto& n : targets["nodes"]) nodes.insert(n.value("node", ""));
    EXPECT_TRUE(nodes.count("node-a") && nodes.count("node-b")) << targets.dump();
  }
  replicas.clear();
  ch->reset();
  RunProcess({"rm", "-rf", dir});
}

}  // namespace
}  // namespace warpscope::testing
