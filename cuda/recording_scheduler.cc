#include "cuda/recording_scheduler.h"

#include <algorithm>

namespace warpscope::cuda {

namespace {
constexpr uint64_t kMs = 1'000'000ull;
// After a window closes, its kernels may still be queued on a GPU that runs
// behind the launches: kernel activity stays on, and the link looks every
// kDrainStepNs whether their records are in, for at most kMaxDrainNs.
constexpr uint64_t kDrainNs = 20 * kMs;
constexpr uint64_t kDrainStepNs = 10 * kMs;
constexpr uint64_t kMaxDrainNs = 1000 * kMs;
}  // namespace

void RecordingScheduler::Reset(const LinkConfig& config, uint64_t now) {
  config_ = config;
  window_ = Window{};
  interrupted_ = false;
  duty_start_ns_ = now;
  if (windowed()) window_.next_open_ns = now;
}

RecordingScheduler::Step RecordingScheduler::Due(uint64_t now) const {
  if (!windowed() || interrupted_) return Step::kNone;
  if (window_.open && now >= window_.start_ns + uint64_t{config_.duty_on_ms} * kMs) return Step::kClose;
  if (window_.drain_until_ns != 0 && now >= window_.drain_until_ns) return Step::kFinishDrain;
  if (!window_.open && window_.drain_until_ns == 0 && window_.next_open_ns != 0 && now >= window_.next_open_ns) {
    return Step::kOpen;
  }
  return Step::kNone;
}

uint64_t RecordingScheduler::NextDeadline() const {
  if (!windowed() || interrupted_) return UINT64_MAX;
  if (window_.open) return window_.start_ns + uint64_t{config_.duty_on_ms} * kMs;
  if (window_.drain_until_ns != 0) return window_.drain_until_ns;
  if (window_.next_open_ns != 0) return window_.next_open_ns;
  return UINT64_MAX;
}

void RecordingScheduler::Opened(uint64_t start_ns, uint64_t attach_ns) {
  window_ = Window{};
  window_.open = true;
  window_.start_ns = start_ns;
  window_.attach_ns = attach_ns;
}

void RecordingScheduler::RetryOpenAt(uint64_t at_ns) {
  window_ = Window{};
  window_.next_open_ns = at_ns;
}

RecordingScheduler::Close RecordingScheduler::CloseAt(uint64_t now, uint64_t launches, uint64_t leave_ns) {
  Close c;
  const uint64_t on_ns = now - window_.start_ns;
  c.period_ns = uint64_t{config_.duty_period_ms} * kMs;
  if (config_.mode == WS_CUDA_MODE_ADAPTIVE) {
    c.period_ns = PlanWindowPeriodNs(on_ns, launches, window_.attach_ns + leave_ns, config_.overhead_budget_ppm,
                                     c.period_ns);
  }
  if (c.period_ns <= on_ns) {
    // Recording all the time: this window closes and the next one opens now.
    c.continuous = true;
    window_.start_ns = now;
    window_.attach_ns = 0;
    return c;
  }
  window_.open = false;
  window_.end_ns = now;
  window_.covers_until_ns = window_.start_ns + c.period_ns;
  window_.drain_until_ns = now + kDrainNs;
  return c;
}

bool RecordingScheduler::DrainMore(uint64_t now) {
  if (window_.drain_until_ns == 0 || now >= window_.end_ns + kMaxDrainNs) return false;
  window_.drain_until_ns = std::min(now + kDrainStepNs, window_.end_ns + kMaxDrainNs);
  return true;
}

void RecordingScheduler::Drained() {
  window_.drain_until_ns = 0;
  window_.next_open_ns = std::max(window_.covers_until_ns, window_.end_ns + 1);
}

void RecordingScheduler::Interrupted() {
  interrupted_ = true;
  window_ = Window{};
}

void RecordingScheduler::Resume(uint64_t now) {
  if (!interrupted_) return;
  interrupted_ = false;
  window_ = Window{};
  if (windowed()) window_.next_open_ns = now;
}

RecordingScheduler::DutyPhase RecordingScheduler::Duty(uint64_t now) {
  const uint64_t period = std::max<uint64_t>(1, uint64_t{config_.duty_period_ms} * kMs);
  while (now >= duty_start_ns_ + period) duty_start_ns_ += period;
  const uint64_t off_at = duty_start_ns_ + uint64_t{config_.duty_on_ms} * kMs;
  DutyPhase p;
  p.on = now < off_at;
  p.next_change_ns = p.on ? off_at : duty_start_ns_ + period;
  return p;
}

}  // namespace warpscope::cuda
