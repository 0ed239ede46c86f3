#include "query/energy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "query/cpu_coefficients.h"

namespace warpscope::query {
namespace {

using nlohmann::json;

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSec;
// The grid: 1 s steps from kT0; the range is its steps 20..79 (60 s).
constexpr int64_t kPadSteps = 20;
constexpr int64_t kRangeSteps = 60;
constexpr int64_t kGridSteps = kRangeSteps + 2 * kPadSteps;

const storage::Labels kGpu0 = {{"gpu", "0"}, {"node", "n1"}};

EnergyInputs Inputs() {
  EnergyInputs in;
  in.step_ns = kSec;
  in.read_from_ns = kT0;
  in.read_to_ns = kT0 + kGridSteps * kSec;
  in.from_ns = kT0 + kPadSteps * kSec;
  in.to_ns = in.from_ns + kRangeSteps * kSec;
  return in;
}

// A metric with value(step) at each grid step where `has(step)`.
storage::MetricSeries Metric(storage::Labels labels, const std::function<double(int64_t)>& value,
                             const std::function<bool(int64_t)>& has = [](int64_t) { return true; }) {
  storage::MetricSeries s;
  s.labels = std::move(labels);
  for (int64_t i = 0; i < kGridSteps; ++i) {
    if (!has(i)) continue;
    const double v = value(i);
    s.points.push_back({kT0 + i * kSec, v, v, v, 1});
  }
  return s;
}

// Watts during grid step i: uneven on purpose.
double Watts(int64_t i) { return 150 + 100 * std::sin(static_cast<double>(i) * 0.7) + static_cast<double>(i % 7) * 3; }

// The counter as NVML reads it late in step i: joules since load up to the
// step's end.
double Counter(int64_t i) {
  double c = 123456.789;
  for (int64_t j = 0; j <= i; ++j) c += Watts(j);
  return c;
}

double TruthOverRange() {
  double truth = 0;
  for (int64_t i = kPadSteps; i < kPadSteps + kRangeSteps; ++i) truth += Watts(i);
  return truth;
}

json Render(const EnergyInputs& in, EnergyGrouping grouping, const EnergyCoefficients& c = {}) {
  return json::parse(RenderEnergyJson(ComputeEnergy(in, grouping, c)));
}

TEST(EnergyTest, CounterReadEveryTenSecondsGivesTheRangesJoulesByPower) {
  EnergyInputs in = Inputs();
  // Read every 10 s at steps 3, 13, ...: no reading on the range's edges.
  in.gpu_energy = {Metric(kGpu0, Counter, [](int64_t i) { return i % 10 == 3; })};
  in.gpu_power = {Metric(kGpu0, Watts)};
  const EnergyAnswer a = ComputeEnergy(in, EnergyGrouping::kGpu, {});
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_NEAR(a.groups[0].gpu_joules, TruthOverRange(), 1e-9 * TruthOverRange());
  EXPECT_EQ(a.groups[0].gpu_sources, std::vector<std::string>{kEnergyCounter});
  EXPECT_EQ(a.groups[0].labels, kGpu0);
  EXPECT_DOUBLE_EQ(a.groups[0].gpu_busy_joules, a.groups[0].gpu_joules);  // no utilization read: busy
}

TEST(EnergyTest, CounterReadEverySecondWithoutPowerIsExact) {
  EnergyInputs in = Inputs();
  in.gpu_energy = {Metric(kGpu0, Counter)};
  const json j = Render(in, EnergyGrouping::kGpu);
  EXPECT_NEAR(j["groups"][0]["gpu_joules"].get<double>(), TruthOverRange(), 1e-9);
  EXPECT_EQ(j["groups"][0]["gpu_source"], "energy_counter");
  EXPECT_EQ(j["groups"][0]["measured"], json::array({"gpu_joules"}));
}

TEST(EnergyTest, ResetStartsANewSegment) {
  EnergyInputs in = Inputs();
  // 100 J per second; the driver reloads in step 50 (the range's 31st):
  // the counter restarts from 5 J.
  auto counter = [](int64_t i) { return i < 50 ? 9000.0 + 100.0 * static_cast<double>(i) : 5.0 + 100.0 * static_cast<double>(i - 50); };
  in.gpu_energy = {Metric(kGpu0, counter)};
  const EnergyAnswer without_power = ComputeEnergy(in, EnergyGrouping::kGpu, {});
  // The interval across the reset is not counted: 59 of the 60 seconds.
  EXPECT_NEAR(without_power.groups[0].gpu_joules, 5900, 1e-9);
  EXPECT_EQ(without_power.groups[0].gpu_sources, std::vector<std::string>{kEnergyCounter});
  // With power read, the second across the reset is integrated from it.
  in.gpu_power = {Metric(kGpu0, [](int64_t) { return 100.0; })};
  const json j = Render(in, EnergyGrouping::kGpu);
  EXPECT_NEAR(j["groups"][0]["gpu_joules"].get<double>(), 6000, 1e-9);
  EXPECT_EQ(j["groups"][0]["gpu_source"], "energy_counter+power_integration");
}

TEST(EnergyTest, WithoutTheCounterPowerIsIntegrated) {
  EnergyInputs in = Inputs();
  in.gpu_power = {Metric(kGpu0, [](int64_t) { return 250.0; })};
  json j = Render(in, EnergyGrouping::kGpu);
  EXPECT_NEAR(j["groups"][0]["gpu_joules"].get<double>(), 15000, 1e-9);
  EXPECT_EQ(j["groups"][0]["gpu_source"], "power_integration");
  EXPECT_EQ(j["groups"][0]["measured"], json::array({"gpu_joules"}));
  // A range ending mid-step counts the part of the step inside it.
  in.to_ns -= kSec / 2;
  j = Render(in, EnergyGrouping::kGpu);
  EXPECT_NEAR(j["groups"][0]["gpu_joules"].get<double>(), 14875, 1e-9);
}

TEST(EnergyTest, StepsBelowOnePercentUtilizationAreIdle) {
  EnergyInputs in = Inputs();
  // Busy (80 %, 300 W) in the range's first 30 s, idle (0 %, 60 W) after;
  // one step at 0.5 % counts as idle too.
  auto busy = [](int64_t i) { return i < kPadSteps + 30; };
  in.gpu_power = {Metric(kGpu0, [&](int64_t i) { return busy(i) ? 300.0 : 60.0; })};
  in.gpu_utilization = {Metric(kGpu0, [&](int64_t i) { return busy(i) ? 80.0 : (i == 70 ? 0.5 : 0.0); })};
  in.gpu_energy = {Metric(kGpu0, [&](int64_t i) {
    double c = 0;
    for (int64_t j = 0; j <= i; ++j) c += busy(j) ? 300 : 60;
    return c;
  })};
  const EnergyAnswer a = ComputeEnergy(in, EnergyGrouping::kNode, {});
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(a.groups[0].labels, (storage::Labels{{"node", "n1"}}));
  EXPECT_NEAR(a.groups[0].gpu_busy_joules, 9000, 1e-9);
  EXPECT_NEAR(a.groups[0].gpu_idle_joules, 1800, 1e-9);
  EXPECT_NEAR(a.groups[0].gpu_joules, 10800, 1e-9);
}

TEST(EnergyTest, ProcessesShareBusyJoulesBySmUtilizationAndIdleStaysWithTheGpu) {
  EnergyInputs in = Inputs();
  auto busy = [](int64_t i) { return i < kPadSteps + 40; };
  in.gpu_power = {Metric(kGpu0, [&](int64_t i) { return busy(i) ? 250.0 : 50.0; })};
  in.gpu_utilization = {Metric(kGpu0, [&](int64_t i) { return busy(i) ? 90.0 : 0.0; })};
  // Per-process readings every 5 s while busy: 60 % and 20 % of the SMs.
  auto every5 = [&](int64_t i) { return i % 5 == 0 && busy(i); };
  in.process_sm = {
      Metric({{"comm", "train"}, {"gpu", "0"}, {"node", "n1"}, {"pid", "10"}}, [](int64_t) { return 60.0; }, every5),
      Metric({{"comm", "eval"}, {"gpu", "0"}, {"node", "n1"}, {"pid", "20"}}, [](int64_t) { return 20.0; }, every5)};
  const json j = Render(in, EnergyGrouping::kProcess);
  ASSERT_EQ(j["groups"].size(), 3u) << j.dump(2);
  // 40 s × 250 W busy = 10 kJ, 3:1; 20 s × 50 W idle = 1 kJ on the GPU.
  EXPECT_EQ(j["groups"][0]["labels"], json({{"comm", "train"}, {"node", "n1"}, {"pid", "10"}}));
  EXPECT_NEAR(j["groups"][0]["gpu_joules"].get<double>(), 7500, 1e-9);
  EXPECT_EQ(j["groups"][0]["estimated"][0], "gpu_joules");
  EXPECT_EQ(j["groups"][1]["labels"], json({{"comm", "eval"}, {"node", "n1"}, {"pid", "20"}}));
  EXPECT_NEAR(j["groups"][1]["gpu_joules"].get<double>(), 2500, 1e-9);
  EXPECT_EQ(j["groups"][2]["labels"], json({{"gpu", "0"}, {"node", "n1"}}));
  EXPECT_NEAR(j["groups"][2]["gpu_idle_joules"].get<double>(), 1000, 1e-9);
  EXPECT_NEAR(j["groups"][2]["gpu_busy_joules"].get<double>(), 0, 1e-9);
  EXPECT_NEAR(j["total"]["gpu_joules"].get<double>(), 11000, 1e-9);
}

TEST(EnergyTest, CpuJoulesFromSamplesTimesWattsPerCore) {
  EnergyInputs in = Inputs();
  in.cpu_period_ns = kSec / 20;  // 20 Hz
  storage::Series s;
  s.labels = {{"comm", "train"}, {"node", "n1"}, {"pid", "10"}};
  s.points = {{in.from_ns, 1200}};  // 60 core-seconds
  in.cpu = {s};
  EnergyCoefficients c;
  c.cpu_watts_per_core = 10;
  json j = Render(in, EnergyGrouping::kProcess, c);
  EXPECT_NEAR(j["groups"][0]["cpu_joules"].get<double>(), 600, 1e-9);
  EXPECT_EQ(j["groups"][0]["estimated"][0], "cpu_joules");
  EXPECT_EQ(j["coefficients"]["cpu_watts_per_core"], 10.0);
  j = Render(in, EnergyGrouping::kNode);
  EXPECT_EQ(j["groups"][0]["labels"], json({{"node", "n1"}}));
  EXPECT_NEAR(j["groups"][0]["cpu_joules"].get<double>(), 420, 1e-9);  // the default 7 W
}

TEST(EnergyTest, Co2AndCostFromTheCoefficients) {
  EnergyInputs in = Inputs();
  in.gpu_power = {Metric(kGpu0, [](int64_t) { return 600.0; })};  // 36 kJ = 0.01 kWh
  json j = Render(in, EnergyGrouping::kGpu);
  EXPECT_NEAR(j["total"]["kwh"].get<double>(), 0.01, 1e-12);
  EXPECT_NEAR(j["groups"][0]["co2_grams"].get<double>(), 0.01 * 1.2 * 379, 1e-9);  // defaults
  EXPECT_NEAR(j["groups"][0]["cost"].get<double>(), 0.01 * 0.15, 1e-12);
  EXPECT_EQ(j["coefficients"]["pue"], 1.2);
  EXPECT_EQ(j["coefficients"]["carbon_intensity"], 379.0);
  EnergyCoefficients c;
  c.pue = 1.5;
  c.carbon_intensity = 50;
  c.price_per_kwh = 0.3;
  j = Render(in, EnergyGrouping::kGpu, c);
  EXPECT_NEAR(j["groups"][0]["co2_grams"].get<double>(), 0.01 * 1.5 * 50, 1e-9);
  EXPECT_NEAR(j["total"]["co2_grams"].get<double>(), 0.01 * 1.5 * 50, 1e-9);
  EXPECT_NEAR(j["groups"][0]["cost"].get<double>(), 0.01 * 0.3, 1e-12);
  EXPECT_EQ(j["coefficients"]["pue"], 1.5);
  EXPECT_EQ(j["from"], in.from_ns / 1'000'000);
}

// RAPL: a package counter read every second (100 W) and a DRAM counter
// (10 W) make the node's CPU joules measured; its processes share them by
// their CPU samples among every process sampled on the node.
TEST(EnergyTest, RaplCountersAreMeasuredAndSplitBySamples) {
  EnergyInputs in = Inputs();
  const storage::Labels package = {{"node", "n1"}, {"zone", "package-0"}};
  in.cpu_energy = {Metric(package, [](int64_t i) { return 5e4 + 100.0 * static_cast<double>(i + 1); })};
  in.dram_energy = {Metric({{"node", "n1"}, {"zone", "package-0/dram"}},
                           [](int64_t i) { return 10.0 * static_cast<double>(i + 1); })};
  in.cpu_period_ns = kSec / 20;
  in.node_cpu_period_ns = kSec / 20;
  storage::Series train;
  train.labels = {{"comm", "train"}, {"namespace", ""}, {"node", "n1"}, {"pid", "10"}, {"pod", ""}};
  train.points = {{in.from_ns, 600}};  // 30 core-seconds
  in.cpu = {train};
  storage::Series node;
  node.labels = {{"node", "n1"}};
  node.points = {{in.from_ns, 1200}};  // the node's 60 core-seconds, every process
  in.node_cpu = {node};
  json j = Render(in, EnergyGrouping::kNode);
  ASSERT_EQ(j["groups"].size(), 1u) << j.dump(2);
  EXPECT_NEAR(j["groups"][0]["cpu_joules"].get<double>(), 6000, 1e-9);
  EXPECT_NEAR(j["groups"][0]["dram_joules"].get<double>(), 600, 1e-9);
  EXPECT_EQ(j["groups"][0]["cpu_source"], "rapl");
  EXPECT_EQ(j["groups"][0]["measured"], json::array({"cpu_joules", "dram_joules"}));
  EXPECT_NEAR(j["total"]["total_joules"].get<double>(), 6600, 1e-9);
  j = Render(in, EnergyGrouping::kProcess);
  ASSERT_EQ(j["groups"].size(), 1u) << j.dump(2);
  EXPECT_NEAR(j["groups"][0]["cpu_joules"].get<double>(), 3000, 1e-9);
  EXPECT_NEAR(j["groups"][0]["dram_joules"].get<double>(), 300, 1e-9);
  EXPECT_EQ(j["groups"][0]["estimated"][0], "cpu_joules");
  // Without RAPL the coefficient: estimated, and said so.
  in.cpu_energy.clear();
  in.dram_energy.clear();
  j = Render(in, EnergyGrouping::kNode);
  EXPECT_NEAR(j["groups"][0]["cpu_joules"].get<double>(), 30 * 7, 1e-9);
  EXPECT_EQ(j["groups"][0]["cpu_source"], "coefficient");
  EXPECT_EQ(j["groups"][0]["estimated"][0], "cpu_joules");
}

TEST(EnergyTest, DeviceOrdinalsMapToNvmlGpus) {
  EnergyInputs in = Inputs();
  auto gpu = [](const std::string& node, const std::string& index) {
    return Metric({{"gpu", index}, {"node", node}}, [](int64_t) { return 100.0; });
  };
  in.gpu_power = {gpu("n1", "0"), gpu("n1", "1"), gpu("n1", "2"), gpu("n1", "10"), gpu("n2", "5")};
  auto used = [](const std::string& pid, const std::string& index) {
    return Metric({{"gpu", index}, {"node", "n1"}, {"pid", pid}}, [](int64_t) { return 1.0; });
  };
  // pid 1 on GPU 2 only; pid 2 on GPUs 10 and 1 (CUDA's 0 and 1 in NVML's order).
  in.process_memory = {used("1", "2"), used("2", "10"), used("2", "1")};
  const DeviceMap map(in);
  EXPECT_EQ(map.Gpu("n1", "1", "0"), (GpuId{"n1", "2"}));
  EXPECT_EQ(map.Gpu("n1", "2", "0"), (GpuId{"n1", "1"}));
  EXPECT_EQ(map.Gpu("n1", "2", "1"), (GpuId{"n1", "10"}));
  EXPECT_EQ(map.Gpu("n1", "3", "1"), (GpuId{"n1", "1"}));  // NVML says nothing of pid 3
  EXPECT_EQ(map.Gpu("n2", "3", "0"), (GpuId{"n2", "5"}));  // the node's only GPU
  EXPECT_EQ(map.Gpu("n1", "3", "7"), std::nullopt);
  EXPECT_EQ(map.Gpu("n3", "3", "0"), std::nullopt);
}

// Joules per GPU nanosecond: busy joules of each 10 s window over the GPU
// time every process took on the GPU then.
TEST(EnergyTest, WeightsAreBusyJoulesPerGpuNanosecond) {
  EnergyInputs in = Inputs();
  in.gpu_power = {Metric(kGpu0, [](int64_t i) { return i < kPadSteps + 10 ? 400.0 : 100.0; })};
  in.gpu_utilization = {Metric(kGpu0, [](int64_t i) { return i < kPadSteps + 50 ? 90.0 : 0.0; })};
  auto process = [&](const std::string& pid, int64_t ns) {
    storage::Series s;
    s.labels = {{"device", "0"}, {"node", "n1"}, {"pid", pid}};
    for (int64_t k = 0; k < kRangeSteps; ++k) s.points.push_back({in.from_ns + k * kSec, ns});
    return s;
  };
  in.gpu_time = {process("1", 300'000'000), process("2", 100'000'000)};
  const EnergyWeights w(in);
  // First window: 4000 J over 4e9 ns; then 1000 J over 4e9 ns; idle after 50 s.
  EXPECT_NEAR(w.MicrojoulesPerNs("n1", "1", "0", in.from_ns + 3 * kSec), 1.0, 1e-12);
  EXPECT_NEAR(w.MicrojoulesPerNs("n1", "2", "0", in.from_ns + 15 * kSec), 0.25, 1e-12);
  EXPECT_EQ(w.MicrojoulesPerNs("n1", "2", "0", in.from_ns + 55 * kSec), 0);
  EXPECT_EQ(w.MicrojoulesPerNs("n1", "2", "1", in.from_ns + 15 * kSec), 0.25);  // the node's only GPU
  EXPECT_EQ(w.MicrojoulesPerNs("n2", "2", "0", in.from_ns + 15 * kSec), 0);
}

TEST(EnergyTest, RegionsGiveTheirIntensityAndTheirProvidersPue) {
  EnergyInputs in = Inputs();
  in.gpu_power = {Metric(kGpu0, [](int64_t) { return 600.0; }),  // 0.01 kWh each
                  Metric({{"gpu", "0"}, {"node", "n2"}}, [](int64_t) { return 600.0; })};
  in.node_region = {{"n1", "eu-north-1"}, {"n2", "my-dc"}};
  const RegionTable regions({{"my-dc", 100}});
  json j = json::parse(RenderEnergyJson(ComputeEnergy(in, EnergyGrouping::kNode, {}, regions)));
  ASSERT_EQ(j["groups"].size(), 2u) << j.dump(2);
  for (const json& g : j["groups"]) {
    if (g["labels"]["node"] == "n1") {
      EXPECT_EQ(g["region"], "eu-north-1");
      EXPECT_NEAR(g["carbon_intensity"].get<double>(), 8.8, 1e-9);  // Cloud Carbon Footprint's AWS Stockholm
      EXPECT_NEAR(g["pue"].get<double>(), 1.135, 1e-12);              // and its AWS PUE
      EXPECT_NEAR(g["co2_grams"].get<double>(), 0.01 * 1.135 * 8.8, 1e-9);
    } else {
      EXPECT_EQ(g["region"], "my-dc");
      EXPECT_NEAR(g["co2_grams"].get<double>(), 0.01 * 1.2 * 100, 1e-9);  // the server's table, the default PUE
    }
  }
  EXPECT_NEAR(j["total"]["co2_grams"].get<double>(), 0.01 * 1.135 * 8.8 + 0.01 * 1.2 * 100, 1e-9);
  // The query's values win over regions.
  EnergyCoefficients c;
  c.carbon_intensity = 50;
  c.carbon_intensity_given = true;
  j = json::parse(RenderEnergyJson(ComputeEnergy(in, EnergyGrouping::kNode, c, regions)));
  EXPECT_NEAR(j["total"]["co2_grams"].get<double>(), 0.01 * 1.135 * 50 + 0.01 * 1.2 * 50, 1e-9);
  // A region nobody knows: the defaults.
  in.node_region = {{"n1", "mars-1"}};
  j = json::parse(RenderEnergyJson(ComputeEnergy(in, EnergyGrouping::kNode, {}, regions)));
  EXPECT_NEAR(j["total"]["co2_grams"].get<double>(), 0.02 * 1.2 * 379, 1e-9);
}

TEST(EnergyTest, CpuFamiliesGiveTheirWattsUnlessTheNodeOrTheQuerySaysOtherwise) {
  EXPECT_EQ(CpuFamilyOf("Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz")->name, "Cascade Lake");
  EXPECT_EQ(CpuFamilyOf("Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz")->name, "Sky Lake");
  EXPECT_EQ(CpuFamilyOf("Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz")->name, "Broadwell");
  EXPECT_EQ(CpuFamilyOf("AMD EPYC 7R32")->name, "EPYC 2nd Gen");
  EXPECT_EQ(CpuFamilyOf("arm:0xd0c")->name, "Graviton2");
  EXPECT_FALSE(CpuFamilyOf("AMD EPYC 9654 96-Core Processor"));  // not in the table: the default
  EnergyInputs in = Inputs();
  in.cpu_period_ns = kSec;
  storage::Series s;
  s.labels = {{"comm", "train"}, {"node", "n1"}, {"pid", "10"}};
  s.points = {{in.from_ns, 100}};  // 100 core-seconds
  in.cpu = {s};
  in.node_cpu_model = {{"n1", "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz"}};
  json j = Render(in, EnergyGrouping::kNode);
  EXPECT_NEAR(j["groups"][0]["cpu_joules"].get<double>(), 397, 1e-9);
  EXPECT_EQ(j["groups"][0]["cpu_family"], "Cascade Lake");
  in.node_cpu_watts = {{"n1", 5}};  // the node's agent says 5 W
  j = Render(in, EnergyGrouping::kNode);
  EXPECT_NEAR(j["groups"][0]["cpu_joules"].get<double>(), 500, 1e-9);
  EnergyCoefficients c;
  c.cpu_watts_per_core = 2;
  c.cpu_watts_given = true;
  j = Render(in, EnergyGrouping::kNode, c);
  EXPECT_NEAR(j["groups"][0]["cpu_joules"].get<double>(), 200, 1e-9);
}

TEST(EnergyTest, NothingReadIsNoGroups) {
  const json j = Render(Inputs(), EnergyGrouping::kNode);
  EXPECT_TRUE(j["groups"].empty());
  EXPECT_EQ(j["total"]["total_joules"], 0.0);
}

}  // namespace
}  // namespace warpscope::query
