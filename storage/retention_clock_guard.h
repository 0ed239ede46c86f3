// The guard both stores put in front of retention: retention trusts the
// server's wall clock, so a clock stepped forward by more than --retention
// would delete every row for good (stepping back brings nothing back).
// A pass stands aside, warns and counts instead while "now" is ahead of the
// newest stored row by more than kRetentionClockJumpNs: either the clock
// jumped, or no agent has sent anything for that long, and in neither case
// is deleting urgent (nothing new is being written). Once rows arrive at
// times near the clock again, retention goes on.
//
// Threading: plain functions; RetentionGuardCounter from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace warpscope::storage {

inline constexpr int64_t kRetentionClockJumpNs = int64_t{15} * 60 * 1'000'000'000;

// Whether a retention pass at `now_ns` must stand aside. `newest_row_ns`:
// the newest row the store holds, INT64_MIN when it holds none (nothing to
// compare with, and nothing of rows to delete). `guard_ns` <= 0: never.
inline bool RetentionMustPause(int64_t now_ns, int64_t newest_row_ns, int64_t guard_ns) {
  if (guard_ns <= 0 || newest_row_ns == INT64_MIN) return false;
  return now_ns > newest_row_ns && now_ns - newest_row_ns > guard_ns;
}

}  // namespace warpscope::storage
