#include "model/time_range.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

namespace warpscope {
namespace {

constexpr int64_t kSecond = kNanosPerSecond;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kDay = kNanosPerDay;
// 2026-11-29T12:00:00Z (date -u -d 2026-11-29T12:00:00Z +%s).
constexpr int64_t kNow = 1'795'953'600 * kSecond;
constexpr int64_t kMaxNs = std::numeric_limits<int64_t>::max();

struct ValidTime {
  const char* text;
  int64_t want;
};

TEST(ParseQueryTimeTest, AcceptsEveryForm) {
  const ValidTime cases[] = {
      {"now", kNow},
      {"now-5m", kNow - 5 * kMinute},
      {"now-1h30m", kNow - 90 * kMinute},
      {"now-2d", kNow - 2 * kDay},
      {"now+10s", kNow + 10 * kSecond},
      {"now-500ms", kNow - 500'000'000},
      {"now-1w2d3h4m5s6ms", kNow - (9 * kDay + 3 * kHour + 4 * kMinute + 5 * kSecond + 6'000'000)},
      {"now-0s", kNow},
      {"now-007m", kNow - 7 * kMinute},
      {"1764417600000", 1'764'417'600'000 * 1'000'000},
      {"0", 0},
      {"0001", 1'000'000},
      {"9223372036854", 9'223'372'036'854'000'000},
      {"2026-11-29T12:00:00Z", kNow},
      {"2026-11-29t12:00:00z", kNow},
      {"2026-11-29 12:00:00Z", kNow},
      {"2026-11-29T14:00:00+02:00", kNow},
      {"2026-11-29T06:30:00-05:30", kNow},
      {"2026-11-30T11:59:00+23:59", kNow},
      {"2026-11-29T12:00:00-00:00", kNow},
      {"2026-11-29T12:00:00.5Z", kNow + 500'000'000},
      {"2026-11-29T12:00:00.123456789Z", kNow + 123'456'789},
      {"2026-11-29T12:00:00.1234567899Z", kNow + 123'456'789},  // past nanoseconds: dropped
      {"2026-11-29T14:00:00.000000001+02:00", kNow + 1},
  };
  for (const auto& c : cases) {
    StatusOr<int64_t> got = ParseQueryTime(c.text, kNow);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.text;
  }
}

// Calendar edges, with no leap seconds anywhere: unix time ignores them.
TEST(ParseQueryTimeTest, CalendarEdges) {
  const ValidTime cases[] = {
      {"1970-01-01T00:00:00Z", 0},
      {"1970-01-01T01:00:00+01:00", 0},
      {"1970-01-01T00:00:00.000000001Z", 1},
      {"2000-02-29T00:00:00Z", 951'782'400 * kSecond},       // divisible by 400: leap
      {"2024-02-29T12:00:00Z", 1'709'208'000 * kSecond},
      {"2100-02-28T23:59:59Z", 4'107'542'399 * kSecond},     // 2100 is not a leap year,
      {"2100-03-01T00:00:00Z", 4'107'542'400 * kSecond},     // so March follows Feb 28
      {"2262-04-11T23:47:16.854775807Z", kMaxNs},
  };
  for (const auto& c : cases) {
    StatusOr<int64_t> got = ParseQueryTime(c.text, kNow);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.text;
  }
}

struct InvalidTime {
  const char* text;
  const char* message_part;
};

TEST(ParseQueryTimeTest, RejectsWithReason) {
  const InvalidTime cases[] = {
      {"", "empty time"},
      {"yesterday", "expected unix milliseconds (1764417600000), an RFC 3339 time"},
      {"-5", "expected unix milliseconds"},
      {"1764417600000.5", "expected unix milliseconds"},
      {"NOW", "expected unix milliseconds"},
      {"9223372036855", "unix milliseconds out of range"},
      {"99999999999999999999999", "unix milliseconds out of range"},
      {"now-", "expected a duration after the sign"},
      {"now-5", "expected a unit after 5"},
      {"now-1.5h", "expected a unit after 1"},
      {"now-5M", "expected a unit after 5"},
      {"now-5y", "unknown unit 'y'"},
      {"now-5min", "unknown unit 'min'"},
      {"now-30m1h", "largest to smallest"},
      {"now-5m5m", "largest to smallest"},
      {"now--5m", "expected a number at '-5m'"},
      {"now*5m", "expected '+' or '-' after 'now'"},
      {"nowish", "expected '+' or '-' after 'now'"},
      {"now 10s", "send it as %2B"},
      {"now-99999999999999999999s", "offset too large"},
      {"now-20000w", "offset too large"},
      {"now-100000d", "lands outside 1970..2262"},
      {"now+100000d", "lands outside 1970..2262"},
      {"2026-11-29", "expected an RFC 3339 time like"},
      {"2026-11-29T12:00", "expected an RFC 3339 time like"},
      {"2026-11-29T12:00:00", "needs a zone"},
      {"2026-11-29T12:00:00Zjunk", "expected an RFC 3339 time like"},
      {"2026-11-29T12:00:00+0200", "expected an RFC 3339 time like"},
      {"2026-11-29T12:00:00 02:00", "send it as %2B"},
      {"2026-11-29T12:00:00.Z", "expected digits after '.'"},
      {"2026-11-29X12:00:00Z", "expected an RFC 3339 time like"},
      {"2026-02-29T00:00:00Z", "no such date"},
      {"2100-02-29T00:00:00Z", "no such date"},
      {"2026-13-01T00:00:00Z", "no such date"},
      {"2026-11-31T00:00:00Z", "no such date"},
      {"2026-00-10T00:00:00Z", "no such date"},
      {"2026-11-29T24:00:00Z", "time of day out of range"},
      {"2026-11-29T12:60:00Z", "time of day out of range"},
      {"2026-12-31T23:59:60Z", "leap second 60 is not supported"},
      {"2026-11-29T12:00:00+24:00", "offset out of range"},
      {"2026-11-29T12:00:00+02:60", "offset out of range"},
      {"1969-12-31T23:59:59Z", "before 1970-01-01T00:00:00Z"},
      {"1970-01-01T00:30:00+01:00", "before 1970-01-01T00:00:00Z"},
      {"2262-04-11T23:47:17Z", "after 2262-04-11T23:47:16.854775807Z"},
      {"9999-12-31T23:59:59Z", "after 2262"},
  };
  for (const auto& c : cases) {
    StatusOr<int64_t> got = ParseQueryTime(c.text, kNow);
    ASSERT_FALSE(got.ok()) << c.text << " parsed as " << *got;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(got.status().message().find(c.message_part), std::string::npos)
        << c.text << ": " << got.status().message();
  }
}

TEST(FormatRfc3339Test, FormatsAndParsesBack) {
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(kNow), "2026-11-29T12:00:00Z");
  EXPECT_EQ(FormatRfc3339(kNow + 500'000'000), "2026-11-29T12:00:00.5Z");
  EXPECT_EQ(FormatRfc3339(kNow + 1), "2026-11-29T12:00:00.000000001Z");
  EXPECT_EQ(FormatRfc3339(4'107'542'400 * kSecond), "2100-03-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(kMaxNs), "2262-04-11T23:47:16.854775807Z");

  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> any_time(0, kMaxNs);
  for (int i = 0; i < 2000; ++i) {
    const int64_t t = i % 2 ? any_time(rng) : any_time(rng) / kSecond * kSecond;
    StatusOr<int64_t> back = ParseQueryTime(FormatRfc3339(t), kNow);
    ASSERT_TRUE(back.ok()) << FormatRfc3339(t) << ": " << back.status().ToString();
    EXPECT_EQ(*back, t) << FormatRfc3339(t);
  }
}

TEST(ParseTimeRangeTest, ParsesBothEndsWithOneNow) {
  StatusOr<TimeRange> range = ParseTimeRange("now-5m", "now", kNow);
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  EXPECT_EQ(*range, (TimeRange{kNow - 5 * kMinute, kNow}));
  EXPECT_EQ(range->span_ns(), 5 * kMinute);

  range = ParseTimeRange("2026-11-29T13:00:00+02:00", "1795953600000", kNow);
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  EXPECT_EQ(*range, (TimeRange{kNow - kHour, kNow}));

  // Exactly the limit is allowed; a future `to` is too.
  EXPECT_TRUE(ParseTimeRange("now-31d", "now", kNow).ok());
  EXPECT_TRUE(ParseTimeRange("now-1m", "now+1m", kNow).ok());
}

TEST(ParseTimeRangeTest, ErrorsNameTheParameter) {
  const struct {
    const char* from;
    const char* to;
    int64_t max_span;
    const char* message_part;
  } cases[] = {
      {"later", "now", kDefaultMaxQuerySpanNs, "parameter 'from': bad time 'later'"},
      {"now-5m", "", kDefaultMaxQuerySpanNs, "parameter 'to': empty time"},
      {"now-5m", "now-5y", kDefaultMaxQuerySpanNs, "parameter 'to': bad time 'now-5y': unknown unit"},
      {"now", "now", kDefaultMaxQuerySpanNs,
       "parameter 'from' (now = 2026-11-29T12:00:00Z) must be before parameter 'to' (now = 2026-11-29T12:00:00Z)"},
      {"now", "now-1h", kDefaultMaxQuerySpanNs, "must be before parameter 'to' (now-1h = 2026-11-29T11:00:00Z)"},
      {"now-32d", "now", kDefaultMaxQuerySpanNs,
       "time range from 'from' (2026-10-28T12:00:00Z) to 'to' (2026-11-29T12:00:00Z) spans 32d, more than the "
       "limit of 31d"},
      {"now-2h", "now", kHour, "spans 2h, more than the limit of 1h"},
      {"now-1h30m1s", "now", kHour, "spans 1h30m1s"},
      {"1764417600", "now", kDefaultMaxQuerySpanNs, "a 10-digit number looks like seconds"},
  };
  for (const auto& c : cases) {
    StatusOr<TimeRange> range = ParseTimeRange(c.from, c.to, kNow, c.max_span);
    ASSERT_FALSE(range.ok()) << c.from << " .. " << c.to;
    EXPECT_EQ(range.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(range.status().message().find(c.message_part), std::string::npos)
        << c.from << " .. " << c.to << ": " << range.status().message();
  }
}

TEST(ChooseStepTest, PicksNiceSteps) {
  const struct {
    int64_t span;
    int max_points;
    int64_t want;
  } cases[] = {
      {5 * kMinute, 300, kSecond},                    // exactly 300 steps
      {5 * kMinute + 1, 300, 2 * kSecond},            // one nanosecond more needs 301
      {kHour, 300, 15 * kSecond},                     // 12s is not nice; 240 steps
      {24 * kHour, 300, 5 * kMinute},                 // 288 steps
      {7 * kDay, 300, kHour},                         // 30m would be 336
      {31 * kDay, 300, 6 * kHour},                    // 124 steps
      {0, 300, kSecond},
      {1, 300, kSecond},
      {kHour, 60, kMinute},
      {kHour, 1, kHour},
      {kHour, 0, kHour},                              // below 1 reads as 1
      {kHour, -5, kHour},
      {31 * kDay, 10, 4 * kDay},                      // past the table: whole days
      {365 * kDay, 1, 365 * kDay},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ChooseStep(TimeRange{kNow - c.span, kNow}, c.max_points), c.want)
        << "span " << c.span << " points " << c.max_points;
  }
}

TEST(ChooseStepTest, NeverExceedsMaxPoints) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> span(1, 400 * kDay);
  std::uniform_int_distribution<int> points(1, 2000);
  for (int i = 0; i < 5000; ++i) {
    const TimeRange range{kNow, kNow + span(rng)};
    const int max_points = points(rng);
    const int64_t step = ChooseStep(range, max_points);
    ASSERT_EQ(step % kSecond, 0);
    const int64_t steps = (range.span_ns() + step - 1) / step;
    EXPECT_LE(steps, max_points) << range.span_ns() << " / " << step;
  }
}

}  // namespace
}  // namespace warpscope
