#include "agent/collectors/gpu_time/cupti_clock.h"

#include <cmath>

namespace warpscope::gpu {

bool CuptiClock::AddPair(const ClockPair& pair) {
  if (pair.host_after_ns < pair.host_before_ns || pair.cupti_ns == 0) return false;
  const auto mid = static_cast<int64_t>(pair.host_before_ns + (pair.host_after_ns - pair.host_before_ns) / 2);
  if (!pairs_.empty() && mid <= pairs_.back().host_mid_ns) return false;  // out of order
  pairs_.push_back(Point{mid, pair.cupti_ns});
  if (pairs_.size() > kMaxPairs) pairs_.pop_front();
  Refit();
  return true;
}

void CuptiClock::Refit() {
  drift_ppm_ = 0;
  const Point& a = pairs_.front();
  const Point& b = pairs_.back();
  const int64_t host_span = b.host_mid_ns - a.host_mid_ns;
  if (host_span < kMinDriftSpanNs) return;
  const double cupti_span = static_cast<double>(b.cupti_ns - a.cupti_ns);  // unsigned difference: b is later
  const double ppm = (cupti_span / static_cast<double>(host_span) - 1.0) * 1e6;
  if (std::isfinite(ppm) && std::fabs(ppm) <= kMaxDriftPpm) drift_ppm_ = ppm;
}

std::optional<int64_t> CuptiClock::ToHostMonotonic(uint64_t cupti_ns) const {
  if (pairs_.empty()) return std::nullopt;
  const Point& ref = pairs_.back();
  // Signed distance in CUPTI time from the newest pair, converted to host
  // time by the fitted rate.
  const double d_cupti = static_cast<double>(static_cast<int64_t>(cupti_ns - ref.cupti_ns));
  const double d_host = d_cupti / (1.0 + drift_ppm_ * 1e-6);
  return ref.host_mid_ns + static_cast<int64_t>(std::llround(d_host));
}

}  // namespace warpscope::gpu
