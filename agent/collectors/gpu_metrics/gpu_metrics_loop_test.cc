#include "agent/collectors/gpu_metrics/gpu_metrics_loop.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>

namespace warpscope {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

std::string CommOf(const MetricReading& r) {
  for (const auto& [k, v] : r.labels) {
    if (k == "comm") return v;
  }
  return "";
}

// Readings from a function, as a source.
class FunctionSource : public GpuMetricsSource {
 public:
  explicit FunctionSource(std::function<std::vector<MetricReading>(int64_t)> fn) : fn_(std::move(fn)) {}
  void CollectInto(int64_t now, std::vector<MetricReading>* readings) override { *readings = fn_(now); }
  std::vector<GpuMetricOff> DisabledMetrics() const override { return {{"0", "gpu_ecc_corrected", "NOT_SUPPORTED"}}; }
  uint64_t ErrorCount() const override { return 2; }

 private:
  std::function<std::vector<MetricReading>(int64_t)> fn_;
};

GpuMetricsLoop::SourceFactory Source(std::function<std::vector<MetricReading>(int64_t)> fn) {
  return [fn]() -> StatusOr<std::unique_ptr<GpuMetricsSource>> { return std::unique_ptr<GpuMetricsSource>(std::make_unique<FunctionSource>(fn)); };
}

template <typename Pred>
bool WaitFor(Pred pred) {
  for (int i = 0; i < 400 && !pred(); ++i) usleep(5000);
  return pred();
}

// Readings flow to both consumers: every one once to the batches, the
// newest per series to Prometheus; per-process ones get the process's comm.
TEST(GpuMetricsLoopTest, PendingLatestAndProcessNames) {
  const pid_t child = fork();
  if (child == 0) {
    execlp("sleep", "sleep", "30", nullptr);
    _exit(127);
  }
  ASSERT_GT(child, 0);
  ASSERT_TRUE(WaitFor([&] {
    std::string comm;
    std::ifstream("/proc/" + std::to_string(child) + "/comm") >> comm;
    return comm == "sleep";
  })) << "the child exec'd";
  std::atomic<int> calls{0};
  GpuMetricsLoop loop(
      Source([&](int64_t now) {
        const int n = ++calls;
        std::vector<MetricReading> out = {{"gpu_utilization", "percent", {{"gpu", "0"}}, double(n), now},
                                          {"gpu_process_sm_utilization", "percent",
                                           {{"gpu", "0"}, {"pid", std::to_string(child)}}, 10.0 * n, now}};
        if (n == 2) out.push_back({"gpu_xid_errors", "count", {{"gpu", "0"}, {"xid", "79"}}, 2, now});
        if (n == 3) out.push_back({"gpu_xid_errors", "count", {{"gpu", "0"}, {"xid", "79"}}, 1, now});
        return out;
      }),
      std::chrono::milliseconds(20), ProcFs());
  loop.Start();
  ASSERT_TRUE(WaitFor([&] { return calls >= 4; }));
  loop.Stop();
  const int n = calls;
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);

  std::vector<MetricReading> pending = loop.TakePendingFromAnyThread();
  EXPECT_EQ(pending.size(), size_t(2 * n + 2));
  EXPECT_TRUE(loop.TakePendingFromAnyThread().empty()) << "taken once";
  for (const MetricReading& r : pending) {
    if (r.metric == "gpu_process_sm_utilization") {
      EXPECT_EQ(CommOf(r), "sleep");
      EXPECT_TRUE(std::is_sorted(r.labels.begin(), r.labels.end()));
    }
  }
  std::map<std::string, double> latest;
  for (const MetricReading& r : loop.LatestFromAnyThread()) latest[r.metric] = r.value;
  EXPECT_EQ(latest["gpu_utilization"], n) << "only the newest reading";
  EXPECT_EQ(latest["gpu_xid_errors"], 3) << "XID counts add up";
  EXPECT_EQ(latest["gpu_xid_last"], 79);
  const GpuMetricsLoopStats stats = loop.StatsFromAnyThread();
  EXPECT_EQ(stats.collects, uint64_t(n));
  EXPECT_EQ(stats.readings, pending.size());
  EXPECT_EQ(stats.dropped_readings, 0u);
  EXPECT_EQ(stats.errors, 2u);
  ASSERT_EQ(stats.disabled.size(), 1u);
  EXPECT_TRUE(stats.off_reason.empty());
}

// The loop counts GPU joules per process from every collect for the
// Prometheus endpoint (gpu_process_energy.h): each process gets its share.
TEST(GpuMetricsLoopTest, EnergyCountersPerProcessAmongTheNewestReadings) {
  std::atomic<int> calls{0};
  GpuMetricsLoop loop(
      Source([&](int64_t now) {
        ++calls;
        const std::vector<std::pair<std::string, std::string>> gpu = {{"gpu", "0"}};
        return std::vector<MetricReading>{
            {"gpu_power", "watts", gpu, 400, now},
            {"gpu_utilization", "percent", gpu, 90, now},
            {"gpu_process_sm_utilization", "percent", {{"gpu", "0"}, {"pid", "4000000001"}}, 60, now},
            {"gpu_process_sm_utilization", "percent", {{"gpu", "0"}, {"pid", "4000000002"}}, 20, now}};
      }),
      std::chrono::milliseconds(20), ProcFs());
  loop.Start();
  ASSERT_TRUE(WaitFor([&] { return calls >= 4; }));
  loop.Stop();
  std::map<std::string, double> joules;
  for (const MetricReading& r : loop.LatestFromAnyThread()) {
    if (r.metric == "gpu_process_energy") joules[*FindLabel(r, "pid")] = r.value;
    if (r.metric == "gpu_idle_energy") joules["idle"] = r.value;
  }
  ASSERT_EQ(joules.size(), 3u);
  EXPECT_GT(joules["4000000001"], 0);
  EXPECT_NEAR(joules["4000000001"], 3 * joules["4000000002"], 1e-9) << "60:20";
  EXPECT_EQ(joules["idle"], 0);
  EXPECT_EQ(loop.StatsFromAnyThread().process_energy_series, 2u);
}

// A source that cannot open (no driver): off, with the reason, and no thread left running.
TEST(GpuMetricsLoopTest, SourceThatCannotOpenTurnsMetricsOff) {
  GpuMetricsLoop loop([]() -> StatusOr<std::unique_ptr<GpuMetricsSource>> {
        return UnavailableError("GPU metrics off: libnvidia-ml.so.1 not found");
      },
      std::chrono::milliseconds(10), ProcFs());
  loop.Start();
  ASSERT_TRUE(loop.WaitUntilOpenFromAnyThread(std::chrono::seconds(5)));
  EXPECT_EQ(loop.StatsFromAnyThread().off_reason, "GPU metrics off: libnvidia-ml.so.1 not found");
  EXPECT_TRUE(loop.LatestFromAnyThread().empty());
  loop.Stop();
}

// Nobody takes the readings (the server is gone for long): the oldest go, counted.
TEST(GpuMetricsLoopTest, PendingIsBounded) {
  std::atomic<int> calls{0};
  GpuMetricsLoop loop(
      Source([&](int64_t now) {
        ++calls;
        return std::vector<MetricReading>(5, MetricReading{"gpu_power", "watts", {{"gpu", "0"}}, 1, now});
      }),
      std::chrono::milliseconds(5), ProcFs(), /*max_pending_readings=*/12);
  loop.Start();
  ASSERT_TRUE(WaitFor([&] { return calls >= 5; }));
  loop.Stop();
  const GpuMetricsLoopStats stats = loop.StatsFromAnyThread();
  EXPECT_EQ(loop.TakePendingFromAnyThread().size(), 12u);
  EXPECT_EQ(stats.dropped_readings, stats.readings - 12);
}

}  // namespace
}  // namespace warpscope
