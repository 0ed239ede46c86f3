#include "server/server_options.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "base/duration.h"
#include "base/file_util.h"
#include "base/http/listen_address.h"
#include "storage/clickhouse/clickhouse_url.h"

namespace warpscope::server {
namespace {

std::string Trim(std::string s) {
  const char* ws = " \t\r\n";
  const size_t begin = s.find_first_not_of(ws);
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(ws) - begin + 1);
}

StatusOr<uint64_t> ParseSize(const std::string& flag, const std::string& text) {
  // Plain bytes, or a K/M/G suffix (powers of 1024).
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (value > (UINT64_MAX - 9) / 10) return InvalidArgumentError(flag + ": too large: " + text);
    value = value * 10 + (text[i++] - '0');
  }
  if (i == 0) return InvalidArgumentError(flag + ": expected a size like 16M, found \"" + text + "\"");
  std::string suffix = text.substr(i);
  int shift = 0;
  if (suffix == "K" || suffix == "KiB") shift = 10;
  else if (suffix == "M" || suffix == "MiB") shift = 20;
  else if (suffix == "G" || suffix == "GiB") shift = 30;
  else if (!suffix.empty()) return InvalidArgumentError(flag + ": unknown size suffix \"" + suffix + "\" (use K, M or G)");
  if (shift && value > (UINT64_MAX >> shift)) return InvalidArgumentError(flag + ": too large: " + text);
  return value << shift;
}

StatusOr<std::chrono::nanoseconds> ParseTimeout(const std::string& flag, const std::string& text, bool zero_ok) {
  if (zero_ok && text == "0") return std::chrono::nanoseconds(0);
  auto d = ParseDuration(text);
  if (!d.ok()) return InvalidArgumentError(flag + ": " + d.status().message());
  if (*d <= std::chrono::nanoseconds(0) && !zero_ok) return InvalidArgumentError(flag + ": must be positive");
  if (*d > std::chrono::hours(24)) return InvalidArgumentError(flag + ": at most 24h");
  return *d;
}

StatusOr<long> ParseCount(const std::string& flag, const std::string& text, long min, long max) {
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (errno || end == text.c_str() || *end || n < min || n > max) {
    return InvalidArgumentError(flag + ": expected " + std::to_string(min) + " to " + std::to_string(max) +
                                ", found \"" + text + "\"");
  }
  return n;
}

std::string FormatNumber(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

// A decimal flag value in [min, max].
StatusOr<double> ParseDecimal(const std::string& flag, const std::string& text, double min, double max) {
  char* end = nullptr;
  const double d = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end || !(d >= min && d <= max)) {
    return InvalidArgumentError(flag + ": expected a number from " + FormatNumber(min) + " to " + FormatNumber(max) +
                                ", found \"" + text + "\"");
  }
  return d;
}

// A password file holds the password and at most a trailing newline (what
// `echo pw > file` writes); other whitespace is part of the password.
StatusOr<std::string> ReadPasswordFile(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return InvalidArgumentError("--clickhouse-password-file: " + text.status().message());
  std::string password = std::move(text).value();
  if (!password.empty() && password.back() == '\n') password.pop_back();
  if (!password.empty() && password.back() == '\r') password.pop_back();
  if (password.empty()) return InvalidArgumentError("--clickhouse-password-file: " + path + " is empty");
  return password;
}

}  // namespace

StatusOr<ServerOptions> ParseServerArgs(const std::vector<std::string>& args, const ServerEnvironment& env) {
  ServerOptions o;
  std::string token_file, password_file;
  bool token_given = false;
  // ClickHouse flags given without --storage clickhouse://...: an error, not silently ignored.
  std::string clickhouse_flag_given;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool has_value = false;
    if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    auto next = [&]() -> StatusOr<std::string> {
      if (has_value) return value;
      if (i + 1 >= args.size()) return InvalidArgumentError(flag + " needs a value");
      return args[++i];
    };
    if (flag == "-h" || flag == "--help" || flag == "help") {
      o.help = true;
    } else if (flag == "--listen") {
      ASSIGN_OR_RETURN(o.listen, next());
    } else if (flag == "--storage") {
      std::string text;  // declared apart: GCC 12 warns (falsely) of it as uninitialized otherwise
      ASSIGN_OR_RETURN(text, next());
      if (text == "embedded") {
        o.storage = StorageKind::kEmbedded;
        o.clickhouse_url.clear();
      } else if (text.find("://") != std::string::npos) {
        auto endpoint = clickhouse::ParseClickHouseUrl(text);
        if (!endpoint.ok()) return InvalidArgumentError("--storage: " + endpoint.status().message());
        o.storage = StorageKind::kClickHouse;
        o.clickhouse_url = text;
      } else {
        return InvalidArgumentError("--storage: expected \"embedded\" or clickhouse://HOST:PORT/DATABASE, found \"" +
                                    text + "\"");
      }
    } else if (flag == "--clickhouse-user") {
      ASSIGN_OR_RETURN(o.clickhouse_user, next());
      if (o.clickhouse_user.empty()) return InvalidArgumentError("--clickhouse-user: empty user");
      clickhouse_flag_given = flag;
    } else if (flag == "--clickhouse-password-file") {
      ASSIGN_OR_RETURN(password_file, next());
      if (password_file.empty()) return InvalidArgumentError("--clickhouse-password-file: empty path");
      clickhouse_flag_given = flag;
    } else if (flag == "--clickhouse-ca-file") {
      ASSIGN_OR_RETURN(o.clickhouse_ca_file, next());
      if (o.clickhouse_ca_file.empty()) return InvalidArgumentError("--clickhouse-ca-file: empty path");
      if (::access(o.clickhouse_ca_file.c_str(), R_OK) != 0) {
        return InvalidArgumentError("--clickhouse-ca-file: cannot read " + o.clickhouse_ca_file);
      }
      clickhouse_flag_given = flag;
    } else if (flag == "--clickhouse-start-timeout") {
      ASSIGN_OR_RETURN(std::string text, next());
      ASSIGN_OR_RETURN(o.clickhouse_start_timeout, ParseTimeout(flag, text, /*zero_ok=*/true));
      clickhouse_flag_given = flag;
    } else if (flag == "--clickhouse-timeout") {
      ASSIGN_OR_RETURN(std::string text, next());
      ASSIGN_OR_RETURN(o.clickhouse_request_timeout, ParseTimeout(flag, text, /*zero_ok=*/false));
      if (o.clickhouse_request_timeout < std::chrono::milliseconds(100)) {
        return InvalidArgumentError("--clickhouse-timeout: at least 100ms");
      }
      clickhouse_flag_given = flag;
    } else if (flag == "--data-dir") {
      ASSIGN_OR_RETURN(o.data_dir, next());
      if (o.data_dir.empty()) return InvalidArgumentError("--data-dir: empty path");
    } else if (flag == "--token") {
      ASSIGN_OR_RETURN(o.token, next());
      if (o.token.empty()) return InvalidArgumentError("--token: empty token");
      token_given = true;
    } else if (flag == "--token-file") {
      ASSIGN_OR_RETURN(token_file, next());
    } else if (flag == "--insecure-listen-any") {
      o.insecure_listen_any = true;
    } else if (flag == "--retention") {
      ASSIGN_OR_RETURN(std::string text, next());
      if (text == "0") {
        o.retention = std::chrono::nanoseconds(0);
      } else {
        auto d = ParseDuration(text);
        if (!d.ok()) return InvalidArgumentError("--retention: " + d.status().message());
        if (*d < std::chrono::hours(1)) return InvalidArgumentError("--retention: at least 1h (or 0 to keep everything)");
        o.retention = *d;
      }
    } else if (flag == "--max-request-bytes") {
      ASSIGN_OR_RETURN(std::string text, next());
      ASSIGN_OR_RETURN(uint64_t bytes, ParseSize(flag, text));
      if (bytes < 1024 || bytes > (1ull << 30)) return InvalidArgumentError("--max-request-bytes: between 1K and 1G");
      o.max_request_bytes = bytes;
    } else if (flag == "--cubin-max-bytes") {
      ASSIGN_OR_RETURN(std::string text, next());
      ASSIGN_OR_RETURN(o.cubin_max_bytes, ParseSize(flag, text));
      if (o.cubin_max_bytes < 1024 || o.cubin_max_bytes > (1ull << 30)) {
        return InvalidArgumentError("--cubin-max-bytes: between 1K and 1G");
      }
    } else if (flag == "--cubin-store-bytes") {
      ASSIGN_OR_RETURN(std::string text, next());
      ASSIGN_OR_RETURN(o.cubin_store_bytes, ParseSize(flag, text));
      if (o.cubin_store_bytes < 1024) return InvalidArgumentError("--cubin-store-bytes: at least 1K");
    } else if (flag == "--threads") {
      ASSIGN_OR_RETURN(std::string text, next());
      ASSIGN_OR_RETURN(long n, ParseCount(flag, text, 1, 256));
      o.threads = static_cast<int>(n);
    } else if (flag == "--ingest-threads") {
      ASSIGN_OR_RETURN(std::string text, next());
      ASSIGN_OR_RETURN(long n, ParseCount(flag, text, 1, 256));
      o.ingest_threads = static_cast<int>(n);
    } else if (flag == "--query-timeout") {
      ASSIGN_OR_RETURN(std::string text, next());
      ASSIGN_OR_RETURN(o.query_timeout, ParseTimeout(flag, text, /*zero_ok=*/false));
      if (o.query_timeout < std::chrono::milliseconds(100)) return InvalidArgumentError("--query-timeout: at least 100ms");
    } else if (flag == "--max-connections") {
      ASSIGN_OR_RETURN(std::string text, next());
      ASSIGN_OR_RETURN(long n, ParseCount(flag, text, 16, 1'000'000));
      o.max_connections = static_cast<size_t>(n);
    } else if (flag == "--max-connections-per-client") {
      ASSIGN_OR_RETURN(std::string text, next());
      ASSIGN_OR_RETURN(long n, ParseCount(flag, text, 1, 1'000'000));
      o.max_connections_per_client = static_cast<size_t>(n);
    } else if (flag == "--repair") {
      o.repair = true;
    } else if (flag == "--pue") {
      ASSIGN_OR_RETURN(std::string text, next());
      ASSIGN_OR_RETURN(o.pue, ParseDecimal(flag, text, 1, 10));
    } else if (flag == "--carbon-intensity") {
      ASSIGN_OR_RETURN(std::string text, next());
      ASSIGN_OR_RETURN(o.carbon_intensity, ParseDecimal(flag, text, 0, 5000));
    } else if (flag == "--price-per-kwh") {
      ASSIGN_OR_RETURN(std::string text, next());
      ASSIGN_OR_RETURN(o.price_per_kwh, ParseDecimal(flag, text, 0, 1e6));
    } else if (flag == "--cpu-watts-per-core") {
      ASSIGN_OR_RETURN(std::string text, next());
      ASSIGN_OR_RETURN(o.cpu_watts_per_core, ParseDecimal(flag, text, 0, 1000));
    } else if (flag == "--region-carbon-intensity") {
      ASSIGN_OR_RETURN(std::string text, next());
      const size_t eq = text.find('=');
      if (eq == 0 || eq == std::string::npos) {
        return InvalidArgumentError(flag + " expects REGION=GRAMS_PER_KWH, e.g. eu-west-1=280, got '" + text + "'");
      }
      ASSIGN_OR_RETURN(o.region_carbon_intensity[text.substr(0, eq)], ParseDecimal(flag, text.substr(eq + 1), 0, 5000));
    } else {
      return InvalidArgumentError("unknown flag \"" + flag + "\" (see --help)");
    }
  }
  if (!token_file.empty()) {
    if (token_given) return InvalidArgumentError("give --token or --token-file, not both");
    auto text = ReadFileToString(token_file);
    if (!text.ok()) return InvalidArgumentError("--token-file: " + text.status().message());
    o.token = Trim(*text);
    if (o.token.empty()) return InvalidArgumentError("--token-file: " + token_file + " is empty");
    // Anyone who can read the file holds the token; anyone who can write it
    // chooses it at the next start.
    struct stat st {};
    if (::stat(token_file.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
      char mode[8];
      std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
      o.warnings.push_back("--token-file " + token_file + " has mode " + mode +
                           ": other users may read or change the token; chmod 600 it");
    }
  }
  if (!o.token.empty() && o.token.size() < kMinTokenChars) {
    o.warnings.push_back("the token has " + std::to_string(o.token.size()) + " characters, fewer than " +
                         std::to_string(kMinTokenChars) + ": it can be guessed; use a long random one "
                         "(e.g. openssl rand -hex 32)");
  }
  // The address and the no-token rule are checked here, before anything is
  // opened or created.
  auto listen = http::ParseListenAddress(o.listen);
  if (!listen.ok()) return InvalidArgumentError("--listen: " + listen.status().message());
  if (o.token.empty() && !listen->is_loopback && !o.insecure_listen_any) {
    return InvalidArgumentError("refusing to listen on non-loopback address " + o.listen +
                                " without authentication: pass --token <secret> or --token-file (agents send it as "
                                "a bearer token), or --insecure-listen-any to accept unauthenticated requests from "
                                "the network");
  }
  if (o.repair && o.storage != StorageKind::kEmbedded) return InvalidArgumentError("--repair is for the embedded store");
  if (o.storage != StorageKind::kClickHouse) {
    if (!clickhouse_flag_given.empty()) {
      return InvalidArgumentError(clickhouse_flag_given + " needs --storage clickhouse://HOST:PORT/DATABASE");
    }
    return o;
  }
  if (!password_file.empty()) {
    ASSIGN_OR_RETURN(o.clickhouse_password, ReadPasswordFile(password_file));
  } else if (env.clickhouse_password) {
    o.clickhouse_password = *env.clickhouse_password;
  }
  return o;
}

std::string DescribeStorage(const ServerOptions& options) {
  if (options.storage == StorageKind::kEmbedded) return "embedded store in " + options.data_dir;
  // The endpoint as the store will reach it (scheme, port and database
  // filled in), without the URL's credentials; the user the store will use.
  auto endpoint = clickhouse::ParseClickHouseUrl(options.clickhouse_url);
  std::string user = options.clickhouse_user;
  if (user.empty() && endpoint.ok()) user = endpoint->user;
  if (user.empty()) user = "default";
  return "ClickHouse at " + (endpoint.ok() ? endpoint->ToString() : std::string("(bad URL)")) + " as " + user;
}

std::string ServerUsage() {
  return R"(usage: warpscope-server [flags]

Receives profiles from warpscope-agent (run mode), stores them (by default
under --data-dir, in the embedded store: nothing else to run; or in
ClickHouse, shared by any number of server replicas) and answers the query
API (docs/api.md).

  --listen HOST:PORT        address to serve on (default 127.0.0.1:7070; [::1]:7070 for IPv6)
  --data-dir DIR            where the embedded store keeps its files (default ./warpscope-data)
  --storage STORE           embedded (the default), or ClickHouse over its HTTP interface:
                            clickhouse://HOST[:PORT][/DATABASE] (port 8123, database warpscope
                            by default; http:// is the same), clickhouse+https:// or https:// for
                            TLS (port 8443); the schema is migrated at start; all replicas of a
                            fleet name the same database (docs/deploy-clickhouse.md)
  --clickhouse-user USER    ClickHouse user (default: the URL's USER@, else "default")
  --clickhouse-password-file FILE
                            read the ClickHouse password from FILE (one trailing newline dropped);
                            else $WARPSCOPE_CLICKHOUSE_PASSWORD, else none
  --clickhouse-ca-file FILE PEM CA certificate(s) to verify an https ClickHouse against
                            (default: the system's CA store)
  --clickhouse-start-timeout DURATION
                            keep retrying an unreachable ClickHouse at start this long, then
                            exit 1 (default 60s; 0 tries once)
  --clickhouse-timeout DURATION
                            give up on one ClickHouse request after this (default 30s)
  --token TOKEN             bearer token required on /api/ (ingest and queries)
  --token-file FILE         read the token from FILE (trimmed) instead
  --insecure-listen-any     allow a non-loopback --listen without a token
  --retention DURATION      delete profiles older than this (default 14d; 0 keeps everything);
                            with ClickHouse, whole days are dropped
  --max-request-bytes SIZE  largest request body accepted (default 16M)
  --cubin-max-bytes SIZE    largest cubin the cubin store takes (default 32M; agents send them
                            zstd-compressed, within --max-request-bytes)
  --cubin-store-bytes SIZE  the cubin store's bound, all cubins together (default 1G); a full
                            store refuses new cubins (507, counted) until retention frees room:
                            a cubin goes once no PUT or batch has used it for --retention
  --threads N               queries handled at once (default 8)
  --ingest-threads N        ingest requests (and /healthz) handled at once, by workers of their
                            own that queries never take (default 4)
  --query-timeout DURATION  a query still running after this stops with 503 (default 30s)
  --max-connections N       open connections in all (default 4096); past it, and past
  --max-connections-per-client N
                            open connections from one address (default 256), a new connection
                            gets 503 and is closed
  --repair                  embedded store: start even when segment files or WAL records are
                            unreadable or missing, moving what cannot be read to
                            DATA_DIR/quarantine/; answers over the lost ranges say so
                            (docs/getting-started.md, "Limits and failure modes")
  --pue X                   energy answers: the data centre's PUE (default 1.2)
  --carbon-intensity G      energy answers: grid gCO2e per kWh (default 379)
  --price-per-kwh P         energy answers: price of one kWh (default 0.15)
  --cpu-watts-per-core W    energy answers: watts of one busy CPU core (default 7, x86);
                            a query's parameters of the same names win
  --region-carbon-intensity REGION=G
                            energy answers: gCO2e per kWh of nodes whose agents run with
                            --label region=REGION (repeatable; adds to or replaces the
                            built-in table of AWS, Google Cloud and Azure regions, whose
                            nodes also get their provider's PUE)

Exit status: 0 after SIGINT or SIGTERM; 1 when the store cannot be opened
(ClickHouse still unreachable after --clickhouse-start-timeout, wrong
password, a database newer than this server, an embedded store whose files
do not agree) or the address is taken; 2 on bad flags (a bad --listen, or a
non-loopback one without a token, included), checked before anything is
opened.
)";
}

}  // namespace warpscope::server
