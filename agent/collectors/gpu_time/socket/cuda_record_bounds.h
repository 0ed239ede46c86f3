// CudaRecordBounds: the bounds a CUDA-socket record must be within before
// anything of the agent sees it. The socket accepts any local user, so every
// time and duration a library sends is untrusted: a record past these bounds
// is dropped and counted where it enters the agent (CudaSocketServer), alone:
// the rest of its message, its connection and every other process's records
// go on. The bounds are the server's (a GPU activity lasts at most a day,
// storage/embedded/dictionary/batch_validator.h), so the agent never uploads a
// row the server would refuse, plus the ones only the agent can check:
//
//   * a kernel, copy, set or wait lasts at most max_duration_ns and does not
//     end before it starts (a record flagged WS_CUDA_RECORD_FLAG_NO_TIME has
//     no duration and passes);
//   * once the connection has a clock pair, its start maps (by that pair's
//     offset) to within max_skew_ns of the agent's CLOCK_MONOTONIC now;
//   * a clock pair (HELLO's or a CLOCK message) brackets its CUPTI reading in
//     at most max_bracket_ns, with its host readings within max_skew_ns of
//     now, comes after the pair before, and moves the connection's offset by
//     at most max_clock_step_ns plus max_drift_ppm of the time since the pair
//     before (CuptiClock fits drift up to 500 ppm);
//   * a window ends no earlier than it starts, stands for at most
//     max_window_ns from its start (--gpu-duty's period is at most a minute;
//     the joiner spreads each of its kernels over the seconds it stands for),
//     and its times are within max_skew_ns of now;
//   * launch host times and PC-sample read times are within max_skew_ns;
//   * a kernel, copy or PC sample names a device ordinal below
//     max_devices (a PC sample may say UINT32_MAX, unknown). The analysis
//     keeps figures per process, device and second, and uploads a series per
//     device: 2^32 made-up ordinals would make as many.
//
// Threading: one CudaRecordCheck per connection, on the socket server's
// thread.
#pragma once

#include <cstdint>
#include <optional>

#include "proto/cuda/cuda_wire.h"

namespace warpscope {

struct CudaRecordBounds {
  int64_t max_duration_ns = 24LL * 3600 * 1'000'000'000;  // a day, as the server
  int64_t max_skew_ns = 10LL * 60 * 1'000'000'000;         // 10 minutes
  int64_t max_bracket_ns = 1'000'000'000;                  // 1 s
  int64_t max_clock_step_ns = 1'000'000'000;               // 1 s
  double max_drift_ppm = 1000;
  int64_t max_window_ns = 2LL * 60 * 1'000'000'000;        // twice --gpu-duty's longest period
  // CUDA device ordinals a process sees: 8 GPUs of 7 MIG instances each is 56.
  uint32_t max_devices = 128;
};

// What was dropped, all connections together.
struct CudaRecordRejections {
  uint64_t kernels = 0;
  uint64_t memops = 0;
  uint64_t waits = 0;
  uint64_t launches = 0;
  uint64_t pc_samples = 0;
  uint64_t clock_pairs = 0;  // HELLO's pair (left out) or a CLOCK message
  uint64_t windows = 0;
};

class CudaRecordCheck {
 public:
  explicit CudaRecordCheck(const CudaRecordBounds& bounds) : bounds_(bounds) {}

  // A pair within the bounds becomes the connection's offset (true).
  bool TakeClockPair(const ws_cuda_clock_pair& pair, int64_t now_ns);
  // CUPTI-clock start and end of a kernel, copy, set or wait.
  bool Span(uint64_t start_ns, uint64_t end_ns, bool no_time, int64_t now_ns) const;
  // A CLOCK_MONOTONIC time from the library.
  bool HostTime(uint64_t host_ns, int64_t now_ns) const;
  bool Window(const ws_cuda_window& w, int64_t now_ns) const;
  // A CUDA device ordinal (UINT32_MAX passes only where `unknown_allowed`).
  bool Device(uint32_t device_id, bool unknown_allowed) const;

 private:
  const CudaRecordBounds bounds_;
  bool calibrated_ = false;
  int64_t host_mid_ns_ = 0;
  uint64_t cupti_ns_ = 0;
};

}  // namespace warpscope
