// IngestTimeBounds: the times a store keeps. A row (sample, metric point, GPU
// activity, coverage second) older than what retention keeps would be
// acknowledged and never shown, and one far in the future (a node with a bad
// clock) would pin its segment or partition past retention for good; both
// are dropped at ingest and counted in the answer (IngestResult), the rest
// of the batch is stored. Every store applies the same bounds.
//
// Stateless; any thread.
#pragma once

#include <algorithm>
#include <cstdint>

namespace warpscope::storage {

// How far ahead of the server's clock a row may be (clock skew between
// nodes; the agent stamps rows with its own clock).
inline constexpr int64_t kDefaultMaxFutureSkewNs = 5LL * 60 * 1'000'000'000;

struct IngestTimeBounds {
  int64_t min_ns = 0;  // inclusive
  int64_t max_ns = 0;  // inclusive

  // [now - retention, now + max_future]; retention <= 0 keeps everything
  // since the Unix epoch (times before it are never real).
  static IngestTimeBounds At(int64_t now_ns, int64_t retention_ns, int64_t max_future_ns = kDefaultMaxFutureSkewNs) {
    IngestTimeBounds b;
    b.min_ns = retention_ns > 0 ? std::max<int64_t>(0, now_ns - retention_ns) : 0;
    b.max_ns = now_ns + std::max<int64_t>(0, max_future_ns);
    return b;
  }
  bool TooOld(int64_t t) const { return t < min_ns; }
  bool TooNew(int64_t t) const { return t > max_ns; }
};

// Rows of one batch dropped by IngestTimeBounds.
struct DroppedRows {
  uint64_t too_old = 0;
  uint64_t too_new = 0;
  // True when the row at `t` is kept; counts it otherwise.
  bool Keep(const IngestTimeBounds& bounds, int64_t t) {
    if (bounds.TooOld(t)) [[unlikely]] {
      ++too_old;
      return false;
    }
    if (bounds.TooNew(t)) [[unlikely]] {
      ++too_new;
      return false;
    }
    return true;
  }
  uint64_t total() const { return too_old + too_new; }
};

}  // namespace warpscope::storage
