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
#include <optional>

#include "proto/warpscope/v1/ingest.pb.h"

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

// For a store that builds its rows from the whole batch: nullopt when every
// row's time is inside `bounds` (nothing to copy), else a copy of `batch`
// without the rows outside (samples, metric points, GPU activities by their
// start, coverage rows by their second), counted in *dropped. The copy's
// indexes (stacks, label sets, strings) are the batch's.
inline std::optional<warpscope::v1::IngestBatch> WithoutRowsOutside(const warpscope::v1::IngestBatch& batch,
                                                                   const IngestTimeBounds& bounds,
                                                                   DroppedRows* dropped) {
  auto outside = [&](int64_t t) { return bounds.TooOld(t) || bounds.TooNew(t); };
  bool any = false;
  for (const auto& s : batch.samples()) any = any || outside(s.time_unix_nanos());
  for (const auto& p : batch.metric_points()) any = any || outside(p.time_unix_nanos());
  for (const auto& a : batch.gpu_activities()) any = any || outside(a.start_unix_nanos());
  for (const auto& c : batch.gpu_trace_coverage()) any = any || outside(c.second_unix_nanos());
  if (!any) return std::nullopt;
  warpscope::v1::IngestBatch kept = batch;
  auto keep = [&](auto* rows, auto time_of) {
    int out = 0;
    for (int i = 0; i < rows->size(); ++i) {
      if (dropped->Keep(bounds, time_of(rows->Get(i)))) rows->SwapElements(out++, i);
    }
    rows->DeleteSubrange(out, rows->size() - out);
  };
  keep(kept.mutable_samples(), [](const auto& s) { return s.time_unix_nanos(); });
  keep(kept.mutable_metric_points(), [](const auto& p) { return p.time_unix_nanos(); });
  keep(kept.mutable_gpu_activities(), [](const auto& a) { return a.start_unix_nanos(); });
  keep(kept.mutable_gpu_trace_coverage(), [](const auto& c) { return c.second_unix_nanos(); });
  return kept;
}

}  // namespace warpscope::storage
