// RecordingWindows: one CUDA process's windowed recording (adaptive mode and
// detached duty mode, proto/cuda/cuda_wire.h WS_CUDA_MSG_WINDOW).
//
// The library records kernels only inside windows and detaches CUPTI in
// between; each window's kernels stand for the whole time from the window's
// start to the next one's. So a kernel's weight is the window's period over
// its recording time (or, on a busy GPU that runs behind the launches, over
// the span the window's kernels executed in: see Settle), and that is known
// only when the window has closed
// (WINDOW message: every record of the window came before it) and its period
// is over, or the process ended first (then the period is cut at the end, so
// a process that exits between windows is not over-counted). Kernels wait
// here until then; the caller hands them, weighted, to the LaunchJoiner (whose
// sampled launches live for a minute, far longer than a period).
//
// The estimate's error: per window, the recorded GPU time per recording
// second; the relative standard error of their mean over the last windows is
// reported (sampling error of a stationary workload; a workload that changes
// faster than the windows shows up as a large value).
//
// Threading: owned by the GPU-time collector's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "agent/collectors/gpu_time/launch_joiner.h"
#include "proto/cuda/cuda_wire.h"

namespace warpscope::gpu {

struct RecordingEstimate {
  uint64_t windows = 0;        // windows closed so far
  double recorded_share = 1;   // recording time over covered time, last windows
  double relative_error = 0;   // of the GPU time per second, last windows (0: fewer than 2)
};

class RecordingWindows {
 public:
  explicit RecordingWindows(size_t max_kernels) : max_kernels_(max_kernels) {}

  // A kernel recorded in the window open now; false when the bound is
  // reached (the caller passes it on unweighted and counts it).
  bool Add(const KernelExecution& kernel);
  // The open window closed: its kernels wait for its period to pass.
  void Close(const ws_cuda_window& window);
  // Appends the kernels whose weight is settled, weighted: of closed windows
  // whose period ended by `now_ns`; with `ended` (the process is gone), all,
  // with periods cut at `now_ns` and the open window's kernels at weight 1.
  // A weighted kernel covers its window's period (KernelExecution::covers_*,
  // in the kernels' bucket clock: monotonic + `bucket_offset_ns`).
  void TakeSettled(int64_t now_ns, bool ended, int64_t bucket_offset_ns, std::vector<KernelExecution>* out);

  RecordingEstimate estimate() const;
  size_t waiting() const { return waiting_; }

 private:
  struct Closed {
    ws_cuda_window window;
    std::vector<KernelExecution> kernels;
  };
  struct Recent {
    double on_ns, covered_ns, gpu_ns;
  };
  void Settle(Closed& closed, uint64_t until_ns, int64_t bucket_offset_ns, std::vector<KernelExecution>* out);

  const size_t max_kernels_;
  size_t waiting_ = 0;
  std::vector<KernelExecution> open_;
  std::deque<Closed> closed_;
  std::deque<Recent> recent_;  // the last windows, for estimate()
  uint64_t windows_ = 0;
};

}  // namespace warpscope::gpu
