// Per-process metrics, XID events and GPM through the fake NVML.
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>

#include "tests/fakes/fake_nvml/fake_nvml_control.h"
#include "agent/collectors/gpu_metrics/nvml/nvml_reader.h"
#include "gtest/gtest.h"

namespace warpscope {
namespace {

// A child process that sleeps until killed: a real pid for the script.
class SleepingChild {
 public:
  SleepingChild() : pid_(fork()) {
    if (pid_ == 0) {
      for (;;) pause();
    }
  }
  ~SleepingChild() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

std::vector<const GpuReading*> OfPid(const std::vector<GpuReading>& readings, const std::string& metric,
                                     const std::string& pid) {
  std::vector<const GpuReading*> found;
  for (const GpuReading* r : Find(readings, metric)) {
    if (Label(*r, "pid") == pid) found.push_back(r);
  }
  return found;
}

// nvmlDeviceGetProcessUtilization is the costliest query (~2.9 ms on an
// H200): by default it runs every 5th interval; its readings are stamped
// with the second of the driver's sample.
TEST(GpuProcessMetricsTest, ProcessUtilizationEveryNthIntervalKeepsTheSamplesSecond) {
  FakeNvmlScript script("process 0 4242 sm 30 mem 10 used 1048576\n");
  GpuMetricsOptions options;
  options.library_path = kFakeNvmlPath;
  EXPECT_EQ(options.process_utilization_every, 5) << "the default";
  options.process_utilization_every = 3;
  auto opened = NvmlReader::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto& collector = *opened;
  timespec ts{};
  for (int i = 0; i < 6; ++i) {
    clock_gettime(CLOCK_REALTIME, &ts);
    const int64_t now = int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
    const auto readings = collector->Collect(now);
    const auto sm = OfPid(readings, "gpu_process_sm_utilization", "4242");
    EXPECT_EQ(OfPid(readings, "gpu_process_memory_used", "4242").size(), 1u) << "memory every interval";
    if (i % 3 != 0) {
      EXPECT_TRUE(sm.empty()) << "collect " << i;
      continue;
    }
    ASSERT_EQ(sm.size(), 1u) << "collect " << i;
    EXPECT_EQ(sm[0]->value, 30);
    // The fake's sample is from now: its second, not the collect's time.
    EXPECT_EQ(sm[0]->time_unix_nanos % 1'000'000'000, 0);
    EXPECT_LE(sm[0]->time_unix_nanos, now);
    EXPECT_GT(sm[0]->time_unix_nanos, now - 2'000'000'000);
  }
}

TEST(GpuProcessMetricsTest, ProcessReadingsCarryTheRealPid) {
  SleepingChild child;
  ASSERT_GT(child.pid(), 0);
  const std::string pid = std::to_string(child.pid());
  FakeNvmlScript script("device 0 name \"NVIDIA H200\"\nprocess 0 " + pid + " sm 30 mem 10 used 2147483648\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  for (int i = 0; i < 2; ++i) {  // fresh samples every interval
    const auto readings = collector->Collect(i);
    const auto sm = OfPid(readings, "gpu_process_sm_utilization", pid);
    const auto mem = OfPid(readings, "gpu_process_memory_utilization", pid);
    const auto used = OfPid(readings, "gpu_process_memory_used", pid);
    ASSERT_EQ(sm.size(), 1u);
    ASSERT_EQ(mem.size(), 1u);
    ASSERT_EQ(used.size(), 1u);
    EXPECT_EQ(sm[0]->value, 30);
    EXPECT_EQ(sm[0]->unit, "percent");
    EXPECT_EQ(mem[0]->value, 10);
    EXPECT_EQ(used[0]->value, 2147483648.0);
    EXPECT_EQ(used[0]->unit, "bytes");
    // The GPU's labels plus pid, in key order.
    std::vector<std::string> keys;
    for (const auto& [k, v] : sm[0]->labels) keys.push_back(k);
    EXPECT_EQ(keys, (std::vector<std::string>{"gpu", "gpu_name", "pci_bus_id", "pid", "uuid"}));
    EXPECT_EQ(Label(*sm[0], "gpu_name"), "NVIDIA H200");
  }
  EXPECT_EQ(collector->ErrorCount(), 0u);
}

TEST(GpuProcessMetricsTest, NotFoundMeansNoProcessUsedTheGpu) {
  // A process holds memory but ran nothing in the interval: the fake's
  // nvmlDeviceGetProcessUtilization answers NVML_ERROR_NOT_FOUND.
  FakeNvmlScript script("process 0 777 used 4096\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  for (int i = 0; i < 2; ++i) {
    const auto readings = collector->Collect(i);
    EXPECT_TRUE(Find(readings, "gpu_process_sm_utilization").empty());
    EXPECT_TRUE(Find(readings, "gpu_process_memory_utilization").empty());
    EXPECT_EQ(ValueOf(readings, "gpu_process_memory_used"), 4096);
  }
  EXPECT_EQ(collector->ErrorCount(), 0u);
  EXPECT_FALSE(IsDisabled(*collector, 0, "gpu_process_sm_utilization"));
  EXPECT_FALSE(IsDisabled(*collector, 0, "gpu_process_memory_used"));
}

TEST(GpuProcessMetricsTest, SeveralSamplesOfAPidAreAveraged) {
  FakeNvmlScript script(
      "process 0 100 sm 20 mem 10\n"
      "process 0 100 sm 40 mem 30\n"
      "process 0 200 sm 5 mem 1\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  const auto readings = collector->Collect(1);
  ASSERT_EQ(OfPid(readings, "gpu_process_sm_utilization", "100").size(), 1u);
  EXPECT_EQ(OfPid(readings, "gpu_process_sm_utilization", "100")[0]->value, 30);
  EXPECT_EQ(OfPid(readings, "gpu_process_memory_utilization", "100")[0]->value, 20);
  EXPECT_EQ(OfPid(readings, "gpu_process_sm_utilization", "200")[0]->value, 5);
  EXPECT_TRUE(Find(readings, "gpu_process_memory_used").empty());
}

TEST(GpuProcessMetricsTest, ManyProcessesGrowTheBuffers) {
  std::string text;
  for (int pid = 1000; pid < 1100; ++pid) {
    text += "process 0 " + std::to_string(pid) + " sm 1 mem 2 used " + std::to_string(pid) + "\n";
  }
  FakeNvmlScript script(text);
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  const auto readings = collector->Collect(1);
  EXPECT_EQ(Find(readings, "gpu_process_sm_utilization").size(), 100u);
  EXPECT_EQ(Find(readings, "gpu_process_memory_used").size(), 100u);
  EXPECT_EQ(OfPid(readings, "gpu_process_memory_used", "1042")[0]->value, 1042);
  EXPECT_EQ(collector->ErrorCount(), 0u);
}

TEST(GpuProcessMetricsTest, XidEventsAreCountedPerInterval) {
  FakeNvmlScript script("devices 2\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  EXPECT_TRUE(Find(collector->Collect(1), "gpu_xid_errors").empty());

  script.Rewrite("devices 2\nxid 0 79\nxid 0 79\nxid 0 48\nxid 1 13\n");
  auto readings = collector->Collect(2);
  const auto gpu0 = Find(readings, "gpu_xid_errors", "0");
  ASSERT_EQ(gpu0.size(), 2u);
  EXPECT_EQ(Label(*gpu0[0], "xid"), "48");
  EXPECT_EQ(gpu0[0]->value, 1);
  EXPECT_EQ(Label(*gpu0[1], "xid"), "79");
  EXPECT_EQ(gpu0[1]->value, 2);
  EXPECT_EQ(gpu0[1]->unit, "count");
  EXPECT_EQ(gpu0[1]->labels.back(), (std::pair<std::string, std::string>("xid", "79")));
  const auto gpu1 = Find(readings, "gpu_xid_errors", "1");
  ASSERT_EQ(gpu1.size(), 1u);
  EXPECT_EQ(Label(*gpu1[0], "xid"), "13");

  // Counted once: nothing new in the next interval.
  EXPECT_TRUE(Find(collector->Collect(3), "gpu_xid_errors").empty());
  EXPECT_EQ(collector->ErrorCount(), 0u);
}

TEST(GpuProcessMetricsTest, XidOffWhereEventsCannotBeRegistered) {
  FakeNvmlScript script("devices 2\nerror 1 nvmlDeviceRegisterEvents NOT_SUPPORTED\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  EXPECT_FALSE(IsDisabled(*collector, 0, "gpu_xid_errors"));
  EXPECT_TRUE(IsDisabled(*collector, 1, "gpu_xid_errors"));
  script.Rewrite("devices 2\nxid 0 31\n");
  EXPECT_EQ(ValueOf(collector->Collect(1), "gpu_xid_errors", "0"), 1);
}

TEST(GpuProcessMetricsTest, XidWaitErrorsAreCountedOrTurnXidOff) {
  FakeNvmlScript script("devices 2\nerror * nvmlEventSetWait_v2 UNKNOWN\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  collector->Collect(1);
  EXPECT_EQ(collector->ErrorCount(), 1u);
  script.Rewrite("devices 2\nerror * nvmlEventSetWait_v2 NOT_SUPPORTED\n");
  collector->Collect(2);
  collector->Collect(3);
  EXPECT_EQ(collector->ErrorCount(), 1u);
  EXPECT_TRUE(IsDisabled(*collector, 0, "gpu_xid_errors"));
  EXPECT_TRUE(IsDisabled(*collector, 1, "gpu_xid_errors"));
}

TEST(GpuProcessMetricsTest, GpmMetricsFromTheSecondIntervalOnGpmDevices) {
  FakeNvmlScript script(
      "devices 2\n"
      "device 0 gpm 1\n"
      "set 0 gpm_sm_util 61.5\n"
      "set 0 gpm_sm_occupancy 33.25\n"
      "set 0 gpm_any_tensor_util 12\n"
      "set 0 gpm_dram_bw_util 48.5\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  EXPECT_TRUE(Find(collector->Collect(1), "gpu_sm_activity").empty());  // one sample so far
  for (int i = 2; i < 5; ++i) {
    const auto readings = collector->Collect(i);
    EXPECT_DOUBLE_EQ(ValueOf(readings, "gpu_sm_activity"), 61.5);
    EXPECT_DOUBLE_EQ(ValueOf(readings, "gpu_sm_occupancy"), 33.25);
    EXPECT_DOUBLE_EQ(ValueOf(readings, "gpu_tensor_activity"), 12);
    EXPECT_DOUBLE_EQ(ValueOf(readings, "gpu_dram_bandwidth"), 48.5);
    EXPECT_EQ(Find(readings, "gpu_dram_bandwidth")[0]->unit, "percent");
    EXPECT_TRUE(Find(readings, "gpu_sm_activity", "1").empty());  // GPU 1 has no GPM
  }
  EXPECT_TRUE(IsDisabled(*collector, 1, "gpu_sm_activity"));
  EXPECT_FALSE(IsDisabled(*collector, 0, "gpu_sm_activity"));
  // The fake rejects sample pairs out of order: none were.
  EXPECT_EQ(collector->ErrorCount(), 0u);
}

TEST(GpuProcessMetricsTest, AnUnsupportedGpmMetricGoesOffAlone) {
  FakeNvmlScript script("device 0 gpm 1\nset 0 gpm_sm_util 50\nerror 0 gpm_sm_occupancy NOT_SUPPORTED\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  collector->Collect(1);
  collector->Collect(2);
  const auto readings = collector->Collect(3);
  EXPECT_EQ(ValueOf(readings, "gpu_sm_activity"), 50);
  EXPECT_TRUE(Find(readings, "gpu_sm_occupancy").empty());
  EXPECT_EQ(Find(readings, "gpu_tensor_activity").size(), 1u);
  ASSERT_EQ(collector->DisabledMetrics().size(), 1u);
  EXPECT_EQ(collector->DisabledMetrics()[0].metric, "gpu_sm_occupancy");
}

TEST(GpuProcessMetricsTest, PcieComesFromGpmWithoutTheSlowQuery) {
  FakeNvmlScript script("device 0 gpm 1\nset 0 pcie_tx_kbps 2048\nset 0 pcie_rx_kbps 512\n");
  FakeNvmlHooks hooks(kFakeNvmlPath);
  const auto legacy_calls = hooks.CallCount("nvmlDeviceGetPcieThroughput");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  EXPECT_TRUE(Find(collector->Collect(1), "gpu_pcie_tx").empty());  // one GPM sample so far
  const auto readings = collector->Collect(2);
  EXPECT_EQ(ValueOf(readings, "gpu_pcie_tx"), 2048 * 1024.0);
  EXPECT_EQ(ValueOf(readings, "gpu_pcie_rx"), 512 * 1024.0);
  EXPECT_EQ(Find(readings, "gpu_pcie_rx")[0]->unit, "bytes_per_second");
  EXPECT_EQ(hooks.CallCount("nvmlDeviceGetPcieThroughput") - legacy_calls, 0u);
}

TEST(GpuProcessMetricsTest, PcieFallsBackToTheLegacyQueryWhereGpmLacksIt) {
  FakeNvmlScript script("device 0 gpm 1\nset 0 pcie_tx_kbps 2048\nerror 0 pcie_tx_kbps NOT_SUPPORTED\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  collector->Collect(1);
  collector->Collect(2);  // GPM says PCIe is not supported: switch
  EXPECT_EQ(ValueOf(collector->Collect(3), "gpu_pcie_tx"), 2048 * 1024.0);
  EXPECT_FALSE(IsDisabled(*collector, 0, "gpu_pcie_tx"));
  EXPECT_TRUE(collector->DisabledMetrics().empty());
}

TEST(GpuProcessMetricsTest, NanFromGpmIsNoReading) {
  FakeNvmlScript script("device 0 gpm 1\nset 0 gpm_dram_bw_util nan\nset 0 gpm_sm_util 3\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  collector->Collect(1);
  const auto readings = collector->Collect(2);
  EXPECT_TRUE(Find(readings, "gpu_dram_bandwidth").empty());
  EXPECT_EQ(ValueOf(readings, "gpu_sm_activity"), 3);
  EXPECT_EQ(collector->ErrorCount(), 0u);
  EXPECT_TRUE(collector->DisabledMetrics().empty());
}

TEST(GpuProcessMetricsTest, AFailedGpmSampleRestartsThePair) {
  FakeNvmlScript script("device 0 gpm 1\nset 0 gpm_sm_util 50\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  collector->Collect(1);
  script.Rewrite("device 0 gpm 1\nset 0 gpm_sm_util 50\nerror 0 nvmlGpmSampleGet UNKNOWN\n");
  EXPECT_TRUE(Find(collector->Collect(2), "gpu_sm_activity").empty());
  EXPECT_EQ(collector->ErrorCount(), 1u);
  script.Rewrite("device 0 gpm 1\nset 0 gpm_sm_util 70\n");
  EXPECT_TRUE(Find(collector->Collect(3), "gpu_sm_activity").empty());  // a new first sample
  EXPECT_EQ(ValueOf(collector->Collect(4), "gpu_sm_activity"), 70);
  EXPECT_TRUE(collector->DisabledMetrics().empty());
}

}  // namespace
}  // namespace warpscope
