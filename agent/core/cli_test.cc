#include "agent/core/cli.h"

#include <gtest/gtest.h>

namespace warpscope {
namespace {

StatusOr<RecordOptions> Parse(std::vector<std::string> args) { return ParseRecordArgs(args); }

TEST(CliTest, IssueExamplesParse) {
  auto a = Parse({"--pid", "1234", "--duration", "10s", "--output", "cpu.pb.gz"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->pids, std::vector<uint32_t>{1234});
  EXPECT_EQ(a->duration, std::chrono::seconds(10));
  EXPECT_EQ(a->format, OutputFormat::kPprof);
  EXPECT_EQ(a->frequency_hz, 99u);

  auto b = Parse({"--all", "--duration", "30", "--frequency", "99", "--format", "collapsed", "--output", "cpu.folded"});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(b->all);
  EXPECT_EQ(b->duration, std::chrono::seconds(30));
  EXPECT_EQ(b->format, OutputFormat::kCollapsed);
  EXPECT_EQ(b->output, "cpu.folded");
}

TEST(CliTest, InlineValuesListsAndDefaults) {
  auto a = Parse({"--pid=1,2", "-p", "3", "--duration=500ms", "-F", "19"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->pids, (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(a->duration, std::chrono::milliseconds(500));
  EXPECT_EQ(a->frequency_hz, 19u);
  EXPECT_EQ(a->output, "cpu.pb.gz");
  auto c = Parse({"--all", "--format", "collapsed"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->output, "cpu.folded");
  auto d = Parse({"--all", "-o", "x.folded"});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->format, OutputFormat::kCollapsed);
}

TEST(CliTest, ClearErrors) {
  auto expect_error = [](std::vector<std::string> args, const std::string& needle) {
    auto r = ParseRecordArgs(args);
    ASSERT_FALSE(r.ok()) << "accepted bad args";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  expect_error({"--bogus"}, "unknown flag '--bogus'");
  expect_error({}, "--pid PID or --all");
  expect_error({"--all", "--pid", "1"}, "not both");
  expect_error({"--pid", "abc"}, "--pid expects a number");
  expect_error({"--pid", "0"}, "idle task");
  expect_error({"--all", "--duration", "ten"}, "--duration");
  expect_error({"--all", "--duration", "0"}, "positive");
  expect_error({"--all", "--frequency", "0"}, "at least 1 Hz");
  expect_error({"--all", "--frequency", "99999"}, "up to 10000");
  expect_error({"--all", "--format", "json"}, "pprof or collapsed");
  expect_error({"--all", "--output"}, "needs a value");
}

}  // namespace
}  // namespace warpscope
