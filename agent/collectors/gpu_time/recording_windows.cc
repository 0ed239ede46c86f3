#include "agent/collectors/gpu_time/recording_windows.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace warpscope::gpu {
namespace {

constexpr size_t kRecentWindows = 64;

}  // namespace

bool RecordingWindows::Add(const KernelExecution& kernel) {
  if (waiting_ >= max_kernels_) return false;
  open_.push_back(kernel);
  ++waiting_;
  return true;
}

void RecordingWindows::Close(const ws_cuda_window& window) {
  closed_.push_back(Closed{window, std::move(open_)});
  open_.clear();
  ++windows_;
}

void RecordingWindows::Settle(Closed& closed, uint64_t until_ns, int64_t bucket_offset_ns,
                              std::vector<KernelExecution>* out) {
  const ws_cuda_window& w = closed.window;
  const uint64_t end = std::clamp(until_ns, w.on_end_ns, w.covers_until_ns);
  const double covered = static_cast<double>(end - w.on_start_ns);
  double on = static_cast<double>(w.on_end_ns - w.on_start_ns);
  // A busy GPU runs behind the launches: the kernels launched in the window
  // (those recorded) execute over a longer span than the window, and after a
  // detach the launching thread first refills the drained queue. What the
  // window sampled is the GPU's time over that execution span, so it is
  // the span (when longer) that the period is divided by. Windows back to
  // back (nothing detached in between) record everything: weight 1.
  int64_t first_start = INT64_MAX, last_end = INT64_MIN;
  double gpu_ns = 0;
  for (const KernelExecution& k : closed.kernels) {
    if (k.end_ns <= k.start_ns) continue;
    gpu_ns += static_cast<double>(k.end_ns - k.start_ns);
    first_start = std::min(first_start, k.start_ns);
    last_end = std::max(last_end, k.end_ns);
  }
  if (covered > on && last_end > first_start) on = std::max(on, static_cast<double>(last_end - first_start));
  const double weight = on > 0 && covered > on ? covered / on : 1.0;
  for (KernelExecution& k : closed.kernels) {
    k.weight = weight;
    if (weight != 1.0) {
      k.covers_from = static_cast<int64_t>(w.on_start_ns) + bucket_offset_ns;
      k.covers_to = static_cast<int64_t>(end) + bucket_offset_ns;
    }
    out->push_back(k);
  }
  waiting_ -= closed.kernels.size();
  if (on > 0) {
    recent_.push_back(Recent{on, std::max(covered, on), gpu_ns});
    if (recent_.size() > kRecentWindows) recent_.pop_front();
  }
}

void RecordingWindows::TakeSettled(int64_t now_ns, bool ended, int64_t bucket_offset_ns,
                                   std::vector<KernelExecution>* out) {
  const uint64_t now = now_ns > 0 ? static_cast<uint64_t>(now_ns) : 0;
  while (!closed_.empty() && (ended || closed_.front().window.covers_until_ns <= now)) {
    Settle(closed_.front(), ended ? now : closed_.front().window.covers_until_ns, bucket_offset_ns, out);
    closed_.pop_front();
  }
  if (ended) {
    // Recording when the process ended: those kernels covered only themselves.
    out->insert(out->end(), open_.begin(), open_.end());
    waiting_ -= open_.size();
    open_.clear();
  }
}

RecordingEstimate RecordingWindows::estimate() const {
  RecordingEstimate e;
  e.windows = windows_;
  double on = 0, covered = 0;
  for (const Recent& r : recent_) on += r.on_ns, covered += r.covered_ns;
  e.recorded_share = covered > 0 ? on / covered : 1;
  if (recent_.size() < 2) return e;
  double mean = 0;
  for (const Recent& r : recent_) mean += r.gpu_ns / r.on_ns;
  mean /= static_cast<double>(recent_.size());
  if (mean <= 0) return e;
  double var = 0;
  for (const Recent& r : recent_) var += (r.gpu_ns / r.on_ns - mean) * (r.gpu_ns / r.on_ns - mean);
  var /= static_cast<double>(recent_.size() - 1);
  e.relative_error = std::sqrt(var / static_cast<double>(recent_.size())) / mean;
  return e;
}

}  // namespace warpscope::gpu
