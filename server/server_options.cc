#include "server/server_options.h"

#include <cerrno>
#include <cstdlib>

#include "base/duration.h"
#include "base/file_util.h"

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

}  // namespace

StatusOr<ServerOptions> ParseServerArgs(const std::vector<std::string>& args) {
  ServerOptions o;
  std::string token_file;
  bool token_given = false;
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
    } else if (flag == "--threads") {
      ASSIGN_OR_RETURN(std::string text, next());
      char* end = nullptr;
      errno = 0;
      const long n = std::strtol(text.c_str(), &end, 10);
      if (errno || end == text.c_str() || *end || n < 1 || n > 256) {
        return InvalidArgumentError("--threads: expected 1 to 256, found \"" + text + "\"");
      }
      o.threads = static_cast<int>(n);
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
  }
  return o;
}

std::string ServerUsage() {
  return R"(usage: warpscope-server [flags]

Receives profiles from warpscope-agent (run mode), stores them under
--data-dir (embedded store, nothing else to run) and answers the query API
(docs/api.md).

  --listen HOST:PORT        address to serve on (default 127.0.0.1:7070; [::1]:7070 for IPv6)
  --data-dir DIR            where the embedded store keeps its files (default ./warpscope-data)
  --token TOKEN             bearer token required on /api/ (ingest and queries)
  --token-file FILE         read the token from FILE (trimmed) instead
  --insecure-listen-any     allow a non-loopback --listen without a token
  --retention DURATION      delete profiles older than this (default 14d; 0 keeps everything)
  --max-request-bytes SIZE  largest request body accepted (default 16M)
  --threads N               requests handled at once (default 8)
)";
}

}  // namespace warpscope::server
