#include "agent/collectors/gpu_metrics/gpu_process_energy.h"

#include <gtest/gtest.h>

#include <map>

#include "tests/fakes/fake_nvml/fake_nvml_control.h"

namespace warpscope {
namespace {

using Labels = GpuProcessEnergy::Labels;

constexpr int64_t kSec = 1'000'000'000;

Labels Gpu(const std::string& gpu) { return {{"gpu", gpu}, {"uuid", "GPU-" + gpu}}; }
Labels Process(const std::string& gpu, const std::string& pid, const std::string& comm) {
  return {{"comm", comm}, {"gpu", gpu}, {"pid", pid}, {"uuid", "GPU-" + gpu}};
}

// One collect's device readings of a GPU.
void AddGpu(std::vector<MetricReading>* r, const std::string& gpu, double watts, double utilization, int64_t t) {
  r->push_back({"gpu_power", "watts", Gpu(gpu), watts, t});
  r->push_back({"gpu_utilization", "percent", Gpu(gpu), utilization, t});
}
void AddProcess(std::vector<MetricReading>* r, const std::string& gpu, const std::string& pid, double sm, int64_t t) {
  r->push_back({"gpu_process_sm_utilization", "percent", Process(gpu, pid, "p" + pid), sm, t});
}

// "metric{gpu,pid}" -> joules.
std::map<std::string, double> Counters(const GpuProcessEnergy& e) {
  std::vector<MetricReading> out;
  e.AppendReadings(&out);
  std::map<std::string, double> m;
  for (const MetricReading& r : out) {
    EXPECT_EQ(r.unit, "joules");
    const std::string* pid = FindLabel(r, "pid");
    m[r.metric + "{" + *FindLabel(r, "gpu") + (pid ? "," + *pid : "") + "}"] = r.value;
  }
  return m;
}

// Busy GPU 0: its power × the interval, by the processes' SM shares (30:10),
// the shares of the latest per-process readings (every 5th collect). Idle
// GPU 1 (0.5 %): all idle.
TEST(GpuProcessEnergyTest, BusyJoulesBySmShareIdleJoulesToTheGpu) {
  GpuProcessEnergy e;
  for (int i = 0; i < 11; ++i) {
    const int64_t t = (100 + i) * kSec;
    std::vector<MetricReading> r;
    AddGpu(&r, "0", 200, 60, t);
    AddGpu(&r, "1", 50, 0.5, t);
    if (i % 5 == 0) {
      AddProcess(&r, "0", "11", 30, t);
      AddProcess(&r, "0", "22", i == 10 ? 0 : 10, t);  // 22 stopped using GPU 0 at the last
    }
    e.Add(r, i + 1, t);
  }
  // 10 intervals of 1 s (the first collect only starts the clock); the last
  // reading's shares (30:0) apply from its own interval.
  const std::map<std::string, double> c = Counters(e);
  EXPECT_DOUBLE_EQ(c.at("gpu_process_energy{0,11}"), 9 * 150.0 + 200);
  EXPECT_DOUBLE_EQ(c.at("gpu_process_energy{0,22}"), 9 * 50.0);
  EXPECT_DOUBLE_EQ(c.at("gpu_idle_energy{0}"), 0);
  EXPECT_DOUBLE_EQ(c.at("gpu_unattributed_energy{0}"), 0);
  EXPECT_DOUBLE_EQ(c.at("gpu_idle_energy{1}"), 10 * 50.0);
  EXPECT_DOUBLE_EQ(c.at("gpu_unattributed_energy{1}"), 0);
  EXPECT_EQ(e.process_counters(), 2u);
  std::vector<MetricReading> out;
  e.AppendReadings(&out);
  for (const MetricReading& r : out) {
    if (r.metric == "gpu_process_energy") EXPECT_EQ(FindLabel(r, "comm") != nullptr, true) << "the process's labels";
  }
}

// Busy with no per-process reading, with only 0 % ones, or with readings
// older than shares_valid_collects: the joules stay with the GPU, as
// unattributed. No utilization reading: busy. A gap longer than
// max_gap_nanos is not counted.
TEST(GpuProcessEnergyTest, BusyWithoutSharesIsUnattributed) {
  GpuProcessEnergyOptions o;
  o.shares_valid_collects = 3;
  GpuProcessEnergy e(o);
  auto collect = [&](int n, int64_t t, bool process, double sm = 10) {
    std::vector<MetricReading> r;
    r.push_back({"gpu_power", "watts", Gpu("0"), 100, t});
    if (process) AddProcess(&r, "0", "11", sm, t);
    e.Add(r, n, t);
  };
  collect(1, 1 * kSec, false);
  collect(2, 2 * kSec, false);  // no shares yet: 100 J unattributed
  collect(3, 3 * kSec, true);   // 100 J to pid 11
  collect(4, 4 * kSec, false);  // shares of collect 3: 100 J to pid 11
  collect(5, 5 * kSec, false);  // 2 collects old: 100 J to pid 11
  collect(6, 6 * kSec, false);  // 3 collects old: unattributed
  collect(7, 7 * kSec, true, 0);  // 0 %: unattributed
  collect(8, 200 * kSec, true);   // 193 s since the last power reading: not counted
  collect(9, 201 * kSec, true);
  const std::map<std::string, double> c = Counters(e);
  EXPECT_DOUBLE_EQ(c.at("gpu_process_energy{0,11}"), 400);
  EXPECT_DOUBLE_EQ(c.at("gpu_unattributed_energy{0}"), 300);
  EXPECT_DOUBLE_EQ(c.at("gpu_idle_energy{0}"), 0);
}

// Counters of processes gone from the GPUs for forget_after go; at most
// max_process_counters are kept, the least recently seen dropped first.
TEST(GpuProcessEnergyTest, GoneProcessesAreDroppedAndTheCountIsBounded) {
  GpuProcessEnergyOptions o;
  o.forget_after_nanos = 30 * kSec;
  o.max_process_counters = 3;
  GpuProcessEnergy e(o);
  for (int i = 0; i < 5; ++i) {
    std::vector<MetricReading> r;
    AddGpu(&r, "0", 100, 50, i * kSec + 1);
    AddProcess(&r, "0", std::to_string(100 + i), 10, i * kSec + 1);
    e.Add(r, i + 1, i * kSec + 1);
  }
  EXPECT_EQ(e.process_counters(), 3u) << "the bound";
  EXPECT_EQ(e.dropped_process_counters(), 2u);
  std::map<std::string, double> c = Counters(e);
  EXPECT_EQ(c.count("gpu_process_energy{0,100}"), 0u) << "the oldest went first";
  EXPECT_EQ(c.count("gpu_process_energy{0,101}"), 0u);
  EXPECT_EQ(c.count("gpu_process_energy{0,104}"), 1u);
  // 40 s later only 104 still has readings.
  std::vector<MetricReading> r;
  AddGpu(&r, "0", 100, 50, 45 * kSec);
  AddProcess(&r, "0", "104", 10, 45 * kSec);
  e.Add(r, 6, 45 * kSec);
  EXPECT_EQ(e.process_counters(), 1u);
  EXPECT_EQ(e.dropped_process_counters(), 4u);
}

// The real reader on the scripted fake NVML: its names and labels, its
// per-process readings every 5th collect, into the counters.
TEST(GpuProcessEnergyTest, FromTheNvmlReaderOnTheFakeNvml) {
  FakeNvmlScript script(R"(
devices 2
set 0 utilization_gpu 60
set 0 power_mw 300000
process 0 1001 sm 30 used 1073741824
process 0 1002 sm 10 used 1073741824
set 1 utilization_gpu 0
set 1 power_mw 50000
)");
  std::unique_ptr<NvmlReader> reader = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(reader, nullptr);
  GpuProcessEnergy e;
  std::vector<MetricReading> readings;
  for (int i = 0; i <= 10; ++i) {
    reader->CollectInto((1000 + i) * kSec, &readings);
    e.Add(readings, i + 1, (1000 + i) * kSec);
  }
  const std::map<std::string, double> c = Counters(e);
  EXPECT_NEAR(c.at("gpu_process_energy{0,1001}"), 300 * 10 * 0.75, 1e-6);
  EXPECT_NEAR(c.at("gpu_process_energy{0,1002}"), 300 * 10 * 0.25, 1e-6);
  EXPECT_NEAR(c.at("gpu_idle_energy{1}"), 50 * 10, 1e-6);
  EXPECT_EQ(c.at("gpu_unattributed_energy{0}"), 0);
  std::vector<MetricReading> out;
  e.AppendReadings(&out);
  for (const MetricReading& r : out) {
    EXPECT_NE(FindLabel(r, "uuid"), nullptr) << r.metric << ": the GPU's labels";
  }
}

}  // namespace
}  // namespace warpscope
