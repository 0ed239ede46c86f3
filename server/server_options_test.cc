#include "server/server_options.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace warpscope::server {
namespace {

TEST(ServerOptionsTest, DefaultsAreLoopbackAndTwoWeeks) {
  auto o = ParseServerArgs({});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->listen, "127.0.0.1:7070");
  EXPECT_EQ(o->retention, std::chrono::hours(24 * 14));
  EXPECT_TRUE(o->token.empty());
  EXPECT_FALSE(o->insecure_listen_any);
}

TEST(ServerOptionsTest, ParsesEveryFlag) {
  auto o = ParseServerArgs({"--listen", "0.0.0.0:9000", "--data-dir=/tmp/x", "--token", "t0k", "--retention", "7d",
                            "--max-request-bytes", "32M", "--threads", "4", "--insecure-listen-any"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->listen, "0.0.0.0:9000");
  EXPECT_EQ(o->data_dir, "/tmp/x");
  EXPECT_EQ(o->token, "t0k");
  EXPECT_EQ(o->retention, std::chrono::hours(24 * 7));
  EXPECT_EQ(o->max_request_bytes, 32u << 20);
  EXPECT_EQ(o->threads, 4);
  EXPECT_TRUE(o->insecure_listen_any);
  auto keep = ParseServerArgs({"--retention", "0"});
  ASSERT_TRUE(keep.ok());
  EXPECT_EQ(keep->retention.count(), 0);
}

TEST(ServerOptionsTest, TokenFileIsTrimmed) {
  char path[] = "/tmp/ws_token_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "  secret-token\n";
  auto o = ParseServerArgs({"--token-file", path});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->token, "secret-token");
  EXPECT_FALSE(ParseServerArgs({"--token-file", path, "--token", "x"}).ok());
  std::ofstream(path) << "\n";
  auto empty = ParseServerArgs({"--token-file", path});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("is empty"), std::string::npos);
  unlink(path);
  EXPECT_FALSE(ParseServerArgs({"--token-file", path}).ok());
}

TEST(ServerOptionsTest, RejectsBadValuesWithTheFlagName) {
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  } cases[] = {
      {{"--bogus"}, "unknown flag \"--bogus\""},
      {{"--listen"}, "--listen needs a value"},
      {{"--retention", "5m"}, "--retention: at least 1h"},
      {{"--retention", "soon"}, "--retention"},
      {{"--max-request-bytes", "12Q"}, "unknown size suffix"},
      {{"--max-request-bytes", "10"}, "between 1K and 1G"},
      {{"--threads", "0"}, "--threads: expected 1 to 256"},
      {{"--token", ""}, "empty token"},
      {{"--data-dir="}, "empty path"},
  };
  for (const Case& c : cases) {
    auto o = ParseServerArgs(c.args);
    ASSERT_FALSE(o.ok()) << c.args[0];
    EXPECT_NE(o.status().message().find(c.needle), std::string::npos) << o.status().message();
  }
}

TEST(ServerOptionsTest, HelpMentionsEveryFlag) {
  const std::string usage = ServerUsage();
  for (const char* flag : {"--listen", "--data-dir", "--token", "--token-file", "--insecure-listen-any", "--retention",
                           "--max-request-bytes", "--threads"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace warpscope::server
