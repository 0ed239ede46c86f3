// Launch sampling: which kernel launches get their stack captured.
//
// LaunchTokenBucket decides, per application thread, whether a launch is
// sampled: `per_sec` tokens a second, at most `burst` saved up. It lives in a
// thread_local (trivially destructible, no locks) and resets itself when the
// session epoch changes (a new connection or config).
//
// RecordQueue carries records from application threads to the link thread:
// the sampled launches (LaunchSampleQueue) and the waits in synchronisation
// calls (WaitQueue). Bounded; an application thread only ever try_locks it,
// so a launch or a wait never waits on it: when the lock is busy or the
// queue is full the record is dropped and counted (the probe call itself,
// which the agent's uprobe sees, has already happened).
#pragma once

#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "proto/cuda/cuda_wire.h"

namespace warpscope::cuda {

// CLOCK_MONOTONIC_COARSE: cheap enough for every launch, fine for a token bucket.
inline uint64_t CoarseMonotonicNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Where an application thread is in nested CUDA API calls (the runtime's
// calls nest the driver's): the outermost call is the one counted. Lives in
// a thread_local (trivially destructible); a new session epoch (CUPTI
// attached again) forgets a call left open.
struct ApiNesting {
  uint32_t depth = 0;
  uint32_t epoch = 0;
  int outer_domain = 0;  // CUpti_CallbackDomain of the outermost call

  // API_ENTER: true for the outermost call.
  bool Enter(uint32_t session_epoch, int domain) noexcept {
    if (epoch != session_epoch) {
      epoch = session_epoch;
      depth = 0;
    }
    // A second entry in the outer call's own domain means an exit was missed
    // (callbacks switched off mid-call): start over rather than nest forever.
    if (depth > 0 && domain == outer_domain) depth = 0;
    if (depth++ > 0) return false;
    outer_domain = domain;
    return true;
  }
  // API_EXIT: true when the outermost call returns.
  bool Exit(uint32_t session_epoch) noexcept {
    if (depth == 0 || epoch != session_epoch) {
      depth = 0;
      return false;
    }
    return --depth == 0;
  }
};

struct LaunchTokenBucket {
  uint64_t last_ns = 0;
  double tokens = 0;
  uint32_t epoch = 0;

  // `now_ns` from any monotonic clock (a coarse one is fine).
  bool Take(uint64_t now_ns, uint32_t per_sec, uint32_t burst, uint32_t current_epoch) {
    if (epoch != current_epoch) {
      epoch = current_epoch;
      tokens = burst;
      last_ns = now_ns;
    } else if (now_ns > last_ns) {
      tokens += static_cast<double>(now_ns - last_ns) * per_sec * 1e-9;
      if (tokens > burst) tokens = burst;
      last_ns = now_ns;
    }
    if (tokens < 1.0) return false;
    tokens -= 1.0;
    return true;
  }
};

template <typename Record>
class RecordQueue {
 public:
  explicit RecordQueue(size_t capacity) : capacity_(capacity) { records_.reserve(capacity); }

  // Application threads. False: dropped (busy or full).
  bool TryPush(const Record& record) noexcept {
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock() || records_.size() >= capacity_) return false;
    records_.push_back(record);  // capacity reserved: never allocates
    return true;
  }

  // Link thread: moves everything queued into `out` (cleared first).
  void Drain(std::vector<Record>* out) {
    out->clear();
    out->reserve(capacity_);
    std::lock_guard<std::mutex> lock(mu_);
    out->swap(records_);  // `out` had capacity_ reserved: records_ keeps it
  }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::vector<Record> records_;
};

using LaunchSampleQueue = RecordQueue<ws_cuda_launch>;
using WaitQueue = RecordQueue<ws_cuda_wait>;

}  // namespace warpscope::cuda
