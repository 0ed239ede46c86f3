// Device metrics: names, units, labels and scaling; metrics turned off one
// at a time; transient errors; the old-driver library; scripts rewritten
// while the collector runs. Through the real dlopen path of the fake NVML.
#include "agent/collectors/gpu_metrics/nvml/nvml_reader.h"

#include <algorithm>
#include <map>
#include <set>

#include "tests/fakes/fake_nvml/fake_nvml_control.h"
#include "gtest/gtest.h"

namespace warpscope {
namespace {

constexpr char kH200[] = R"(
devices 1
device 0 name "NVIDIA H200" uuid GPU-8f35106d-f27c-1cfb-6224-7e9c7114e62c pci 00000000:01:00.0 gpm 1
set 0 utilization_gpu 45
set 0 utilization_memory 12
set 0 memory_total 150754820096
set 0 memory_used 1073741824
set 0 clock_sm 1980
set 0 clock_mem 3201
set 0 max_clock_sm 1980
set 0 max_clock_mem 3201
set 0 power_mw 81234
set 0 power_limit_mw 700000
set 0 energy_mj 123456789
set 0 temperature 41
set 0 temperature_slowdown 87
set 0 pcie_tx_kbps 1000
set 0 pcie_rx_kbps 2500
set 0 clock_event_reasons 0x41
set 0 ecc_corrected 3
set 0 ecc_uncorrected 1
)";

// Every per-GPU metric of the first interval: all but GPM's (which need two
// samples, and on a GPM GPU bring PCIe throughput), processes' and events'.
const std::set<std::string> kDeviceMetrics = {
    "gpu_utilization", "gpu_memory_utilization", "gpu_memory_used", "gpu_memory_reserved", "gpu_memory_total",
    "gpu_sm_clock", "gpu_memory_clock", "gpu_sm_clock_max", "gpu_memory_clock_max",
    "gpu_power", "gpu_power_limit", "gpu_energy", "gpu_temperature",
    "gpu_temperature_slowdown", "gpu_clock_event_reasons", "gpu_clocks_throttled", "gpu_ecc_corrected",
    "gpu_ecc_uncorrected"};
const std::set<std::string> kGpmMetrics = {"gpu_sm_activity", "gpu_sm_occupancy", "gpu_tensor_activity",
                                           "gpu_dram_bandwidth", "gpu_pcie_tx", "gpu_pcie_rx"};

std::set<std::string> MetricNames(const std::vector<GpuReading>& readings) {
  std::set<std::string> names;
  for (const GpuReading& r : readings) names.insert(r.metric);
  return names;
}

// The names of kDeviceMetrics among the readings (leaving GPM and process ones out).
std::set<std::string> DeviceMetricNames(const std::vector<GpuReading>& readings) {
  std::set<std::string> names;
  for (const GpuReading& r : readings) {
    if (kDeviceMetrics.count(r.metric) != 0) names.insert(r.metric);
  }
  return names;
}

// Disabled metrics other than GPM on GPUs without it (the fake's default).
size_t DisabledBesidesGpm(const NvmlReader& c) {
  size_t n = 0;
  for (const DisabledGpuMetric& d : c.DisabledMetrics()) {
    if (d.reason.find("GPM not supported") == std::string::npos) ++n;
  }
  return n;
}

TEST(GpuMetricsCollectorTest, ScriptedValuesComeOutNamedLabelledAndScaled) {
  FakeNvmlScript script(kH200);
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  EXPECT_EQ(MetricNames(collector->Collect(1'699'999'999'000'000'000)), kDeviceMetrics);
  const auto readings = collector->Collect(1'700'000'000'000'000'000);
  std::set<std::string> all = kDeviceMetrics;
  all.insert(kGpmMetrics.begin(), kGpmMetrics.end());
  EXPECT_EQ(MetricNames(readings), all);
  std::map<std::string, double> throttled;
  for (const GpuReading& r : readings) {
    EXPECT_EQ(r.time_unix_nanos, 1'700'000'000'000'000'000);
    std::vector<std::pair<std::string, std::string>> labels = {
        {"gpu", "0"},
        {"gpu_name", "NVIDIA H200"},
        {"pci_bus_id", "00000000:01:00.0"},
        {"uuid", "GPU-8f35106d-f27c-1cfb-6224-7e9c7114e62c"}};
    if (r.metric == "gpu_clocks_throttled") {
      ASSERT_EQ(r.labels.size(), 5u);
      throttled[r.labels[3].second] = r.value;
      labels.insert(labels.begin() + 3, {"reason", r.labels[3].second});
    }
    EXPECT_EQ(r.labels, labels) << r.metric;
  }
  // 0x41: the GPU is idle (0x1) and hardware thermal slowdown (0x40) holds its clocks.
  EXPECT_EQ(throttled, (std::map<std::string, double>{{"hw_slowdown", 0}, {"power", 0}, {"thermal", 1}}));
  auto unit = [&](const std::string& metric) {
    auto found = Find(readings, metric);
    return found.size() == 1 ? found[0]->unit : "<missing>";
  };
  EXPECT_EQ(ValueOf(readings, "gpu_utilization"), 45);
  EXPECT_EQ(unit("gpu_utilization"), "percent");
  EXPECT_EQ(ValueOf(readings, "gpu_memory_utilization"), 12);
  EXPECT_EQ(ValueOf(readings, "gpu_memory_used"), 1073741824.0);
  EXPECT_EQ(unit("gpu_memory_used"), "bytes");
  EXPECT_EQ(ValueOf(readings, "gpu_memory_total"), 150754820096.0);
  EXPECT_EQ(ValueOf(readings, "gpu_sm_clock"), 1980);
  EXPECT_EQ(unit("gpu_sm_clock"), "mhz");
  EXPECT_EQ(ValueOf(readings, "gpu_memory_clock"), 3201);
  EXPECT_EQ(ValueOf(readings, "gpu_sm_clock_max"), 1980);
  EXPECT_EQ(ValueOf(readings, "gpu_memory_clock_max"), 3201);
  EXPECT_DOUBLE_EQ(ValueOf(readings, "gpu_power"), 81.234);  // mW -> W
  EXPECT_EQ(unit("gpu_power"), "watts");
  EXPECT_DOUBLE_EQ(ValueOf(readings, "gpu_power_limit"), 700);
  EXPECT_DOUBLE_EQ(ValueOf(readings, "gpu_energy"), 123456.789);  // mJ -> J
  EXPECT_EQ(unit("gpu_energy"), "joules");
  EXPECT_EQ(ValueOf(readings, "gpu_temperature"), 41);
  EXPECT_EQ(unit("gpu_temperature"), "celsius");
  EXPECT_EQ(ValueOf(readings, "gpu_temperature_slowdown"), 87);
  EXPECT_EQ(ValueOf(readings, "gpu_pcie_tx"), 1000 * 1024.0);  // GPM's MiB/s -> B/s
  EXPECT_EQ(ValueOf(readings, "gpu_pcie_rx"), 2500 * 1024.0);
  EXPECT_EQ(unit("gpu_pcie_rx"), "bytes_per_second");
  EXPECT_EQ(ValueOf(readings, "gpu_clock_event_reasons"), 0x41);
  EXPECT_EQ(unit("gpu_clock_event_reasons"), "bitmask");
  EXPECT_EQ(ValueOf(readings, "gpu_ecc_corrected"), 3);
  EXPECT_EQ(unit("gpu_ecc_corrected"), "count");
  EXPECT_EQ(ValueOf(readings, "gpu_ecc_uncorrected"), 1);
  EXPECT_EQ(collector->ErrorCount(), 0u);
  // Per interval, every device metric once but gpu_clocks_throttled, once per reason.
  EXPECT_EQ(collector->ReadingsEmitted(), kDeviceMetrics.size() + 2 + readings.size());
  EXPECT_TRUE(collector->DisabledMetrics().empty());
}

TEST(GpuMetricsCollectorTest, UnsupportedCallsTurnOffExactlyTheirMetric) {
  FakeNvmlScript script(std::string(kH200) +
                        "error 0 nvmlDeviceGetPowerUsage NOT_SUPPORTED\n"
                        "error 0 nvmlDeviceGetTotalEnergyConsumption NO_PERMISSION\n");
  FakeNvmlHooks hooks(kFakeNvmlPath);
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  const auto power_calls = hooks.CallCount("nvmlDeviceGetPowerUsage");
  std::set<std::string> expected = kDeviceMetrics;
  expected.erase("gpu_power");
  expected.erase("gpu_energy");
  for (int i = 0; i < 3; ++i) {
    const auto readings = collector->Collect(i);
    EXPECT_EQ(DeviceMetricNames(readings), expected) << "collect " << i;
    EXPECT_EQ(Find(readings, "gpu_pcie_tx").size(), i == 0 ? 0u : 1u);  // GPM from the second interval
    EXPECT_DOUBLE_EQ(ValueOf(readings, "gpu_power_limit"), 700);
  }
  ASSERT_EQ(collector->DisabledMetrics().size(), 2u);
  EXPECT_EQ(collector->DisabledMetrics()[0].gpu, 0);
  EXPECT_EQ(collector->DisabledMetrics()[0].metric, "gpu_power");
  EXPECT_EQ(collector->DisabledMetrics()[0].reason, "nvmlDeviceGetPowerUsage: NVML_ERROR_NOT_SUPPORTED");
  EXPECT_EQ(collector->DisabledMetrics()[1].metric, "gpu_energy");
  EXPECT_EQ(collector->DisabledMetrics()[1].reason, "nvmlDeviceGetTotalEnergyConsumption: NVML_ERROR_NO_PERMISSION");
  // Asked once, then never again.
  EXPECT_EQ(hooks.CallCount("nvmlDeviceGetPowerUsage") - power_calls, 1u);
  EXPECT_EQ(collector->ErrorCount(), 0u);
}

TEST(GpuMetricsCollectorTest, OneCallFeedsTwoMetricsAndBothGoOff) {
  FakeNvmlScript script(std::string(kH200) + "error 0 nvmlDeviceGetUtilizationRates NOT_SUPPORTED\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  const auto names = MetricNames(collector->Collect(1));
  EXPECT_EQ(names.count("gpu_utilization"), 0u);
  EXPECT_EQ(names.count("gpu_memory_utilization"), 0u);
  EXPECT_EQ(names.size(), kDeviceMetrics.size() - 2);
  EXPECT_TRUE(IsDisabled(*collector, 0, "gpu_utilization"));
  EXPECT_TRUE(IsDisabled(*collector, 0, "gpu_memory_utilization"));
}

TEST(GpuMetricsCollectorTest, TransientErrorsAreCountedSkippedAndRetried) {
  FakeNvmlScript script(std::string(kH200) + "error 0 nvmlDeviceGetTemperature GPU_IS_LOST\n"
                                             "error 0 nvmlDeviceGetClockInfo UNKNOWN\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  auto readings = collector->Collect(1);
  EXPECT_TRUE(Find(readings, "gpu_temperature").empty());
  EXPECT_TRUE(Find(readings, "gpu_sm_clock").empty());
  EXPECT_TRUE(Find(readings, "gpu_memory_clock").empty());
  EXPECT_EQ(ValueOf(readings, "gpu_utilization"), 45);
  EXPECT_EQ(collector->ErrorCount(), 3u);
  EXPECT_TRUE(collector->DisabledMetrics().empty());

  script.Rewrite(kH200);  // the GPU is back
  readings = collector->Collect(2);
  EXPECT_EQ(ValueOf(readings, "gpu_temperature"), 41);
  EXPECT_EQ(ValueOf(readings, "gpu_sm_clock"), 1980);
  EXPECT_EQ(collector->ErrorCount(), 3u);
}

TEST(GpuMetricsCollectorTest, RewrittenScriptChangesValuesBetweenCollects) {
  FakeNvmlScript script(kH200);
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  EXPECT_DOUBLE_EQ(ValueOf(collector->Collect(1), "gpu_power"), 81.234);
  script.Rewrite(std::string(kH200) + "set 0 power_mw 350500\nset 0 utilization_gpu 99\nset 0 power_limit_mw 500000\n");
  const auto readings = collector->Collect(2);
  EXPECT_DOUBLE_EQ(ValueOf(readings, "gpu_power"), 350.5);
  EXPECT_EQ(ValueOf(readings, "gpu_utilization"), 99);
  EXPECT_DOUBLE_EQ(ValueOf(readings, "gpu_power_limit"), 500);  // re-read each interval
}

TEST(GpuMetricsCollectorTest, StaticFactsAreReadOnceAtOpen) {
  FakeNvmlScript script(kH200);
  FakeNvmlHooks hooks(kFakeNvmlPath);
  const auto max_clock_calls = hooks.CallCount("nvmlDeviceGetMaxClockInfo");
  const auto name_calls = hooks.CallCount("nvmlDeviceGetName");
  const auto threshold_calls = hooks.CallCount("nvmlDeviceGetTemperatureThreshold");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  for (int i = 0; i < 5; ++i) collector->Collect(i);
  EXPECT_EQ(hooks.CallCount("nvmlDeviceGetMaxClockInfo") - max_clock_calls, 2u);  // SM and MEM
  EXPECT_EQ(hooks.CallCount("nvmlDeviceGetName") - name_calls, 1u);
  EXPECT_EQ(hooks.CallCount("nvmlDeviceGetTemperatureThreshold") - threshold_calls, 1u);
}

TEST(GpuMetricsCollectorTest, OldDriverMissingFunctionsTurnOffOnlyTheirMetrics) {
  FakeNvmlScript script(std::string(kH200) + "process 0 4242 sm 30 mem 10 used 1048576\n");
  auto collector = OpenCollector(kFakeNvmlOldPath);
  ASSERT_NE(collector, nullptr);
  collector->Collect(1);
  const auto readings = collector->Collect(2);
  const auto names = MetricNames(readings);
  // The deprecated fallbacks keep temperature and clock event reasons.
  for (const std::string& metric : kDeviceMetrics) {
    EXPECT_EQ(names.count(metric), metric == "gpu_memory_reserved" ? 0u : 1u) << metric;  // v1 has no reservation
  }
  EXPECT_EQ(ValueOf(readings, "gpu_temperature"), 41);
  EXPECT_EQ(ValueOf(readings, "gpu_clock_event_reasons"), 0x41);
  EXPECT_EQ(ValueOf(readings, "gpu_ecc_corrected"), 3);  // nvmlDeviceGetTotalEccErrors
  EXPECT_EQ(ValueOf(readings, "gpu_pcie_rx"), 2500 * 1024.0);  // nvmlDeviceGetPcieThroughput
  EXPECT_EQ(ValueOf(readings, "gpu_process_memory_used"), 1048576);
  for (const char* metric : {"gpu_sm_activity", "gpu_sm_occupancy", "gpu_tensor_activity", "gpu_dram_bandwidth",
                             "gpu_process_sm_utilization", "gpu_process_memory_utilization"}) {
    EXPECT_EQ(names.count(metric), 0u) << metric;
    EXPECT_TRUE(IsDisabled(*collector, 0, metric)) << metric;
  }
  EXPECT_EQ(collector->DisabledMetrics().size(), 6u);
  for (const DisabledGpuMetric& d : collector->DisabledMetrics()) {
    EXPECT_NE(d.reason.find("missing from libws_fake_nvml_old.so (older driver?)"), std::string::npos) << d.reason;
  }
  EXPECT_EQ(collector->ErrorCount(), 0u);
}

// nvidia-smi's "memory.used" leaves out the driver's reservation, as
// nvmlDeviceGetMemoryInfo_v2 does; v1 (older drivers) includes it.
TEST(GpuMetricsCollectorTest, MemoryUsedExcludesTheReservationWhereV2Exists) {
  FakeNvmlScript script("set 0 memory_used 1073741824\nset 0 memory_reserved 644743168\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  auto readings = collector->Collect(1);
  EXPECT_EQ(ValueOf(readings, "gpu_memory_used"), 1073741824.0);
  EXPECT_EQ(ValueOf(readings, "gpu_memory_reserved"), 644743168.0);
  auto old = OpenCollector(kFakeNvmlOldPath);
  ASSERT_NE(old, nullptr);
  readings = old->Collect(1);
  EXPECT_EQ(ValueOf(readings, "gpu_memory_used"), 1073741824.0 + 644743168.0);
  EXPECT_TRUE(Find(readings, "gpu_memory_reserved").empty());
  EXPECT_TRUE(old->DisabledMetrics().empty() || !IsDisabled(*old, 0, "gpu_memory_used"));
}

TEST(GpuMetricsCollectorTest, EveryGpuHasItsOwnLabelsAndSwitches) {
  FakeNvmlScript script(
      "devices 8\n"
      "set * utilization_gpu 7\n"
      "set 5 utilization_gpu 55\n"
      "error 3 nvmlDeviceGetPcieThroughput NOT_SUPPORTED\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  EXPECT_EQ(collector->DeviceCount(), 8);
  const auto readings = collector->Collect(1);
  for (int gpu = 0; gpu < 8; ++gpu) {
    const std::string g = std::to_string(gpu);
    EXPECT_EQ(ValueOf(readings, "gpu_utilization", g), gpu == 5 ? 55 : 7);
    EXPECT_EQ(Find(readings, "gpu_pcie_tx", g).size(), gpu == 3 ? 0u : 1u);
    const auto util = Find(readings, "gpu_utilization", g);
    ASSERT_EQ(util.size(), 1u);
    EXPECT_EQ(Label(*util[0], "pci_bus_id"), "00000000:0" + std::to_string(gpu + 1) + ":00.0");
  }
  EXPECT_TRUE(IsDisabled(*collector, 3, "gpu_pcie_tx"));
  EXPECT_TRUE(IsDisabled(*collector, 3, "gpu_pcie_rx"));
  EXPECT_EQ(DisabledBesidesGpm(*collector), 2u);
}

TEST(GpuMetricsCollectorTest, CollectIntoReusesTheCallersReadings) {
  FakeNvmlScript script(kH200);
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  std::vector<GpuReading> readings;
  collector->CollectInto(1, &readings);
  const size_t first_interval = readings.size();
  collector->CollectInto(2, &readings);  // with GPM from here on
  const size_t n = readings.size();
  EXPECT_EQ(n, first_interval + 6);
  const GpuReading* storage = readings.data();
  collector->CollectInto(3, &readings);
  EXPECT_EQ(readings.size(), n);
  EXPECT_EQ(readings.data(), storage);
  EXPECT_EQ(readings[0].time_unix_nanos, 3);
  EXPECT_EQ(collector->ReadingsEmitted(), first_interval + 2 * n);
}

TEST(GpuMetricsCollectorTest, SlowMetricsOnTheFirstAndEveryNthInterval) {
  FakeNvmlScript script("set 0 energy_mj 5000\nset 0 pcie_tx_kbps 10\n");  // no GPM: legacy PCIe
  FakeNvmlHooks hooks(kFakeNvmlPath);
  auto collector = OpenCollector(kFakeNvmlPath, /*slow_metrics_every=*/3);
  ASSERT_NE(collector, nullptr);
  const auto energy_calls = hooks.CallCount("nvmlDeviceGetTotalEnergyConsumption");
  const auto pcie_calls = hooks.CallCount("nvmlDeviceGetPcieThroughput");
  for (int i = 0; i < 7; ++i) {
    const auto readings = collector->Collect(i);
    const size_t expected = i % 3 == 0 ? 1 : 0;
    EXPECT_EQ(Find(readings, "gpu_energy").size(), expected) << i;
    EXPECT_EQ(Find(readings, "gpu_pcie_tx").size(), expected) << i;
    EXPECT_EQ(Find(readings, "gpu_power").size(), 1u) << i;
  }
  EXPECT_EQ(hooks.CallCount("nvmlDeviceGetTotalEnergyConsumption") - energy_calls, 3u);
  EXPECT_EQ(hooks.CallCount("nvmlDeviceGetPcieThroughput") - pcie_calls, 6u);  // TX and RX
}

TEST(GpuMetricsCollectorTest, EccFromOneFieldValuesCall) {
  FakeNvmlScript script("set 0 ecc_corrected 12\nset 0 ecc_uncorrected 2\n");
  FakeNvmlHooks hooks(kFakeNvmlPath);
  const auto legacy_calls = hooks.CallCount("nvmlDeviceGetTotalEccErrors");
  const auto field_calls = hooks.CallCount("nvmlDeviceGetFieldValues");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  const auto readings = collector->Collect(1);
  EXPECT_EQ(ValueOf(readings, "gpu_ecc_corrected"), 12);
  EXPECT_EQ(ValueOf(readings, "gpu_ecc_uncorrected"), 2);
  EXPECT_EQ(hooks.CallCount("nvmlDeviceGetFieldValues") - field_calls, 1u);
  EXPECT_EQ(hooks.CallCount("nvmlDeviceGetTotalEccErrors") - legacy_calls, 0u);
}

TEST(GpuMetricsCollectorTest, EccOffWhereTheGpuHasNoEcc) {
  FakeNvmlScript script("error 0 nvmlDeviceGetTotalEccErrors NOT_SUPPORTED\n");  // both paths
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  for (int i = 0; i < 2; ++i) {
    const auto readings = collector->Collect(i);
    EXPECT_TRUE(Find(readings, "gpu_ecc_corrected").empty());
    EXPECT_TRUE(Find(readings, "gpu_ecc_uncorrected").empty());
    EXPECT_EQ(Find(readings, "gpu_temperature").size(), 1u);
  }
  EXPECT_TRUE(IsDisabled(*collector, 0, "gpu_ecc_corrected"));
  EXPECT_TRUE(IsDisabled(*collector, 0, "gpu_ecc_uncorrected"));
  EXPECT_EQ(DisabledBesidesGpm(*collector), 2u);
  EXPECT_EQ(collector->ErrorCount(), 0u);
}

TEST(GpuMetricsCollectorTest, EccFallsBackWhenFieldValuesAreUnsupported) {
  FakeNvmlScript script("set 0 ecc_corrected 12\nerror 0 nvmlDeviceGetFieldValues NOT_SUPPORTED\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(ValueOf(collector->Collect(i), "gpu_ecc_corrected"), 12);
  EXPECT_EQ(DisabledBesidesGpm(*collector), 0u);
}

}  // namespace
}  // namespace warpscope
