// What bounds the queries a server answers at once, and what it refused:
// the counters of every query rejection (reported by /api/v1/status under
// "queries") and the gate that lets only a few heavy queries run at a time.
//
// A heavy query (a merged profile, series per process, insights, energy, the
// GPU views, MCP tools over them) builds a working set that grows with the
// data it reads; sixteen of them at once took a server from about 100 MB to
// nearly 2 GB. The row budget (ApiOptions::max_query_rows) bounds one query,
// the gate how many run together: a query that finds every slot taken waits
// up to `wait` for one, then is answered 503 with Retry-After, so a storm of
// queries costs time, not memory.
//
// Threading: any worker thread; the counters are atomics and the gate
// guards its count with a mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "base/status.h"

namespace warpscope::server {

struct QueryCounters {
  std::atomic<uint64_t> bad_parameters{0};  // 400 from a query route: a parameter malformed or out of its range
  std::atomic<uint64_t> over_budget{0};     // 400: the query would read more rows than max_query_rows
  std::atomic<uint64_t> busy{0};            // 503: every heavy-query slot stayed taken
  std::atomic<uint64_t> mcp_rejected{0};    // 4xx from /mcp: malformed JSON-RPC, transport checks
  std::atomic<uint64_t> mcp_too_deep{0};    // of those: nested deeper than kMaxMcpJsonDepth
  std::atomic<uint64_t> mcp_malformed{0};   // of those: not JSON
  std::atomic<uint64_t> mcp_bad_arguments{0};  // tool calls refused for their arguments (isError)
};

class HeavyQueryGate {
 public:
  HeavyQueryGate(int slots, std::chrono::milliseconds wait) : free_(slots < 1 ? 1 : slots), wait_(wait) {}

  // Takes a slot, waiting up to `wait` for one; false when none came.
  bool Enter() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!freed_.wait_for(lock, wait_, [this] { return free_ > 0; })) return false;
    --free_;
    return true;
  }
  void Leave() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++free_;
    }
    freed_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable freed_;
  int free_;  // guarded by mu_
  const std::chrono::milliseconds wait_;
};

// Everything the routes share about limits; ApiRoutes makes one per route table.
struct QueryLimits {
  QueryLimits(int heavy_slots, std::chrono::milliseconds wait) : gate(heavy_slots, wait) {}
  QueryCounters counters;
  HeavyQueryGate gate;
};

// The points of every series in `series` (storage::Series, MetricSeries).
template <class SeriesVector>
size_t PointsOf(const SeriesVector& series) {
  size_t n = 0;
  for (const auto& s : series) n += s.points.size();
  return n;
}

// InvalidArgument, counted, when a query read more than `max_rows` rows;
// the message says what to narrow.
inline Status CheckQueryRows(size_t rows, size_t max_rows, QueryLimits* limits) {
  if (rows <= max_rows) return Status::Ok();
  if (limits != nullptr) limits->counters.over_budget.fetch_add(1, std::memory_order_relaxed);
  return InvalidArgumentError("the query reads " + std::to_string(rows) + " rows, more than the server's limit of " +
                              std::to_string(max_rows) +
                              " per query: choose a shorter range, a larger step or a narrower "
                              "selector");
}

}  // namespace warpscope::server
