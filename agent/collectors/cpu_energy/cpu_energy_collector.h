// CpuEnergyCollector: RAPL's CPU package and DRAM energy (PowercapReader)
// as a collector of the agent loop. A read is a few sysfs files (tens of
// microseconds), so it runs in Poll on the sampling thread, once per
// interval (1 s), with no thread of its own; each window takes the readings
// made since the previous one, and the Prometheus endpoint the newest.
//
// Threading: the Collector methods run on the sampling thread;
// LatestFromAnyThread and StatsFromAnyThread on any thread (the
// Prometheus endpoint's HTTP workers).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "agent/collectors/cpu_energy/powercap_reader.h"
#include "agent/pipeline/collector.h"

namespace warpscope {

class CpuEnergyCollector : public Collector {
 public:
  // `max_pending_readings` bounds what a window holds; beyond it the oldest
  // go, counted (cpu_energy_dropped_readings).
  CpuEnergyCollector(std::unique_ptr<PowercapReader> reader, std::chrono::milliseconds interval,
                     size_t max_pending_readings = 100'000);

  std::string_view name() const override { return "cpu_energy"; }
  Status Start() override { return Status::Ok(); }
  Status Poll(Clock::time_point until) override;
  Status FinishWindow(Window* window) override;
  void Stop() override {}

  // The newest reading of each zone.
  std::vector<MetricReading> LatestFromAnyThread() const;
  PowercapStats StatsFromAnyThread() const;

 private:
  void ReadNow();

  const std::unique_ptr<PowercapReader> reader_;  // sampling thread only
  const std::chrono::milliseconds interval_;
  const size_t max_pending_;
  Clock::time_point next_read_;
  std::vector<MetricReading> pending_;  // sampling thread only: the window's readings
  std::vector<MetricReading> scratch_;  // sampling thread only
  uint64_t dropped_readings_ = 0;

  mutable std::mutex mu_;
  std::vector<MetricReading> latest_;  // guarded by mu_
  PowercapStats stats_;                // guarded by mu_
};

}  // namespace warpscope
