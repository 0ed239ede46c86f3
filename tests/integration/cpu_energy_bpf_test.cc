// CPU energy from RAPL through the whole pipeline, on a machine without
// RAPL: the real agent (`warpscope-agent run`, BPF, root) reads a powercap
// tree the test writes and advances (--powercap-root), and streams to a
// real warpscope-server on loopback; the test reads the stored cpu_energy
// and dram_energy series and the agent's Prometheus endpoint.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "tests/integration/agent_process.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"
#include "tests/support/powercap_fixture.h"
#include "tests/support/prometheus_parse.h"

namespace warpscope::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr char kToken[] = "cpu-energy-token";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class CpuEnergyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    auto s = ServerProcess::Start(WS_SERVER_BIN, dir_ + "/data", {"--token", kToken});
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
    process_ = StartProcess({"/bin/sleep", "60"});  // the one process profiled: keeps the agent's work small
  }
  void TearDown() override {
    if (agent_) agent_->Stop();
    kill(process_, SIGKILL);
    WaitProcess(process_);
    server_.reset();
    RunProcess({"rm", "-rf", dir_});
  }
  void StartAgent(const std::string& powercap_root) {
    metrics_port_ = FreePort();
    agent_ = std::make_unique<AgentProcess>(
        WS_AGENT_BIN,
        std::vector<std::string>{"--server", server_->url(), "--token", kToken, "--upload-interval", "1s",
                                 "--state-dir", dir_ + "/agent", "--node-name", "rapl-node", "--no-gpu-metrics",
                                 "--no-gpu-time", "--powercap-root", powercap_root, "--metrics-listen",
                                 "127.0.0.1:" + std::to_string(metrics_port_), "--pid", std::to_string(process_)},
        dir_ + "/agent.log");
    ASSERT_TRUE(agent_->started());
  }
  json GetJson(const std::string& path) { return GetApiJson(server_->port(), path, kToken); }
  // One step over everything since the test began: zone -> [t, min, max, avg].
  std::map<std::string, json> StepByZone(const std::string& metric) {
    json answer = GetJson("/api/v1/metrics?name=" + metric + "&from=" + std::to_string(start_ms_) +
                          "&to=now&step=1h&group_by=zone");
    std::map<std::string, json> out;
    for (const json& s : answer["series"]) {
      if (!s["points"].empty()) out[s["labels"].value("zone", "")] = s["points"][0];
    }
    if (!answer["series"].empty()) {
      EXPECT_EQ(answer["unit"], "joules");
    }
    return out;
  }
  template <typename Pred>
  bool WaitFor(Pred pred, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(200ms);
    }
    return true;
  }

  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
  pid_t process_ = -1;
  std::unique_ptr<AgentProcess> agent_;
  int metrics_port_ = 0;
  const int64_t start_ms_ = NowMs() - 60'000;
};

// Two packages (package-0's counter wraps during the test), package-0's
// DRAM and a psys zone that must not be counted; the stored counters grow
// by exactly the joules the test adds.
TEST_F(CpuEnergyTest, ScriptedRaplJoulesReachTheStoreAndPrometheus) {
  constexpr uint64_t kMax = PowercapFixture::kIntelMaxRangeUj;
  PowercapFixture f(dir_ + "/powercap");
  uint64_t pkg0 = kMax - 30'000'000, pkg1 = 5'000'000, dram = 1'000'000, psys = 7'000'000;
  f.AddZone("intel-rapl:0", "package-0", pkg0);
  f.AddZone("intel-rapl:0:0", "dram", dram);
  f.AddZone("intel-rapl:0:1", "core", 0);
  f.AddZone("intel-rapl:1", "package-1", pkg1);
  f.AddZone("intel-rapl:2", "psys", psys);
  StartAgent(f.root());
  // The origin: the first readings stored, before the counters move.
  ASSERT_TRUE(WaitFor([&] { return StepByZone("cpu_energy").size() == 2; }, 30s)) << agent_->Log();
  const std::map<std::string, json> before = StepByZone("cpu_energy");
  EXPECT_DOUBLE_EQ(before.at("package-0")[1].get<double>(), pkg0 / 1e6);
  EXPECT_DOUBLE_EQ(before.at("package-1")[1].get<double>(), pkg1 / 1e6);

  // 4 s at 50 W (package-0), 20 W (package-1), 5 W (DRAM), 99 W (psys), in 250 ms steps.
  double added0 = 0, added1 = 0, added_dram = 0;
  for (int i = 0; i < 16; ++i) {
    std::this_thread::sleep_for(250ms);
    pkg0 += 12'500'000;
    if (pkg0 > kMax) pkg0 -= kMax;  // the hardware counter wraps
    pkg1 += 5'000'000;
    dram += 1'250'000;
    psys += 24'750'000;
    added0 += 12.5;
    added1 += 5;
    added_dram += 1.25;
    f.SetEnergy("intel-rapl:0", pkg0);
    f.SetEnergy("intel-rapl:1", pkg1);
    f.SetEnergy("intel-rapl:0:0", dram);
    f.SetEnergy("intel-rapl:2", psys);
  }
  ASSERT_LT(pkg0, 200'000'000u) << "package-0 wrapped";
  const double want0 = before.at("package-0")[1].get<double>() + added0;
  ASSERT_TRUE(WaitFor([&] {
    auto s = StepByZone("cpu_energy");
    return s.count("package-0") && s["package-0"][2].get<double>() >= want0 - 1e-6;
  }, 10s)) << StepByZone("cpu_energy")["package-0"].dump() << "\n" << agent_->Log();

  // Prometheus shows the same counters while the agent runs.
  HttpResult r = HttpGet(metrics_port_, "/metrics");
  ASSERT_EQ(r.status, 200);
  const json parsed = ParsePrometheusText(r.body);
  ASSERT_FALSE(parsed.contains("error")) << parsed.dump() << "\n" << r.body;
  auto families = PrometheusFamilies(parsed);
  std::map<std::string, double> prom;
  for (const json& s : families["warpscope_cpu_energy_joules"]["samples"]) {
    prom[s["labels"]["zone"].get<std::string>()] = s["value"].get<double>();
    EXPECT_EQ(s["labels"]["Hostname"], "rapl-node");
  }
  EXPECT_NEAR(prom["package-0"], want0, 1e-6);
  EXPECT_EQ(prom.size(), 2u) << r.body;
  EXPECT_EQ(families["warpscope_dram_energy_joules"]["samples"][0]["labels"]["zone"], "package-0/dram") << r.body;
  EXPECT_EQ(families["warpscope_agent_cpu_energy_zones"]["samples"][0]["value"], 3.0);

  EXPECT_EQ(agent_->Stop(), 0) << agent_->Log();
  const std::map<std::string, json> cpu = StepByZone("cpu_energy");
  EXPECT_EQ(cpu.size(), 2u) << "package-0 and package-1; psys is not a CPU zone";
  auto grew = [](const json& step) { return step[2].get<double>() - step[1].get<double>(); };
  EXPECT_NEAR(grew(cpu.at("package-0")), added0, added0 * 0.01) << "across the wraparound";
  EXPECT_NEAR(grew(cpu.at("package-1")), added1, added1 * 0.01);
  const std::map<std::string, json> dram_steps = StepByZone("dram_energy");
  ASSERT_EQ(dram_steps.size(), 1u);
  EXPECT_NEAR(grew(dram_steps.at("package-0/dram")), added_dram, added_dram * 0.01);
  EXPECT_EQ(agent_->Log().find("cannot read"), std::string::npos) << agent_->Log();
}

// No powercap tree (a VM): one line says CPU energy will be estimated, no
// series; --powercap-root none says nothing.
TEST_F(CpuEnergyTest, NoTreeSaysOnceThatCpuEnergyIsEstimated) {
  StartAgent(dir_ + "/no-powercap");
  ASSERT_TRUE(WaitFor([&] { return GetJson("/api/v1/status")["ingested_batches"].get<int64_t>() >= 1; }, 30s))
      << agent_->Log();
  EXPECT_EQ(agent_->Stop(), 0);
  const std::string log = agent_->Log();
  const size_t first = log.find("CPU energy will be estimated");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("CPU energy will be estimated", first + 1), std::string::npos) << "said once\n" << log;
  EXPECT_NE(log.find("no powercap tree at " + dir_ + "/no-powercap"), std::string::npos) << log;
  EXPECT_TRUE(StepByZone("cpu_energy").empty());
}

}  // namespace
}  // namespace warpscope::testing
