#include "base/duration.h"

#include <gtest/gtest.h>

namespace warpscope {
namespace {
using std::chrono::nanoseconds;

TEST(DurationTest, AcceptsDocumentedForms) {
  EXPECT_EQ(ParseDuration("10").value(), nanoseconds(10'000'000'000));
  EXPECT_EQ(ParseDuration("10s").value(), nanoseconds(10'000'000'000));
  EXPECT_EQ(ParseDuration("500ms").value(), nanoseconds(500'000'000));
  EXPECT_EQ(ParseDuration("2m").value(), nanoseconds(120'000'000'000));
  EXPECT_EQ(ParseDuration("1.5s").value(), nanoseconds(1'500'000'000));
  EXPECT_EQ(ParseDuration("1h").value(), nanoseconds(3'600'000'000'000));
}

TEST(DurationTest, RejectsGarbageWithClearMessage) {
  auto bad = ParseDuration("ten");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("ten"), std::string::npos);
  EXPECT_FALSE(ParseDuration("").ok());
  EXPECT_FALSE(ParseDuration("10x").ok());
  EXPECT_FALSE(ParseDuration("-3s").ok());
}

TEST(DurationTest, Formats) {
  EXPECT_EQ(FormatDuration(nanoseconds(500'000'000)), "500ms");
  EXPECT_EQ(FormatDuration(nanoseconds(10'000'000'000)), "10s");
  EXPECT_EQ(FormatDuration(nanoseconds(120'000'000'000)), "2m");
}

}  // namespace
}  // namespace warpscope
