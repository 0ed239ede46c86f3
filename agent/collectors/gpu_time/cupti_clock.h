// CuptiClock: maps CUPTI timestamps (kernel start/end) to the host's
// CLOCK_MONOTONIC, which the rest of the agent uses (BPF's ktime, drains), so
// kernels line up with CPU samples and GPU metrics.
//
// libwarpscope_cuda.so sends calibration pairs (ws_cuda_clock_pair: a CUPTI
// reading between two CLOCK_MONOTONIC readings, the tightest of a few tries)
// at connect and every few seconds. On the H200 CUPTI's clock reads Unix-epoch
// nanoseconds (an offset of ~1.8e18 from CLOCK_MONOTONIC), but nothing here
// assumes which clock it is: the map is offset + drift, fitted from the
// pairs:
//   * offset from the most recent pair (its bracket midpoint; error at most
//     half its bracket, tens of ns);
//   * drift (rate difference between the two clocks, e.g. NTP slewing the
//     realtime clock) from the oldest and newest pairs kept, once they are at
//     least `min_drift_span_ns` apart; bounded to ±500 ppm, beyond which the
//     pairs are not trusted and drift is taken as 0.
// A time before the first pair maps with the first pair's offset.
//
// Threading: one owner thread (the agent's GPU-time loop).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

namespace warpscope::gpu {

struct ClockPair {
  uint64_t host_before_ns = 0;
  uint64_t cupti_ns = 0;
  uint64_t host_after_ns = 0;
};

class CuptiClock {
 public:
  static constexpr int64_t kMinDriftSpanNs = 10'000'000'000;  // 10 s
  static constexpr double kMaxDriftPpm = 500;

  // Pairs with host_after < host_before are ignored (false).
  bool AddPair(const ClockPair& pair);
  bool calibrated() const { return !pairs_.empty(); }
  // Host CLOCK_MONOTONIC nanoseconds of a CUPTI timestamp; nullopt until the
  // first pair.
  std::optional<int64_t> ToHostMonotonic(uint64_t cupti_ns) const;
  double drift_ppm() const { return drift_ppm_; }

 private:
  struct Point {
    int64_t host_mid_ns;
    uint64_t cupti_ns;
  };
  void Refit();

  std::deque<Point> pairs_;  // oldest first, at most kMaxPairs
  static constexpr size_t kMaxPairs = 64;
  double drift_ppm_ = 0;  // (d cupti / d host - 1) * 1e6
};

}  // namespace warpscope::gpu
