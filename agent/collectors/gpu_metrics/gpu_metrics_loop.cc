#include "agent/collectors/gpu_metrics/gpu_metrics_loop.h"

#include <time.h>

#include <cstdlib>
#include <set>

#include "base/unix_time.h"

namespace warpscope {
namespace {

int64_t ThreadCpuNanos() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

GpuMetricsLoop::GpuMetricsLoop(SourceFactory open_source, std::chrono::milliseconds interval, ProcFs procfs,
                               size_t max_pending_readings, GpuProcessEnergyOptions energy)
    : open_source_(std::move(open_source)),
      interval_(interval),
      procfs_(std::move(procfs)),
      max_pending_(max_pending_readings),
      process_energy_(energy) {}

GpuMetricsLoop::~GpuMetricsLoop() { Stop(); }

void GpuMetricsLoop::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { RunLoop(); });
}

void GpuMetricsLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GpuMetricsLoop::LabelProcesses(std::vector<MetricReading>* readings) {
  std::set<uint32_t> seen;
  for (MetricReading& r : *readings) {
    const std::optional<uint32_t> pid_or = ReadingPid(r);
    if (!pid_or || FindLabel(r, "comm") != nullptr) continue;
    const uint32_t pid = *pid_or;
    seen.insert(pid);
    auto it = comm_of_pid_.find(pid);
    if (it == comm_of_pid_.end()) {
      auto comm = procfs_.ReadComm(pid);
      it = comm_of_pid_.emplace(pid, comm.ok() ? *comm : std::string()).first;
    }
    if (it->second.empty()) continue;
    auto pos = r.labels.begin();
    while (pos != r.labels.end() && pos->first < "comm") ++pos;
    r.labels.insert(pos, {"comm", it->second});
  }
  // Pids no longer on any GPU: forget them (a reused pid reads its comm again).
  for (auto it = comm_of_pid_.begin(); it != comm_of_pid_.end();) {
    it = seen.count(it->first) ? std::next(it) : comm_of_pid_.erase(it);
  }
}

bool GpuMetricsLoop::WaitUntilOpenFromAnyThread(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return opened_; });
}

void GpuMetricsLoop::RunLoop() {
  const int64_t open_cpu0 = ThreadCpuNanos();
  StatusOr<std::unique_ptr<GpuMetricsSource>> opened = open_source_();
  {
    std::lock_guard<std::mutex> lock(mu_);
    opened_ = true;
    stats_.collect_cpu_nanos += ThreadCpuNanos() - open_cpu0;
    if (!opened.ok()) stats_.off_reason = opened.status().message();
  }
  cv_.notify_all();
  if (!opened.ok()) return;
  std::unique_ptr<GpuMetricsSource> source = std::move(opened).value();
  std::vector<MetricReading> readings;
  auto next = std::chrono::steady_clock::now();
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_until(lock, next, [this] { return stop_; })) break;
    }
    next += interval_;
    if (next < std::chrono::steady_clock::now()) next = std::chrono::steady_clock::now() + interval_;
    const int64_t cpu0 = ThreadCpuNanos();
    const int64_t now = UnixNanosNow();
    source->CollectInto(now, &readings);
    LabelProcesses(&readings);
    std::vector<GpuMetricOff> disabled = source->DisabledMetrics();
    const uint64_t errors = source->ErrorCount();
    const int64_t cpu = ThreadCpuNanos() - cpu0;

    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.collects;
    stats_.errors = errors;
    stats_.disabled = std::move(disabled);
    stats_.readings += readings.size();
    stats_.collect_cpu_nanos += cpu;
    for (const MetricReading& r : readings) {
      if (r.metric != "gpu_xid_errors") continue;
      // Prometheus keeps what DCGM shows: the last XID code, and counts by code.
      auto [total, inserted] = xid_totals_.try_emplace(r.labels, r);
      if (!inserted) total->second.value += r.value;
      total->second.time_unix_nanos = r.time_unix_nanos;
      if (r.value > 0) {
        std::vector<std::pair<std::string, std::string>> gpu_labels;
        double code = 0;
        for (const auto& [k, v] : r.labels) {
          if (k == "xid") {
            code = strtod(v.c_str(), nullptr);
          } else {
            gpu_labels.emplace_back(k, v);
          }
        }
        xid_last_[gpu_labels] = MetricReading{"gpu_xid_last", "code", gpu_labels, code, r.time_unix_nanos};
      }
    }
    const uint64_t collect = stats_.collects;
    for (const MetricReading& r : readings) {
      if (r.metric == "gpu_xid_errors") continue;
      auto& entry = latest_[{r.metric, r.labels}];
      if (entry.first != collect || r.time_unix_nanos >= entry.second.time_unix_nanos) entry = {collect, r};
    }
    for (auto it = latest_.begin(); it != latest_.end();) {
      it = collect - it->second.first >= 10 ? latest_.erase(it) : std::next(it);
    }
    process_energy_.Add(readings, collect, now);
    stats_.process_energy_series = process_energy_.process_counters();
    stats_.process_energy_dropped = process_energy_.dropped_process_counters();
    for (const MetricReading& r : readings) pending_.push_back(r);
    while (pending_.size() > max_pending_) {
      pending_.pop_front();
      ++stats_.dropped_readings;
    }
  }
  source.reset();  // NVML shut down on the thread that opened it
}

std::vector<MetricReading> GpuMetricsLoop::TakePendingFromAnyThread() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<MetricReading> out(std::make_move_iterator(pending_.begin()), std::make_move_iterator(pending_.end()));
  pending_.clear();
  return out;
}

std::vector<MetricReading> GpuMetricsLoop::LatestFromAnyThread() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<MetricReading> out;
  out.reserve(latest_.size() + xid_totals_.size() + xid_last_.size() + process_energy_.process_counters());
  for (const auto& [key, entry] : latest_) out.push_back(entry.second);
  for (const auto& [labels, r] : xid_totals_) out.push_back(r);
  for (const auto& [labels, r] : xid_last_) out.push_back(r);
  process_energy_.AppendReadings(&out);
  return out;
}

GpuMetricsLoopStats GpuMetricsLoop::StatsFromAnyThread() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace warpscope
