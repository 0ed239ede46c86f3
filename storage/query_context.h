// QueryContext: what travels with one query through a store besides its
// parameters: a deadline (a query past it stops with DeadlineExceeded instead
// of holding a worker), cancellation, and the caveats of the answer (ranges
// the store could not read, e.g. a corrupt segment block), which the server
// puts into the answer so that a partial answer is never taken for a whole one.
//
// Threading: the server creates one per request on the worker that serves it;
// a store may call Check() and AddGap() from any thread working on the query,
// and Cancel() may come from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"

namespace warpscope::storage {

// A part of the data a store could not read for this answer: its time range
// (as far as the store knows it; the whole range queried when it does not)
// and why.
struct DataGap {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  std::string reason;  // "segment seg-…-….wss block 3 is corrupt: CRC mismatch"
  friend bool operator==(const DataGap&, const DataGap&) = default;
};

class QueryContext {
 public:
  using Clock = std::chrono::steady_clock;

  QueryContext() = default;  // no deadline
  explicit QueryContext(Clock::time_point deadline) : deadline_(deadline), has_deadline_(true) {}
  static QueryContext WithTimeout(std::chrono::nanoseconds timeout) { return QueryContext(Clock::now() + timeout); }

  // OK while the query may go on; DeadlineExceeded or Cancelled once it must
  // stop. One clock read: cheap enough for every few thousand rows.
  Status Check() const {
    if (cancelled_.load(std::memory_order_relaxed)) return CancelledError("query cancelled");
    if (has_deadline_ && Clock::now() >= deadline_) {
      return DeadlineExceededError("query ran past its deadline; narrow the time range or the selector");
    }
    return Status::Ok();
  }
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool has_deadline() const { return has_deadline_; }
  Clock::time_point deadline() const { return deadline_; }
  // Time left before the deadline (0 when past it; a day without one), for
  // backends that take a timeout of their own (ClickHouse's max_execution_time).
  std::chrono::milliseconds remaining() const {
    if (!has_deadline_) return std::chrono::hours(24);
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()));
  }

  // Records a gap once (an equal gap added twice is kept once).
  void AddGap(DataGap gap) {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::find(gaps_.begin(), gaps_.end(), gap) == gaps_.end()) gaps_.push_back(std::move(gap));
  }
  std::vector<DataGap> gaps() const {
    std::lock_guard<std::mutex> lock(mu_);
    return gaps_;
  }

 private:
  Clock::time_point deadline_{};
  bool has_deadline_ = false;
  std::atomic<bool> cancelled_{false};
  mutable std::mutex mu_;
  std::vector<DataGap> gaps_;
};

// For stores: `context` may be null (no deadline, caveats dropped).
inline Status CheckQuery(const QueryContext* context) { return context ? context->Check() : Status::Ok(); }
inline void AddQueryGap(QueryContext* context, DataGap gap) {
  if (context) context->AddGap(std::move(gap));
}

}  // namespace warpscope::storage
