// Where a ClickHouse store lives: the --storage URL of warpscope-server.
//
//   clickhouse://HOST[:PORT][/DATABASE]          HTTP, port 8123 by default
//   http://HOST[:PORT][/DATABASE]                the same
//   clickhouse+https://HOST[:PORT][/DATABASE]    HTTPS (TLS), port 8443 by default
//   https://HOST[:PORT][/DATABASE]               the same
//
// USER[:PASSWORD]@ before the host is accepted (percent-encoded); options'
// user/password win over it. The database defaults to "warpscope" and must be
// [A-Za-z0-9_]+ (it is spliced into SQL as an identifier). HOST may be an
// IPv6 literal in brackets. Anything else (query strings, fragments, other
// schemes, a path with more than one segment) is InvalidArgument.
#pragma once

#include <string>

#include "base/status.h"

namespace warpscope::clickhouse {

inline constexpr const char* kDefaultDatabase = "warpscope";

struct ClickHouseEndpoint {
  bool tls = false;
  std::string host;  // without brackets
  int port = 0;
  std::string database;
  std::string user;      // from the URL's userinfo, "" when none
  std::string password;  // from the URL's userinfo

  // "http://host:port/" or "https://host:port/" (brackets around IPv6 hosts).
  std::string BaseUrl() const;
  // The URL without credentials, for messages and logs.
  std::string ToString() const;
};

StatusOr<ClickHouseEndpoint> ParseClickHouseUrl(const std::string& url);

}  // namespace warpscope::clickhouse
