#include "agent/export/prometheus_exposition.h"

#include <gtest/gtest.h>

#include "tests/support/prometheus_parse.h"

namespace warpscope {
namespace {

using nlohmann::json;

const std::vector<std::pair<std::string, std::string>> kGpu0 = {
    {"gpu", "0"}, {"gpu_name", "NVIDIA H200"}, {"pci_bus_id", "00000000:19:00.0"}, {"uuid", "GPU-0a1b"}};

std::vector<MetricReading> Readings() {
  auto process = kGpu0;
  process.emplace_back("comm", "python3 \"train\"");
  process.emplace_back("pid", "4242");
  std::sort(process.begin(), process.end());
  return {
      {"gpu_utilization", "percent", kGpu0, 87, 1},
      {"gpu_memory_used", "bytes", kGpu0, 10.0 * (1 << 30), 1},
      {"gpu_memory_total", "bytes", kGpu0, 141.0 * (1 << 30), 1},
      {"gpu_power", "watts", kGpu0, 312.25, 1},
      {"gpu_energy", "joules", kGpu0, 1234.5, 1},
      {"gpu_pcie_tx", "bytes_per_second", kGpu0, 2048, 1},
      {"gpu_sm_activity", "percent", kGpu0, 50, 1},
      {"gpu_process_sm_utilization", "percent", process, 30, 1},
      {"gpu_process_energy", "joules", process, 1500.25, 1},
      {"gpu_idle_energy", "joules", kGpu0, 80, 1},
      {"gpu_unattributed_energy", "joules", kGpu0, 0, 1},
      {"cpu_energy", "joules", {{"zone", "package-0"}}, 262143.5, 1},
      {"cpu_energy", "joules", {{"zone", "package-1"}}, 17, 1},
      {"dram_energy", "joules", {{"zone", "package-0/dram"}}, 12.5, 1},
  };
}

// The text as Prometheus' own parser reads it: names, types, DCGM labels, units.
TEST(PrometheusExpositionTest, DcgmNamesLabelsAndUnitsParse) {
  AgentHealth health;
  health.samples = 1900;
  health.counters = {{"drop_counts_map_full", 3}};
  health.gpu_disabled = {{"0", "gpu_ecc_corrected", "NOT_SUPPORTED"}};
  const std::string text = RenderPrometheusText(Readings(), health, "node-a");
  const json parsed = testing::ParsePrometheusText(text);
  ASSERT_FALSE(parsed.contains("error")) << parsed.dump() << "\n" << text;
  auto families = testing::PrometheusFamilies(parsed);

  auto one = [&](const std::string& family) -> json {
    EXPECT_TRUE(families.count(family)) << family << " missing in\n" << text;
    if (!families.count(family) || families[family]["samples"].empty()) return json();
    return families[family]["samples"][0];
  };
  json util = one("DCGM_FI_DEV_GPU_UTIL");
  EXPECT_EQ(families["DCGM_FI_DEV_GPU_UTIL"]["type"], "gauge");
  EXPECT_EQ(util["value"], 87.0);
  EXPECT_EQ(util["labels"], (json{{"gpu", "0"},
                                  {"UUID", "GPU-0a1b"},
                                  {"pci_bus_id", "00000000:19:00.0"},
                                  {"device", "nvidia0"},
                                  {"modelName", "NVIDIA H200"},
                                  {"Hostname", "node-a"}}));
  EXPECT_EQ(one("DCGM_FI_DEV_FB_USED")["value"], 10240.0);  // MiB
  EXPECT_EQ(one("DCGM_FI_DEV_FB_FREE")["value"], 131.0 * 1024);
  EXPECT_EQ(one("DCGM_FI_DEV_POWER_USAGE")["value"], 312.25);
  // Counters: the parser names the family without _total.
  EXPECT_EQ(one("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")["value"], 1234500.0);  // mJ
  EXPECT_EQ(one("DCGM_FI_DEV_PCIE_TX_THROUGHPUT")["value"], 2.0);              // KB/s
  EXPECT_EQ(one("DCGM_FI_PROF_SM_ACTIVE")["value"], 0.5);                      // ratio
  json process = one("warpscope_gpu_process_sm_utilization_percent");
  EXPECT_EQ(process["labels"]["pid"], "4242");
  EXPECT_EQ(process["labels"]["comm"], "python3 \"train\"") << "quotes escaped and read back";
  EXPECT_EQ(process["value"], 30.0);
  EXPECT_EQ(one("warpscope_agent_samples")["value"], 1900.0);
  EXPECT_EQ(families["warpscope_agent_samples"]["type"], "counter");
  EXPECT_EQ(one("warpscope_agent_events")["labels"]["event"], "drop_counts_map_full");
  EXPECT_EQ(one("warpscope_agent_gpu_metric_disabled")["labels"]["metric"], "gpu_ecc_corrected");
  EXPECT_EQ(one("warpscope_agent_gpu_metrics_enabled")["value"], 1.0);
}

// Energy counters in joules: GPU joules per process and idle with the GPU's
// DCGM labels, RAPL's per zone with the Hostname only.
TEST(PrometheusExpositionTest, EnergyCountersInJoules) {
  AgentHealth health;
  health.gpu_process_energy_series = 1;
  health.gpu_process_energy_dropped = 4;
  health.cpu_energy_zones = 3;
  const std::string text = RenderPrometheusText(Readings(), health, "node-a");
  const json parsed = testing::ParsePrometheusText(text);
  ASSERT_FALSE(parsed.contains("error")) << parsed.dump() << "\n" << text;
  auto families = testing::PrometheusFamilies(parsed);
  // The parser names a counter's family without _total.
  ASSERT_TRUE(families.count("warpscope_gpu_process_energy_joules")) << text;
  EXPECT_EQ(families["warpscope_gpu_process_energy_joules"]["type"], "counter");
  const json process = families["warpscope_gpu_process_energy_joules"]["samples"][0];
  EXPECT_EQ(process["name"], "warpscope_gpu_process_energy_joules_total");
  EXPECT_EQ(process["value"], 1500.25);
  EXPECT_EQ(process["labels"]["pid"], "4242");
  EXPECT_EQ(process["labels"]["UUID"], "GPU-0a1b");
  EXPECT_EQ(process["labels"]["device"], "nvidia0");
  EXPECT_EQ(families["warpscope_gpu_idle_energy_joules"]["samples"][0]["value"], 80.0);
  EXPECT_EQ(families["warpscope_gpu_idle_energy_joules"]["samples"][0]["labels"]["gpu"], "0");
  EXPECT_EQ(families["warpscope_gpu_unattributed_energy_joules"]["samples"][0]["value"], 0.0);
  const json cpu = families["warpscope_cpu_energy_joules"];
  EXPECT_EQ(cpu["type"], "counter");
  ASSERT_EQ(cpu["samples"].size(), 2u);
  EXPECT_EQ(cpu["samples"][0]["labels"], (json{{"zone", "package-0"}, {"Hostname", "node-a"}}));
  EXPECT_EQ(cpu["samples"][0]["value"], 262143.5);
  EXPECT_EQ(families["warpscope_dram_energy_joules"]["samples"][0]["labels"]["zone"], "package-0/dram");
  EXPECT_EQ(families["warpscope_dram_energy_joules"]["samples"][0]["value"], 12.5);
  EXPECT_EQ(families["warpscope_agent_gpu_process_energy_series"]["samples"][0]["value"], 1.0);
  EXPECT_EQ(families["warpscope_agent_gpu_process_energy_dropped"]["samples"][0]["value"], 4.0);
  EXPECT_EQ(families["warpscope_agent_cpu_energy_zones"]["samples"][0]["value"], 3.0);
}

TEST(PrometheusExpositionTest, NoGpuStillGivesAgentHealth) {
  AgentHealth health;
  health.gpu_off_reason = "libnvidia-ml.so.1 not found";
  const json parsed = testing::ParsePrometheusText(RenderPrometheusText({}, health, "n"));
  ASSERT_FALSE(parsed.contains("error")) << parsed.dump();
  auto families = testing::PrometheusFamilies(parsed);
  EXPECT_EQ(families.count("DCGM_FI_DEV_GPU_UTIL"), 0u);
  EXPECT_EQ(families["warpscope_agent_gpu_metrics_enabled"]["samples"][0]["value"], 0.0);
  EXPECT_EQ(families.count("process_resident_memory_bytes"), 1u);
}

// Counters named cache_bytes_X, cache_budget_bytes_X and cache_evictions_X
// become the cache families with cache="X"; the others stay events (the
// parser names a counter family without its _total).
TEST(PrometheusExpositionTest, CacheCountersBecomeMemoryFamiliesByCache) {
  AgentHealth health;
  health.counters = {{"symbol_tables_loaded", 3},
                     {"cache_bytes_symbol_tables", 1000},
                     {"cache_budget_bytes_symbol_tables", 4096},
                     {"cache_evictions_symbol_tables", 2},
                     {"cache_bytes_kernel_names", 77}};
  const json parsed = testing::ParsePrometheusText(RenderPrometheusText({}, health, "n"));
  ASSERT_FALSE(parsed.contains("error")) << parsed.dump();
  auto families = testing::PrometheusFamilies(parsed);
  auto value = [&](const std::string& family, const std::string& label, const std::string& want) -> double {
    for (const json& sample : families[family]["samples"]) {
      if (sample["labels"].value(label, "") == want) return sample["value"].get<double>();
    }
    return -1;
  };
  EXPECT_EQ(value("warpscope_agent_cache_bytes", "cache", "symbol_tables"), 1000.0);
  EXPECT_EQ(value("warpscope_agent_cache_bytes", "cache", "kernel_names"), 77.0);
  EXPECT_EQ(value("warpscope_agent_cache_budget_bytes", "cache", "symbol_tables"), 4096.0);
  EXPECT_EQ(value("warpscope_agent_cache_evictions", "cache", "symbol_tables"), 2.0);
  EXPECT_EQ(value("warpscope_agent_events", "event", "symbol_tables_loaded"), 3.0);
  EXPECT_EQ(value("warpscope_agent_events", "event", "cache_bytes_symbol_tables"), -1.0);
  EXPECT_EQ(families["warpscope_agent_cache_bytes"]["type"], "gauge");
}

// The helper really parses: broken text is an error, not an empty answer.
TEST(PrometheusExpositionTest, ParserRejectsBrokenText) {
  const json parsed = testing::ParsePrometheusText("metric{label=\"unterminated} 1\n");
  EXPECT_TRUE(parsed.contains("error")) << parsed.dump();
}

}  // namespace
}  // namespace warpscope
