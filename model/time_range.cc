#include "model/time_range.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <optional>

namespace warpscope {
namespace {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kNanosPerMilli = 1'000'000;
constexpr char kForms[] =
    "expected unix milliseconds (1764417600000), an RFC 3339 time (2026-11-29T12:00:00Z) "
    "or now with an offset (now-5m, now-1h30m)";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// A '+' in a URL query string decodes to a space, so "now+10s" and "...T12:00:00+02:00"
// arrive as "now 10s" and "...T12:00:00 02:00" when the client did not encode them.
std::string SpaceHint(std::string_view text) {
  if (text.find(' ') == std::string_view::npos) return "";
  return " (a '+' in a URL query string arrives as a space; send it as %2B)";
}

Status BadTime(std::string_view text, const std::string& why) {
  return InvalidArgumentError("bad time '" + std::string(text) + "': " + why + SpaceHint(text));
}

// Non-empty run of digits that fits in int64, or nullopt.
std::optional<int64_t> ParseDigits(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int64_t value = 0;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, c - '0', &value)) {
      return std::nullopt;
    }
  }
  return value;
}

// Exactly n digits at text[pos...], as a small number.
std::optional<int> FixedDigits(std::string_view text, size_t pos, size_t n) {
  if (pos + n > text.size()) return std::nullopt;
  int value = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (!IsDigit(text[i])) return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

StatusOr<int64_t> ParseUnixMillis(std::string_view text) {
  const std::optional<int64_t> ms = ParseDigits(text);
  if (!ms || *ms > kMaxInt64 / kNanosPerMilli) {
    return BadTime(text, "unix milliseconds out of range (the last is 9223372036854, in 2262)");
  }
  return *ms * kNanosPerMilli;
}

// Largest first: Prometheus-style durations name each unit once, in this order.
struct DurationUnit {
  std::string_view name;
  int64_t nanos;
};
constexpr DurationUnit kUnits[] = {
    {"w", 7 * kNanosPerDay}, {"d", kNanosPerDay},      {"h", 3600 * kNanosPerSecond},
    {"m", 60 * kNanosPerSecond}, {"s", kNanosPerSecond}, {"ms", kNanosPerMilli},
};

StatusOr<int64_t> ParseOffset(std::string_view full, std::string_view s) {
  if (s.empty()) return BadTime(full, "expected a duration after the sign (now-5m, now-1h30m)");
  int64_t total = 0;
  size_t previous_unit = 0;  // index into kUnits + 1; 0 = none yet
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t digits_begin = pos;
    while (pos < s.size() && IsDigit(s[pos])) ++pos;
    const std::optional<int64_t> amount = ParseDigits(s.substr(digits_begin, pos - digits_begin));
    if (!amount) {
      if (pos == digits_begin) return BadTime(full, "expected a number at '" + std::string(s.substr(pos)) + "'");
      return BadTime(full, "offset too large");
    }
    const size_t unit_begin = pos;
    while (pos < s.size() && s[pos] >= 'a' && s[pos] <= 'z') ++pos;
    const std::string_view unit = s.substr(unit_begin, pos - unit_begin);
    size_t index = 0;
    while (index < std::size(kUnits) && kUnits[index].name != unit) ++index;
    if (index == std::size(kUnits)) {
      if (unit.empty()) return BadTime(full, "expected a unit after " + std::to_string(*amount) + " (ms, s, m, h, d or w)");
      return BadTime(full, "unknown unit '" + std::string(unit) + "' (use ms, s, m, h, d or w)");
    }
    if (index + 1 <= previous_unit) {
      return BadTime(full, "units must go from largest to smallest, each once (like 1h30m)");
    }
    previous_unit = index + 1;
    int64_t nanos = 0;
    if (__builtin_mul_overflow(*amount, kUnits[index].nanos, &nanos) ||
        __builtin_add_overflow(total, nanos, &total)) {
      return BadTime(full, "offset too large");
    }
  }
  return total;
}

StatusOr<int64_t> ParseRelative(std::string_view text, int64_t now_unix_ns) {
  const std::string_view rest = text.substr(3);  // after "now"
  if (rest.empty()) return now_unix_ns;
  if (rest[0] != '-' && rest[0] != '+') {
    return BadTime(text, "expected '+' or '-' after 'now' (now-5m, now+10s)");
  }
  ASSIGN_OR_RETURN(const int64_t offset, ParseOffset(text, rest.substr(1)));
  int64_t result = 0;
  const bool overflow = rest[0] == '-' ? __builtin_sub_overflow(now_unix_ns, offset, &result)
                                       : __builtin_add_overflow(now_unix_ns, offset, &result);
  if (overflow || result < 0) return BadTime(text, "lands outside 1970..2262");
  return result;
}

// YYYY-MM-DD('T'|'t'|' ')hh:mm:ss[.fraction]('Z'|'z'|('+'|'-')hh:mm), RFC 3339 section 5.6.
StatusOr<int64_t> ParseRfc3339(std::string_view text) {
  const std::string shape = "expected an RFC 3339 time like 2026-11-29T12:00:00Z or 2026-11-29T14:00:00.5+02:00";
  const auto year = FixedDigits(text, 0, 4), month = FixedDigits(text, 5, 2), day = FixedDigits(text, 8, 2);
  const auto hour = FixedDigits(text, 11, 2), minute = FixedDigits(text, 14, 2), second = FixedDigits(text, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ') || text[13] != ':' || text[16] != ':') {
    return BadTime(text, shape);
  }
  size_t pos = 19;
  int64_t fraction_ns = 0;
  if (pos < text.size() && text[pos] == '.') {
    const size_t begin = ++pos;
    int64_t scale = 100'000'000;
    for (; pos < text.size() && IsDigit(text[pos]); ++pos, scale /= 10) fraction_ns += (text[pos] - '0') * scale;
    if (pos == begin) return BadTime(text, "expected digits after '.'");
  }
  int64_t offset_seconds = 0;
  const std::string_view zone = text.substr(pos);
  if (zone == "Z" || zone == "z") {
    // UTC.
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':' &&
             FixedDigits(zone, 1, 2) && FixedDigits(zone, 4, 2)) {
    const int oh = *FixedDigits(zone, 1, 2), om = *FixedDigits(zone, 4, 2);
    if (oh > 23 || om > 59) return BadTime(text, "offset out of range");
    offset_seconds = (zone[0] == '-' ? -1 : 1) * (oh * 3600 + om * 60);
  } else if (zone.empty()) {
    return BadTime(text, "needs a zone: 'Z' or an offset like +02:00");
  } else {
    return BadTime(text, shape);
  }

  const std::chrono::year_month_day date{std::chrono::year(*year), std::chrono::month(*month),
                                         std::chrono::day(*day)};
  if (!date.ok()) return BadTime(text, "no such date");
  if (*hour > 23 || *minute > 59) return BadTime(text, "time of day out of range");
  // Unix time has no leap seconds; 60 would silently alias the next second.
  if (*second == 60) return BadTime(text, "leap second 60 is not supported");
  if (*second > 59) return BadTime(text, "time of day out of range");

  const int64_t days = std::chrono::sys_days(date).time_since_epoch().count();
  const int64_t seconds = days * 86'400 + *hour * 3600 + *minute * 60 + *second - offset_seconds;
  if (seconds < 0) return BadTime(text, "before 1970-01-01T00:00:00Z");
  int64_t ns = 0;
  if (seconds > kMaxInt64 / kNanosPerSecond || __builtin_mul_overflow(seconds, kNanosPerSecond, &ns) ||
      __builtin_add_overflow(ns, fraction_ns, &ns)) {
    return BadTime(text, "after 2262-04-11T23:47:16.854775807Z, the last time int64 nanoseconds hold");
  }
  return ns;
}

// "31d", "1d12h", "45m", "90s": for span errors.
std::string FormatSpan(int64_t ns) {
  const int64_t seconds = ns / kNanosPerSecond;
  std::string out;
  const int64_t parts[] = {seconds / 86'400, seconds / 3600 % 24, seconds / 60 % 60, seconds % 60};
  const char* units[] = {"d", "h", "m", "s"};
  for (int i = 0; i < 4; ++i) {
    if (parts[i] != 0) out += std::to_string(parts[i]) + units[i];
  }
  return out.empty() ? std::to_string(ns / kNanosPerMilli) + "ms" : out;
}

// 10 or fewer digits read as unix milliseconds is early 1970: almost surely seconds.
bool LooksLikeUnixSeconds(std::string_view text) {
  return !text.empty() && text.size() <= 10 && ParseDigits(text).has_value();
}

}  // namespace

StatusOr<int64_t> ParseQueryTime(std::string_view text, int64_t now_unix_ns) {
  if (text.empty()) return InvalidArgumentError(std::string("empty time: ") + kForms);
  if (text.substr(0, 3) == "now") return ParseRelative(text, now_unix_ns);
  if (std::all_of(text.begin(), text.end(), IsDigit)) return ParseUnixMillis(text);
  if (text.size() >= 10 && IsDigit(text[0]) && text[4] == '-') return ParseRfc3339(text);
  return BadTime(text, kForms);
}

StatusOr<TimeRange> ParseTimeRange(std::string_view from, std::string_view to, int64_t now_unix_ns,
                                   int64_t max_span_ns) {
  StatusOr<int64_t> from_ns = ParseQueryTime(from, now_unix_ns);
  if (!from_ns.ok()) return from_ns.status().WithContext("parameter 'from'");
  StatusOr<int64_t> to_ns = ParseQueryTime(to, now_unix_ns);
  if (!to_ns.ok()) return to_ns.status().WithContext("parameter 'to'");
  const TimeRange range{*from_ns, *to_ns};
  if (range.from_unix_ns >= range.to_unix_ns) {
    return InvalidArgumentError("parameter 'from' (" + std::string(from) + " = " + FormatRfc3339(*from_ns) +
                                ") must be before parameter 'to' (" + std::string(to) + " = " +
                                FormatRfc3339(*to_ns) + ")");
  }
  if (range.span_ns() > max_span_ns) {
    std::string hint;
    if (LooksLikeUnixSeconds(from) || LooksLikeUnixSeconds(to)) {
      hint = "; 'from' and 'to' are unix milliseconds, and a 10-digit number looks like seconds";
    }
    return InvalidArgumentError("time range from 'from' (" + FormatRfc3339(*from_ns) + ") to 'to' (" +
                                FormatRfc3339(*to_ns) + ") spans " + FormatSpan(range.span_ns()) +
                                ", more than the limit of " + FormatSpan(max_span_ns) + hint);
  }
  return range;
}

int64_t ChooseStep(const TimeRange& range, int max_points) {
  static constexpr int64_t kNiceStepsSeconds[] = {1,   2,   5,    10,   15,   30,    60,    120,  300,
                                                   600, 900, 1800, 3600, 7200, 21600, 43200, 86400};
  const int64_t points = std::max(max_points, 1);
  const int64_t span = std::max<int64_t>(range.span_ns(), 0);
  const auto steps_needed = [span](int64_t step) { return span / step + (span % step != 0 ? 1 : 0); };
  for (int64_t seconds : kNiceStepsSeconds) {
    const int64_t step = seconds * kNanosPerSecond;
    if (steps_needed(step) <= points) return step;
  }
  // ceil(ceil(span / day) / points) == ceil(span / (day * points)), without the overflow.
  const int64_t days = (steps_needed(kNanosPerDay) + points - 1) / points;
  // Only a span near the whole int64 range with one point gets here clamped.
  return std::min(days, kMaxInt64 / kNanosPerDay) * kNanosPerDay;
}

std::string FormatRfc3339(int64_t unix_ns) {
  using namespace std::chrono;
  const sys_time<nanoseconds> t{nanoseconds(unix_ns)};
  const sys_days day = floor<days>(t);
  const year_month_day date(day);
  const hh_mm_ss<nanoseconds> clock(t - day);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02u-%02uT%02lld:%02lld:%02lld", static_cast<int>(date.year()),
                static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                static_cast<long long>(clock.hours().count()), static_cast<long long>(clock.minutes().count()),
                static_cast<long long>(clock.seconds().count()));
  std::string out = buf;
  const int64_t fraction = clock.subseconds().count();
  if (fraction != 0) {
    std::snprintf(buf, sizeof(buf), ".%09lld", static_cast<long long>(fraction));
    std::string digits = buf;
    while (digits.back() == '0') digits.pop_back();
    out += digits;
  }
  return out + "Z";
}

}  // namespace warpscope
