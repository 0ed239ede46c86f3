// GET /api/v1/energy through a real warpscope-server on loopback (embedded
// store), fed hand-built batches: a scripted energy counter, power and
// utilization for one GPU, power only for another, two processes' SM
// shares and CPU samples; the answer's joules, shares, CO₂ and cost against
// the script's truth.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/integration/agent_process.h"
#include "tests/integration/batch_factory.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

using nlohmann::json;
using Labels = std::vector<std::pair<std::string, std::string>>;

constexpr char kToken[] = "test-token-123";
constexpr int64_t kT0 = 1'790'000'000'000'000'000;  // a fixed time in the past
constexpr int64_t kSec = 1'000'000'000;
constexpr int kSeconds = 120;

// GPU 0 busy (80 %, 300 W) for the first 60 s, then idle (0 %, 100 W).
bool Busy(int s) { return s < 60; }
double Watts(int s) { return Busy(s) ? 300 : 100; }

BatchFactory Script() {
  BatchFactory f("agent-1", 1, kT0, kT0 + kSeconds * kSec);
  const Labels gpu0 = {{"node", "a"}, {"gpu", "0"}, {"uuid", "GPU-a-0"}};
  const Labels gpu1 = {{"node", "a"}, {"gpu", "1"}, {"uuid", "GPU-a-1"}};
  double counter = 1e6;  // joules since the driver loaded
  for (int s = 0; s < kSeconds; ++s) {
    counter += Watts(s);  // through the end of second s
    const int64_t t = kT0 + s * kSec;
    f.AddMetric("gpu_power", "watts", gpu0, Watts(s), t);
    f.AddMetric("gpu_utilization", "percent", gpu0, Busy(s) ? 80 : 0, t);
    if (s % 10 == 3) f.AddMetric("gpu_energy", "joules", gpu0, counter, t);  // the agent's every 10th second
    f.AddMetric("gpu_power", "watts", gpu1, 50, t);  // no counter on GPU 1
    f.AddMetric("gpu_utilization", "percent", gpu1, 0, t);
    if (s % 5 == 0 && Busy(s)) {
      f.AddMetric("gpu_process_sm_utilization", "percent",
                  {{"node", "a"}, {"pid", "300"}, {"comm", "trainer"}, {"gpu", "0"}}, 60, t);
      f.AddMetric("gpu_process_sm_utilization", "percent",
                  {{"node", "a"}, {"pid", "400"}, {"comm", "eval"}, {"gpu", "0"}}, 20, t);
    }
  }
  // 60 core-seconds of the trainer at 19 Hz.
  f.Add("main@trainer;step@trainer", {{"node", "a"}, {"pid", "300"}, {"comm", "trainer"}}, 19 * 60, kT0 + 40 * kSec);
  return f;
}

class EnergyApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    Start({});
    HttpResult r = PostBatch(server_->port(), Script().batch(), kToken);
    ASSERT_EQ(r.status, 200) << r.body;
  }
  void Start(const std::vector<std::string>& flags) {
    server_.reset();
    std::vector<std::string> args = {"--token", kToken, "--retention", "0"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto s = ServerProcess::Start(WS_SERVER_BIN, dir_ + "/data", args);
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
  }
  void TearDown() override {
    server_.reset();
    RunProcess({"rm", "-rf", dir_});
  }
  // [30 s, 90 s): 30 s busy, 30 s idle.
  json Energy(const std::string& more) {
    return GetApiJson(server_->port(),
                      "/api/v1/energy?from=" + std::to_string((kT0 + 30 * kSec) / 1'000'000) +
                          "&to=" + std::to_string((kT0 + 90 * kSec) / 1'000'000) + more,
                      kToken);
  }

  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
};

// The CPU's joules: 1140 samples of 1e9/19 ns (truncated) at 7 W.
constexpr double kCpuJoules = 1140.0 * (1'000'000'000 / 19) / 1e9 * 7;

TEST_F(EnergyApiTest, PerGpuFromTheCounterOrPowerWithBusyAndIdle) {
  const json j = Energy("&group_by=gpu");
  ASSERT_EQ(j["groups"].size(), 3u) << j.dump(2);
  const json& gpu0 = j["groups"][0];
  EXPECT_EQ(gpu0["labels"], json({{"gpu", "0"}, {"node", "a"}}));
  EXPECT_NEAR(gpu0["gpu_joules"].get<double>(), 12000, 1e-6);
  EXPECT_NEAR(gpu0["gpu_busy_joules"].get<double>(), 9000, 1e-6);
  EXPECT_NEAR(gpu0["gpu_idle_joules"].get<double>(), 3000, 1e-6);
  EXPECT_EQ(gpu0["gpu_source"], "energy_counter");
  EXPECT_EQ(gpu0["measured"], json::array({"gpu_joules"}));
  const json& gpu1 = j["groups"][1];
  EXPECT_EQ(gpu1["labels"], json({{"gpu", "1"}, {"node", "a"}}));
  EXPECT_NEAR(gpu1["gpu_idle_joules"].get<double>(), 3000, 1e-6);
  EXPECT_EQ(gpu1["gpu_source"], "power_integration");
  // The node's CPU in a group of its own.
  EXPECT_EQ(j["groups"][2]["labels"], json({{"node", "a"}}));
  EXPECT_NEAR(j["groups"][2]["cpu_joules"].get<double>(), kCpuJoules, 1e-6);
  EXPECT_EQ(j["groups"][2]["estimated"][0], "cpu_joules");
}

TEST_F(EnergyApiTest, ProcessesGetTheirShareOfBusyJoules) {
  const json j = Energy("&group_by=process");
  ASSERT_EQ(j["groups"].size(), 4u) << j.dump(2);
  EXPECT_EQ(j["groups"][0]["labels"], json({{"comm", "trainer"}, {"node", "a"}, {"pid", "300"}}));
  EXPECT_NEAR(j["groups"][0]["gpu_joules"].get<double>(), 6750, 1e-6);
  EXPECT_NEAR(j["groups"][0]["cpu_joules"].get<double>(), kCpuJoules, 1e-6);
  EXPECT_EQ(j["groups"][0]["estimated"], json::array({"gpu_joules", "cpu_joules", "co2_grams", "cost"}));
  // GPU 0's idle joules stay with it (3000 J), as GPU 1's.
  EXPECT_EQ(j["groups"][1]["labels"], json({{"gpu", "0"}, {"node", "a"}}));
  EXPECT_NEAR(j["groups"][1]["gpu_idle_joules"].get<double>(), 3000, 1e-6);
  EXPECT_EQ(j["groups"][3]["labels"], json({{"comm", "eval"}, {"node", "a"}, {"pid", "400"}}));
  EXPECT_NEAR(j["groups"][3]["gpu_joules"].get<double>(), 2250, 1e-6);
}

TEST_F(EnergyApiTest, Co2AndCostFromTheQueryOrTheDefaults) {
  const double kwh = (12000 + 3000 + kCpuJoules) / 3.6e6;
  json j = Energy("");
  ASSERT_EQ(j["groups"].size(), 1u) << j.dump(2);
  EXPECT_NEAR(j["groups"][0]["total_joules"].get<double>(), kwh * 3.6e6, 1e-6);
  EXPECT_NEAR(j["groups"][0]["co2_grams"].get<double>(), kwh * 1.2 * 379, 1e-9);
  EXPECT_NEAR(j["groups"][0]["cost"].get<double>(), kwh * 0.15, 1e-9);
  EXPECT_EQ(j["groups"][0]["gpu_source"], "energy_counter+power_integration");
  j = Energy("&pue=1.5&carbon_intensity=100&price_per_kwh=0.4&cpu_watts_per_core=0");
  EXPECT_EQ(j["coefficients"], json({{"pue", 1.5}, {"carbon_intensity", 100.0}, {"price_per_kwh", 0.4},
                                     {"cpu_watts_per_core", 0.0}, {"idle_utilization_percent", 1.0}}));
  EXPECT_NEAR(j["total"]["co2_grams"].get<double>(), 15000 / 3.6e6 * 1.5 * 100, 1e-9);
  EXPECT_NEAR(j["total"]["cost"].get<double>(), 15000 / 3.6e6 * 0.4, 1e-9);
  EXPECT_EQ(HttpGet(server_->port(), "/api/v1/energy?pue=0.5", kToken).status, 400);
  EXPECT_EQ(HttpGet(server_->port(), "/api/v1/energy?group_by=pod", kToken).status, 400);
  // The server's flags set the defaults; a query's parameters still win.
  Start({"--pue", "1.1", "--carbon-intensity", "200", "--cpu-watts-per-core", "0"});
  j = Energy("");
  EXPECT_NEAR(j["total"]["co2_grams"].get<double>(), 15000 / 3.6e6 * 1.1 * 200, 1e-9);
  j = Energy("&pue=2");
  EXPECT_NEAR(j["total"]["co2_grams"].get<double>(), 15000 / 3.6e6 * 2 * 200, 1e-9);
}

}  // namespace
}  // namespace warpscope::testing
