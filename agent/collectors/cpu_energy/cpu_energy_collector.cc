#include "agent/collectors/cpu_energy/cpu_energy_collector.h"

#include <algorithm>
#include <utility>

#include "base/unix_time.h"

namespace warpscope {

CpuEnergyCollector::CpuEnergyCollector(std::unique_ptr<PowercapReader> reader, std::chrono::milliseconds interval,
                                       size_t max_pending_readings)
    : reader_(std::move(reader)),
      interval_(interval),
      max_pending_(max_pending_readings),
      next_read_(Clock::now()),
      stats_(reader_->stats()) {}

void CpuEnergyCollector::ReadNow() {
  reader_->ReadInto(UnixNanosNow(), &scratch_);
  if (pending_.size() + scratch_.size() > max_pending_) {
    const size_t drop = std::min(pending_.size(), pending_.size() + scratch_.size() - max_pending_);
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(drop));
    dropped_readings_ += drop;
  }
  pending_.insert(pending_.end(), scratch_.begin(), scratch_.end());
  std::lock_guard<std::mutex> lock(mu_);
  // The zones read now (one whose read failed is missing until it reads again).
  latest_ = scratch_;
  stats_ = reader_->stats();
}

Status CpuEnergyCollector::Poll(Clock::time_point until) {
  const auto now = Clock::now();
  if (now < next_read_) return Status::Ok();
  next_read_ += interval_;
  if (next_read_ <= now) next_read_ = now + interval_;  // late (a long window finish): no burst
  ReadNow();
  return Status::Ok();
}

Status CpuEnergyCollector::FinishWindow(Window* window) {
  if (window->final) ReadNow();  // the last window ends with the counters' values at its end
  window->metrics.insert(window->metrics.end(), std::make_move_iterator(pending_.begin()),
                         std::make_move_iterator(pending_.end()));
  pending_.clear();
  const PowercapStats s = reader_->stats();
  SetCounter(&window->counters, "cpu_energy_zones", s.zones);
  SetCounter(&window->counters, "cpu_energy_unreadable_zones", s.unreadable_zones);
  SetCounter(&window->counters, "cpu_energy_read_errors", s.read_errors);
  SetCounter(&window->counters, "cpu_energy_wraparounds", s.wraparounds);
  SetCounter(&window->counters, "cpu_energy_dropped_readings", dropped_readings_);
  return Status::Ok();
}

std::vector<MetricReading> CpuEnergyCollector::LatestFromAnyThread() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

PowercapStats CpuEnergyCollector::StatsFromAnyThread() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace warpscope
