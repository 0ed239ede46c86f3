// Parsing of the server's --listen value ("127.0.0.1:7070", "[::1]:0",
// "0.0.0.0:7070") and the loopback test behind the no-token security rule.
// Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope::http {

struct ListenAddress {
  std::string host;  // numeric address without brackets: "127.0.0.1", "::1"
  int port = 0;      // 0 = let the kernel pick a free port
  bool is_ipv6 = false;
  bool is_loopback = false;  // 127.0.0.0/8 or ::1; "localhost" counts too
};

// Accepts IPv4 "a.b.c.d:port", "[ipv6]:port" and "localhost:port". Host names
// other than localhost are refused: the security rule needs to know for sure
// whether the address is loopback, which a resolver cannot promise.
StatusOr<ListenAddress> ParseListenAddress(const std::string& listen);

// Whether `authority` ("host", "host:port", "[v6]", "[v6]:port", as in a
// Host header or an Origin without its scheme) names this machine's loopback
// for a server listening on `listen`: localhost, any 127.0.0.0/8 address,
// ::1 (or ::ffff:127.x.y.z), or --listen's own host. The port is not
// compared. A tokenless server answers only such names, so a page that
// rebinds its own DNS name to 127.0.0.1 (DNS rebinding) gets nothing.
bool IsLocalAuthority(std::string_view authority, const ListenAddress& listen);

}  // namespace warpscope::http
