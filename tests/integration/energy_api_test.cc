// GET /api/v1/energy and the gpu_energy profile type through a real
// warpscope-server on loopback (embedded store), fed hand-built batches: a
// scripted energy counter, power and utilization for one GPU, power only for
// another, two processes' SM shares, their kernels' GPU time under two call
// sites, and CPU samples; the answer's joules, shares, series, CO₂ and cost,
// and the joules per stack, against the script's truth.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

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
    const int64_t t = kT0 + s * kSec;
    // The counter as read at t: joules up to the start of second s.
    if (s % 10 == 3) f.AddMetric("gpu_energy", "joules", gpu0, counter, t);  // the agent's every 10th second
    counter += Watts(s);
    f.AddMetric("gpu_power", "watts", gpu0, Watts(s), t);
    f.AddMetric("gpu_utilization", "percent", gpu0, Busy(s) ? 80 : 0, t);
    f.AddMetric("gpu_power", "watts", gpu1, 50, t);  // no counter on GPU 1
    f.AddMetric("gpu_utilization", "percent", gpu1, 0, t);
    if (Busy(s)) {
      // GPU time each busy second: the trainer's two call sites 600 + 200
      // ms, the evaluator's 200 ms (its pod's).
      const Labels trainer = {{"node", "a"}, {"pid", "300"}, {"comm", "trainer"}, {"device", "0"},
                              {"namespace", "ml"}, {"pod", "train-0"}};
      f.Add("py:train@t.py:1;gemm", trainer, 600'000'000, t, "gpu_time");
      f.Add("py:evaluate@t.py:2;add", trainer, 200'000'000, t, "gpu_time");
      f.Add("py:eval@e.py:3;conv", {{"node", "a"}, {"pid", "400"}, {"comm", "eval"}, {"device", "0"},
                                    {"namespace", "ml"}, {"pod", "eval-0"}},
            200'000'000, t, "gpu_time");
    }
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

// The server knows a counter reading's time to within its finest metric
// step over the padded range (here 22 ms) and takes the step's end, so the
// counter's joules are within this share of the script's.
constexpr double kTiming = 1e-4;

// The group with these labels, or null.
const json* Group(const json& answer, const json& labels) {
  for (const json& g : answer["groups"]) {
    if (g["labels"] == labels) return &g;
  }
  return nullptr;
}

TEST_F(EnergyApiTest, PerGpuFromTheCounterOrPowerWithBusyAndIdle) {
  const json j = Energy("&group_by=gpu");
  ASSERT_EQ(j["groups"].size(), 3u) << j.dump(2);
  const json& gpu0 = j["groups"][0];
  EXPECT_EQ(gpu0["labels"], json({{"gpu", "0"}, {"node", "a"}}));
  EXPECT_NEAR(gpu0["gpu_joules"].get<double>(), 12000, 12000 * kTiming);
  EXPECT_NEAR(gpu0["gpu_busy_joules"].get<double>(), 9000, 9000 * kTiming);
  EXPECT_NEAR(gpu0["gpu_idle_joules"].get<double>(), 3000, 3000 * kTiming);
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

TEST_F(EnergyApiTest, ProcessesGetTheirShareOfBusyJoulesByGpuTime) {
  // 30 busy seconds × 300 W = 9000 J, 800:200 ms of GPU time a second (the
  // SM readings' 3:1 would give 6750 and 2250).
  json j = Energy("&group_by=process");
  ASSERT_EQ(j["groups"].size(), 4u) << j.dump(2);
  EXPECT_EQ(j["groups"][0]["labels"], json({{"comm", "trainer"}, {"node", "a"}, {"pid", "300"}}));
  EXPECT_NEAR(j["groups"][0]["gpu_joules"].get<double>(), 7200, 7200 * kTiming);
  EXPECT_NEAR(j["groups"][0]["cpu_joules"].get<double>(), kCpuJoules, 1e-6);
  EXPECT_EQ(j["groups"][0]["gpu_apportioned_by"], "gpu_time");
  EXPECT_EQ(j["groups"][0]["cpu_source"], "coefficient");
  EXPECT_EQ(j["groups"][0]["estimated"], json::array({"gpu_joules", "cpu_joules", "co2_grams", "cost"}));
  // GPU 0's idle joules stay with it (3000 J), as GPU 1's.
  const json* gpu0 = Group(j, {{"gpu", "0"}, {"node", "a"}});
  ASSERT_NE(gpu0, nullptr) << j.dump(2);
  EXPECT_NEAR((*gpu0)["gpu_idle_joules"].get<double>(), 3000, 3000 * kTiming);
  const json* eval = Group(j, {{"comm", "eval"}, {"node", "a"}, {"pid", "400"}});
  ASSERT_NE(eval, nullptr) << j.dump(2);
  EXPECT_NEAR((*eval)["gpu_joules"].get<double>(), 1800, 1800 * kTiming);
  // A selector on a process: only its group, its share unchanged.
  j = Energy("&group_by=process&selector=" + UrlEncode("{pid=\"400\"}"));
  ASSERT_EQ(j["groups"].size(), 1u) << j.dump(2);
  EXPECT_NEAR(j["groups"][0]["gpu_joules"].get<double>(), 1800, 1800 * kTiming);
  // By pod.
  j = Energy("&group_by=pod");
  ASSERT_GE(j["groups"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["groups"][0]["labels"], json({{"namespace", "ml"}, {"node", "a"}, {"pod", "train-0"}}));
  EXPECT_NEAR(j["groups"][0]["gpu_joules"].get<double>(), 7200, 7200 * kTiming);
}

TEST_F(EnergyApiTest, SeriesStepsAddUpToTheTotals) {
  const json j = Energy("&group_by=gpu&step=10s");
  const json& steps = j["total"]["steps"];
  ASSERT_EQ(steps["t"].size(), 6u) << steps.dump();
  EXPECT_EQ(steps["step_ms"], 10'000);
  double gpu = 0, idle = 0, cpu = 0;
  for (size_t i = 0; i < 6; ++i) {
    gpu += steps["gpu_joules"][i].get<double>();
    idle += steps["gpu_idle_joules"][i].get<double>();
    cpu += steps["cpu_joules"][i].get<double>();
  }
  EXPECT_NEAR(gpu, 15000, 15000 * kTiming);
  EXPECT_NEAR(idle, 6000, 6000 * kTiming);
  EXPECT_NEAR(cpu, kCpuJoules, 1e-6);
  // GPU 0 busy in the first three steps (3000 J each), idle after (1000 J
  // each); one step's share of the timing error is up to 22 ms of the 10 s
  // between readings.
  const json& gpu0 = j["groups"][0]["steps"];
  EXPECT_NEAR(gpu0["gpu_busy_joules"][0].get<double>(), 3000, 3000 * 0.003);
  EXPECT_NEAR(gpu0["gpu_idle_joules"][5].get<double>(), 1000, 1000 * 0.003);
}

// Joules per leaf frame of a collapsed gpu_energy profile (microjoules).
std::map<std::string, double> JoulesByLeaf(const std::string& collapsed) {
  std::map<std::string, double> joules;
  std::istringstream lines(collapsed);
  for (std::string line; std::getline(lines, line);) {
    const size_t space = line.rfind(' ');
    const size_t leaf = line.rfind(';', space);
    joules[line.substr(leaf + 1, space - leaf - 1)] += std::stod(line.substr(space + 1)) / 1e6;
  }
  return joules;
}

// The gpu_energy profile: each stack's GPU time × 0.3 µJ/ns (300 W over one
// GPU-second a second), in microjoules.
TEST_F(EnergyApiTest, GpuEnergyProfileGivesJoulesPerStack) {
  const std::string range = "&from=" + std::to_string((kT0 + 30 * kSec) / 1'000'000) +
                            "&to=" + std::to_string((kT0 + 90 * kSec) / 1'000'000);
  const json types = GetApiJson(server_->port(), "/api/v1/types", kToken);
  EXPECT_NE(types.dump().find("\"gpu_energy\""), std::string::npos) << types.dump();
  const HttpResult r = HttpGet(server_->port(), "/api/v1/profile?type=gpu_energy&format=collapsed" + range, kToken);
  ASSERT_EQ(r.status, 200) << r.body;
  std::map<std::string, double> joules = JoulesByLeaf(r.body);
  EXPECT_NEAR(joules["gemm"], 5400, 5400 * kTiming) << r.body;
  EXPECT_NEAR(joules["add"], 1800, 1800 * kTiming) << r.body;
  EXPECT_NEAR(joules["conv"], 1800, 1800 * kTiming) << r.body;
  // A selector keeps the weights of the whole GPU.
  const HttpResult eval = HttpGet(server_->port(),
                                  "/api/v1/profile?type=gpu_energy&format=collapsed" + range +
                                      "&selector=" + UrlEncode("{comm=\"eval\"}"),
                                  kToken);
  ASSERT_EQ(eval.status, 200) << eval.body;
  joules = JoulesByLeaf(eval.body);
  EXPECT_NEAR(joules["conv"], 1800, 1800 * kTiming) << eval.body;
  EXPECT_EQ(joules.count("gemm"), 0u) << eval.body;
}

TEST_F(EnergyApiTest, Co2AndCostFromTheQueryOrTheDefaults) {
  const double kwh = (12000 + 3000 + kCpuJoules) / 3.6e6;
  json j = Energy("");
  ASSERT_EQ(j["groups"].size(), 1u) << j.dump(2);
  EXPECT_NEAR(j["groups"][0]["total_joules"].get<double>(), kwh * 3.6e6, kwh * 3.6e6 * kTiming);
  // CO₂ and cost: exactly the answer's kWh × the coefficients.
  const double answer_kwh = j["groups"][0]["kwh"].get<double>();
  EXPECT_NEAR(j["groups"][0]["co2_grams"].get<double>(), answer_kwh * 1.2 * 379, 1e-12);
  EXPECT_NEAR(j["groups"][0]["cost"].get<double>(), answer_kwh * 0.15, 1e-12);
  EXPECT_EQ(j["groups"][0]["gpu_source"], "energy_counter+power_integration");
  j = Energy("&pue=1.5&carbon_intensity=100&price_per_kwh=0.4&cpu_watts_per_core=0");
  EXPECT_EQ(j["coefficients"], json({{"pue", 1.5}, {"carbon_intensity", 100.0}, {"price_per_kwh", 0.4},
                                     {"cpu_watts_per_core", 0.0}, {"idle_utilization_percent", 1.0}}));
  EXPECT_NEAR(j["total"]["co2_grams"].get<double>(), j["total"]["kwh"].get<double>() * 1.5 * 100, 1e-12);
  EXPECT_NEAR(j["total"]["cost"].get<double>(), j["total"]["kwh"].get<double>() * 0.4, 1e-12);
  EXPECT_NEAR(j["total"]["kwh"].get<double>(), 15000 / 3.6e6, 15000 / 3.6e6 * kTiming);
  EXPECT_EQ(HttpGet(server_->port(), "/api/v1/energy?pue=0.5", kToken).status, 400);
  EXPECT_EQ(HttpGet(server_->port(), "/api/v1/energy?group_by=container", kToken).status, 400);
  // The server's flags set the defaults; a query's parameters still win.
  Start({"--pue", "1.1", "--carbon-intensity", "200", "--cpu-watts-per-core", "0"});
  j = Energy("");
  EXPECT_NEAR(j["total"]["co2_grams"].get<double>(), j["total"]["kwh"].get<double>() * 1.1 * 200, 1e-12);
  j = Energy("&pue=2");
  EXPECT_NEAR(j["total"]["co2_grams"].get<double>(), j["total"]["kwh"].get<double>() * 2 * 200, 1e-12);
}

}  // namespace
}  // namespace warpscope::testing
