#include "agent/collectors/gpu_time/socket/cuda_record_bounds.h"

#include <cmath>

namespace warpscope {
namespace {

// |a - b| <= limit without overflow, for times the peer chose freely.
bool Within(uint64_t a, int64_t b, int64_t limit) {
  const __int128 d = static_cast<__int128>(a) - static_cast<__int128>(b);
  return d <= limit && d >= -static_cast<__int128>(limit);
}

}  // namespace

bool CudaRecordCheck::TakeClockPair(const ws_cuda_clock_pair& pair, int64_t now_ns) {
  if (pair.cupti_ns == 0 || pair.host_after_ns < pair.host_before_ns ||
      pair.host_after_ns - pair.host_before_ns > static_cast<uint64_t>(bounds_.max_bracket_ns) ||
      !Within(pair.host_before_ns, now_ns, bounds_.max_skew_ns)) {
    return false;
  }
  const int64_t mid = static_cast<int64_t>(pair.host_before_ns + (pair.host_after_ns - pair.host_before_ns) / 2);
  if (calibrated_) {
    if (mid <= host_mid_ns_) return false;  // out of order: CuptiClock would not take it either
    // The offset (cupti - host) may move by the drift CuptiClock fits over
    // the time between the pairs, and a step of at most max_clock_step_ns.
    const __int128 step = (static_cast<__int128>(pair.cupti_ns) - mid) -
                          (static_cast<__int128>(cupti_ns_) - host_mid_ns_);
    const double elapsed = static_cast<double>(mid - host_mid_ns_);
    const double allowed = static_cast<double>(bounds_.max_clock_step_ns) + elapsed * bounds_.max_drift_ppm * 1e-6;
    if (std::fabs(static_cast<double>(step)) > allowed) return false;
  }
  calibrated_ = true;
  host_mid_ns_ = mid;
  cupti_ns_ = pair.cupti_ns;
  return true;
}

bool CudaRecordCheck::Span(uint64_t start_ns, uint64_t end_ns, bool no_time, int64_t now_ns) const {
  if (!no_time && (end_ns < start_ns || end_ns - start_ns > static_cast<uint64_t>(bounds_.max_duration_ns))) {
    return false;
  }
  if (!calibrated_ || no_time) return true;  // without a pair the collector counts it as without clock
  // The start on the host's clock, by the newest pair's offset.
  const __int128 host = static_cast<__int128>(start_ns) - cupti_ns_ + host_mid_ns_;
  const __int128 d = host - now_ns;
  return d <= bounds_.max_skew_ns && d >= -static_cast<__int128>(bounds_.max_skew_ns);
}

bool CudaRecordCheck::HostTime(uint64_t host_ns, int64_t now_ns) const {
  return host_ns == 0 || Within(host_ns, now_ns, bounds_.max_skew_ns);
}

bool CudaRecordCheck::Window(const ws_cuda_window& w, int64_t now_ns) const {
  return w.on_end_ns >= w.on_start_ns && w.covers_until_ns >= w.on_start_ns &&
         w.covers_until_ns - w.on_start_ns <= static_cast<uint64_t>(bounds_.max_window_ns) &&
         Within(w.on_start_ns, now_ns, bounds_.max_skew_ns) &&
         Within(w.on_end_ns, now_ns, bounds_.max_skew_ns) && Within(w.covers_until_ns, now_ns, bounds_.max_skew_ns);
}

bool CudaRecordCheck::Device(uint32_t device_id, bool unknown_allowed) const {
  return device_id < bounds_.max_devices || (unknown_allowed && device_id == UINT32_MAX);
}

}  // namespace warpscope
