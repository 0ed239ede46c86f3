#include "server/server_options.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
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
  auto limits = ParseServerArgs({"--ingest-threads", "2", "--query-timeout", "5s", "--max-connections", "100",
                                 "--max-connections-per-client", "10", "--repair"});
  ASSERT_TRUE(limits.ok()) << limits.status().message();
  EXPECT_EQ(limits->ingest_threads, 2);
  EXPECT_EQ(limits->query_timeout, std::chrono::seconds(5));
  EXPECT_EQ(limits->max_connections, 100u);
  EXPECT_EQ(limits->max_connections_per_client, 10u);
  EXPECT_TRUE(limits->repair);
  auto cubins = ParseServerArgs({"--cubin-max-bytes", "8M", "--cubin-store-bytes", "2G"});
  ASSERT_TRUE(cubins.ok()) << cubins.status().message();
  EXPECT_EQ(cubins->cubin_max_bytes, uint64_t{8} << 20);
  EXPECT_EQ(cubins->cubin_store_bytes, uint64_t{2} << 30);
}

// A bad --listen, or a non-loopback one without a token, is a flag error
// (exit 2) found before the store is opened or its directory created.
TEST(ServerOptionsTest, ListenIsCheckedWithTheFlags) {
  for (const std::string bad : {"0:7070", "127.0.0.1:27602x", "example.com:7070", "127.0.0.1"}) {
    auto o = ParseServerArgs({"--listen", bad});
    ASSERT_FALSE(o.ok()) << bad;
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(o.status().message().rfind("--listen: ", 0), 0u) << o.status().message();
  }
  auto open = ParseServerArgs({"--listen", "0.0.0.0:7070"});
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(open.status().message().find("--insecure-listen-any"), std::string::npos) << open.status().message();
  EXPECT_TRUE(ParseServerArgs({"--listen", "0.0.0.0:7070", "--token", "t"}).ok());
  EXPECT_TRUE(ParseServerArgs({"--listen", "[::1]:7070"}).ok());
  EXPECT_FALSE(ParseServerArgs({"--repair", "--storage", "clickhouse://127.0.0.1:8123/ws"}).ok());
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

// A short token, or a token file others may read or write, starts with a
// warning that names the problem and never the token.
TEST(ServerOptionsTest, WarnsOnShortTokensAndOpenTokenFiles) {
  auto short_token = ParseServerArgs({"--token", "t0k"});
  ASSERT_TRUE(short_token.ok());
  ASSERT_EQ(short_token->warnings.size(), 1u);
  EXPECT_NE(short_token->warnings[0].find("fewer than 16"), std::string::npos) << short_token->warnings[0];
  EXPECT_EQ(short_token->warnings[0].find("t0k"), std::string::npos);
  auto long_token = ParseServerArgs({"--token", "0123456789abcdef"});
  ASSERT_TRUE(long_token.ok());
  EXPECT_TRUE(long_token->warnings.empty());
  EXPECT_TRUE(ParseServerArgs({})->warnings.empty());

  char path[] = "/tmp/ws_token_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "0123456789abcdef0123\n";
  ASSERT_EQ(chmod(path, 0600), 0);
  auto private_file = ParseServerArgs({"--token-file", path});
  ASSERT_TRUE(private_file.ok());
  EXPECT_TRUE(private_file->warnings.empty());
  for (mode_t mode : {0640, 0604, 0620, 0602, 0666}) {
    ASSERT_EQ(chmod(path, mode), 0);
    auto open_file = ParseServerArgs({"--token-file", path});
    ASSERT_TRUE(open_file.ok());
    ASSERT_EQ(open_file->warnings.size(), 1u) << std::oct << mode;
    EXPECT_NE(open_file->warnings[0].find("chmod 600"), std::string::npos) << open_file->warnings[0];
    EXPECT_EQ(open_file->warnings[0].find("0123456789abcdef0123"), std::string::npos);
  }
  std::ofstream(path) << "x\n";
  auto both = ParseServerArgs({"--token-file", path});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->warnings.size(), 2u);
  unlink(path);
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
      {{"--cubin-max-bytes", "2G"}, "--cubin-max-bytes: between 1K and 1G"},
      {{"--cubin-store-bytes", "100"}, "--cubin-store-bytes: at least 1K"},
      {{"--threads", "0"}, "--threads: expected 1 to 256"},
      {{"--ingest-threads", "0"}, "--ingest-threads: expected 1 to 256"},
      {{"--query-timeout", "10ms"}, "--query-timeout: at least 100ms"},
      {{"--query-timeout", "0"}, "--query-timeout"},
      {{"--max-connections", "5"}, "--max-connections: expected 16 to"},
      {{"--max-connections-per-client", "x"}, "--max-connections-per-client: expected"},
      {{"--token", ""}, "empty token"},
      {{"--data-dir="}, "empty path"},
  };
  for (const Case& c : cases) {
    auto o = ParseServerArgs(c.args);
    ASSERT_FALSE(o.ok()) << c.args[0];
    EXPECT_NE(o.status().message().find(c.needle), std::string::npos) << o.status().message();
  }
}

// A file holding `text`, removed when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char templ[] = "/tmp/ws_server_options_XXXXXX";
    const int fd = mkstemp(templ);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = templ;
    std::ofstream(path_) << text;
  }
  ~TempFile() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ServerOptionsTest, StorageDefaultsToEmbedded) {
  auto o = ParseServerArgs({"--data-dir", "/var/lib/ws"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->storage, StorageKind::kEmbedded);
  EXPECT_EQ(DescribeStorage(*o), "embedded store in /var/lib/ws");
  auto named = ParseServerArgs({"--storage", "embedded"});
  ASSERT_TRUE(named.ok()) << named.status().message();
  EXPECT_EQ(named->storage, StorageKind::kEmbedded);
  // The last --storage wins, as for every other flag.
  auto back = ParseServerArgs({"--storage", "clickhouse://127.0.0.1:8123/ws", "--storage=embedded"});
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->storage, StorageKind::kEmbedded);
  EXPECT_TRUE(back->clickhouse_url.empty());
}

TEST(ServerOptionsTest, ParsesClickHouseFlags) {
  TempFile password("s3cret\n");
  auto o = ParseServerArgs({"--storage", "clickhouse://ch.example:8123/warpscope", "--clickhouse-user", "warpscope",
                            "--clickhouse-password-file", password.path(), "--clickhouse-start-timeout", "2m",
                            "--clickhouse-timeout=5s", "--retention", "30d", "--clickhouse-ca-file", password.path()});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->storage, StorageKind::kClickHouse);
  EXPECT_EQ(o->clickhouse_url, "clickhouse://ch.example:8123/warpscope");
  EXPECT_EQ(o->clickhouse_user, "warpscope");
  EXPECT_EQ(o->clickhouse_password, "s3cret");  // the trailing newline is not part of it
  EXPECT_EQ(o->clickhouse_start_timeout, std::chrono::minutes(2));
  EXPECT_EQ(o->clickhouse_request_timeout, std::chrono::seconds(5));
  EXPECT_EQ(o->clickhouse_ca_file, password.path());
  EXPECT_EQ(o->retention, std::chrono::hours(24 * 30));
  EXPECT_EQ(DescribeStorage(*o), "ClickHouse at http://ch.example:8123/warpscope as warpscope");
  EXPECT_EQ(DescribeStorage(*o).find("s3cret"), std::string::npos);

  auto defaults = ParseServerArgs({"--storage", "clickhouse://127.0.0.1:8123/ws"});
  ASSERT_TRUE(defaults.ok()) << defaults.status().message();
  EXPECT_TRUE(defaults->clickhouse_user.empty());
  EXPECT_TRUE(defaults->clickhouse_password.empty());
  EXPECT_EQ(defaults->clickhouse_start_timeout, std::chrono::seconds(60));
  EXPECT_EQ(defaults->clickhouse_request_timeout, std::chrono::seconds(30));
  EXPECT_EQ(DescribeStorage(*defaults), "ClickHouse at http://127.0.0.1:8123/ws as default");
  auto once = ParseServerArgs({"--storage", "clickhouse://127.0.0.1:8123/ws", "--clickhouse-start-timeout", "0"});
  ASSERT_TRUE(once.ok()) << once.status().message();
  EXPECT_EQ(once->clickhouse_start_timeout.count(), 0);
}

TEST(ServerOptionsTest, HttpsUrlsAreClickHouseOverTls) {
  for (const char* url : {"https://ch.example/warpscope", "clickhouse+https://ch.example:8443/warpscope"}) {
    auto o = ParseServerArgs({"--storage", url});
    ASSERT_TRUE(o.ok()) << url << ": " << o.status().message();
    EXPECT_EQ(o->storage, StorageKind::kClickHouse);
    EXPECT_EQ(o->clickhouse_url, url);
    EXPECT_EQ(DescribeStorage(*o), "ClickHouse at https://ch.example:8443/warpscope as default");
  }
  // Port and database have defaults.
  auto bare = ParseServerArgs({"--storage", "clickhouse://ch.example"});
  ASSERT_TRUE(bare.ok()) << bare.status().message();
  EXPECT_EQ(DescribeStorage(*bare), "ClickHouse at http://ch.example:8123/warpscope as default");
}

TEST(ServerOptionsTest, PasswordFromFileThenEnvironment) {
  ServerEnvironment env;
  env.clickhouse_password = "from-env";
  auto from_env = ParseServerArgs({"--storage", "clickhouse://127.0.0.1:8123/ws"}, env);
  ASSERT_TRUE(from_env.ok()) << from_env.status().message();
  EXPECT_EQ(from_env->clickhouse_password, "from-env");
  TempFile file(" with spaces \r\n");
  auto from_file =
      ParseServerArgs({"--storage", "clickhouse://127.0.0.1:8123/ws", "--clickhouse-password-file", file.path()}, env);
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  EXPECT_EQ(from_file->clickhouse_password, " with spaces ");  // only the line end is dropped
  // The embedded store ignores the variable (it may be set for the whole host).
  auto embedded = ParseServerArgs({}, env);
  ASSERT_TRUE(embedded.ok()) << embedded.status().message();
  EXPECT_TRUE(embedded->clickhouse_password.empty());
}

TEST(ServerOptionsTest, RejectsBadClickHouseFlags) {
  TempFile empty("\n");
  const std::string url = "clickhouse://127.0.0.1:8123/ws";
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  } cases[] = {
      {{"--storage", "sqlite"}, "--storage: expected \"embedded\" or clickhouse://"},
      {{"--storage", ""}, "--storage: expected"},
      {{"--storage"}, "--storage needs a value"},
      {{"--storage", "ftp://127.0.0.1:8123/ws"}, "--storage: ClickHouse URL"},
      {{"--storage", "clickhouse://127.0.0.1:8123/a/b"}, "--storage: ClickHouse URL"},   // two path segments
      {{"--storage", "clickhouse://127.0.0.1:8123/ws?x=1"}, "--storage: ClickHouse URL"},  // a query string
      {{"--storage", "clickhouse://127.0.0.1:99999/ws"}, "--storage: ClickHouse URL"},
      {{"--storage", "clickhouse:///ws"}, "--storage: ClickHouse URL"},  // no host
      {{"--storage", "clickhouse://h/ws;DROP"}, "--storage: ClickHouse URL"},
      {{"--clickhouse-user", "u"}, "--clickhouse-user needs --storage clickhouse://"},
      {{"--clickhouse-password-file", empty.path()}, "--clickhouse-password-file needs --storage"},
      {{"--clickhouse-start-timeout", "1m"}, "--clickhouse-start-timeout needs --storage"},
      {{"--storage", url, "--clickhouse-user", ""}, "--clickhouse-user: empty user"},
      {{"--storage", url, "--clickhouse-password-file", empty.path()}, "is empty"},
      {{"--storage", url, "--clickhouse-password-file", "/nonexistent/pw"}, "--clickhouse-password-file: "},
      {{"--storage", url, "--clickhouse-start-timeout", "soon"}, "--clickhouse-start-timeout: "},
      {{"--storage", url, "--clickhouse-start-timeout", "48h"}, "at most 24h"},
      {{"--storage", url, "--clickhouse-timeout", "0"}, "--clickhouse-timeout: "},
      {{"--storage", url, "--clickhouse-timeout", "10ms"}, "at least 100ms"},
      {{"--storage", url, "--clickhouse-ca-file", "/nonexistent/ca.pem"}, "--clickhouse-ca-file: cannot read"},
      {{"--clickhouse-ca-file", empty.path()}, "--clickhouse-ca-file needs --storage"},
  };
  for (const Case& c : cases) {
    auto o = ParseServerArgs(c.args);
    ASSERT_FALSE(o.ok()) << c.args[0] << " " << (c.args.size() > 1 ? c.args[1] : "");
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(o.status().message().find(c.needle), std::string::npos) << o.status().message();
  }
}

TEST(ServerOptionsTest, DescribeStorageHidesUrlCredentials) {
  auto o = ParseServerArgs({"--storage", "https://ops:pw@ch.example:8443/ws"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(DescribeStorage(*o), "ClickHouse at https://ch.example:8443/ws as ops");
  auto flag_wins = ParseServerArgs({"--storage", "https://ops:pw@ch.example:8443/ws", "--clickhouse-user", "ws"});
  ASSERT_TRUE(flag_wins.ok()) << flag_wins.status().message();
  EXPECT_EQ(DescribeStorage(*flag_wins), "ClickHouse at https://ch.example:8443/ws as ws");
}

TEST(ServerOptionsTest, EnergyCoefficients) {
  auto none = ParseServerArgs({});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->pue.has_value());
  EXPECT_FALSE(none->cpu_watts_per_core.has_value());
  auto o = ParseServerArgs(
      {"--pue", "1.1", "--carbon-intensity", "50", "--price-per-kwh", "0.3", "--cpu-watts-per-core", "2.8"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->pue, 1.1);
  EXPECT_EQ(o->carbon_intensity, 50);
  EXPECT_EQ(o->price_per_kwh, 0.3);
  EXPECT_EQ(o->cpu_watts_per_core, 2.8);
  auto bad = ParseServerArgs({"--pue", "0.9"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--pue: expected a number from 1 to 10, found \"0.9\"");
  EXPECT_FALSE(ParseServerArgs({"--carbon-intensity", "lots"}).ok());
}

TEST(ServerOptionsTest, HelpMentionsEveryFlag) {
  const std::string usage = ServerUsage();
  for (const char* flag : {"--listen", "--data-dir", "--token", "--token-file", "--insecure-listen-any", "--retention",
                           "--max-request-bytes", "--threads", "--storage", "--clickhouse-user",
                           "--clickhouse-password-file", "WARPSCOPE_CLICKHOUSE_PASSWORD", "--clickhouse-start-timeout",
                           "--clickhouse-timeout", "--ingest-threads", "--query-timeout", "--max-connections",
                           "--max-connections-per-client", "--repair", "--pue", "--carbon-intensity",
                           "--price-per-kwh", "--cpu-watts-per-core", "--cubin-max-bytes", "--cubin-store-bytes"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace warpscope::server
