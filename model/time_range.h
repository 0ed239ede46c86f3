// The `from`/`to` parameters of the query API (GET /api/v1/profile?from=now-5m&to=now)
// and the step a graph over that range is drawn with.
//
// Times are int64 unix nanoseconds, the unit the store keys samples by. Nothing before
// 1970-01-01T00:00:00Z is accepted (no profile can be that old, and a negative time is
// more likely a mistake than a wish); the top is where int64 nanoseconds end,
// 2262-04-11T23:47:16.854775807Z.
//
// Every function here is pure: the caller passes `now`, so tests pin it and one request
// reads the clock once for both ends of its range.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope {

inline constexpr int64_t kNanosPerSecond = 1'000'000'000;
inline constexpr int64_t kNanosPerDay = 86'400 * kNanosPerSecond;
// A month of profiles is already a heavy merge; wider asks go through downsampled data.
inline constexpr int64_t kDefaultMaxQuerySpanNs = 31 * kNanosPerDay;

// Parses one query time. Accepted forms:
//   "1764417600000"               unix MILLISECONDS, always. A 10-digit seconds value is
//                                 not guessed at: it reads as a time in January 1970 (and
//                                 ParseTimeRange's span error then hints at the mix-up).
//   "2026-11-29T12:00:00Z"        RFC 3339 date-time: 'T', 't' or ' ' between date and time,
//   "2026-11-29T14:00:00.25+02:00"  optional fraction (digits past nanoseconds are dropped),
//                                 'Z'/'z' or a ±hh:mm offset (required). No leap second 60.
//   "now", "now-5m", "now-1h30m", "now+10s", "now-2d"
//                                 integer amounts with units ms s m h d w, largest first,
//                                 each unit at most once (as in Prometheus durations).
// Returns unix nanoseconds, or InvalidArgument saying what was expected.
StatusOr<int64_t> ParseQueryTime(std::string_view text, int64_t now_unix_ns);

// A half-open range [from, to) of unix nanoseconds, from < to.
struct TimeRange {
  int64_t from_unix_ns = 0;
  int64_t to_unix_ns = 0;

  int64_t span_ns() const { return to_unix_ns - from_unix_ns; }
  bool operator==(const TimeRange&) const = default;
};

// Parses both ends with one `now` and checks from < to and span <= max_span_ns.
// Errors name the parameter at fault ("parameter 'from': ...").
StatusOr<TimeRange> ParseTimeRange(std::string_view from, std::string_view to, int64_t now_unix_ns,
                                   int64_t max_span_ns = kDefaultMaxQuerySpanNs);

// The smallest "nice" step (1s 2s 5s 10s 15s 30s 1m 2m 5m 10m 15m 30m 1h 2h 6h 12h 1d) that
// cuts the range into at most max_points steps; past 1d, the smallest whole number of days
// that does. Steps are whole seconds so buckets can be aligned to multiples of the step.
// max_points below 1 is taken as 1.
int64_t ChooseStep(const TimeRange& range, int max_points = 300);

// "2026-11-29T12:00:00Z", "2026-11-29T12:00:00.25Z": UTC, shortest fraction. For error
// messages and API answers; ParseQueryTime reads it back to the same value.
std::string FormatRfc3339(int64_t unix_ns);

}  // namespace warpscope
