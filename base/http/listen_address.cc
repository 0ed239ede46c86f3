#include "base/http/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

namespace warpscope::http {
namespace {

StatusOr<int> ParsePort(const std::string& text, const std::string& listen) {
  int port = -1;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || port < 0 || port > 65535) {
    return InvalidArgumentError("listen address \"" + listen + "\": port must be a number in 0..65535");
  }
  return port;
}

// The host of an authority, brackets stripped, lower-cased; empty when it
// is malformed.
std::string HostOf(std::string_view authority) {
  std::string host;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return "";
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && rest[0] != ':') return "";
    host = std::string(authority.substr(1, close - 1));
  } else {
    const size_t colon = authority.find(':');
    if (colon != std::string_view::npos && authority.find(':', colon + 1) != std::string_view::npos) return "";
    host = std::string(authority.substr(0, colon));
  }
  for (char& c : host) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return host;
}

}  // namespace

bool IsLocalAuthority(std::string_view authority, const ListenAddress& listen) {
  const std::string host = HostOf(authority);
  if (host.empty()) return false;
  if (host == "localhost") return true;
  in_addr addr4;
  if (inet_pton(AF_INET, host.c_str(), &addr4) == 1) {
    if ((ntohl(addr4.s_addr) >> 24) == 127) return true;
  }
  in6_addr addr6;
  if (inet_pton(AF_INET6, host.c_str(), &addr6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&addr6) || (IN6_IS_ADDR_V4MAPPED(&addr6) && addr6.s6_addr[12] == 127)) return true;
  }
  return !listen.host.empty() && host == listen.host;
}

StatusOr<ListenAddress> ParseListenAddress(const std::string& listen) {
  ListenAddress out;
  std::string host;
  std::string port_text;
  if (!listen.empty() && listen[0] == '[') {
    size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return InvalidArgumentError("listen address \"" + listen + "\": expected [ipv6]:port");
    }
    host = listen.substr(1, close - 1);
    port_text = listen.substr(close + 2);
    in6_addr addr6;
    if (inet_pton(AF_INET6, host.c_str(), &addr6) != 1) {
      return InvalidArgumentError("listen address \"" + listen + "\": \"" + host + "\" is not an IPv6 address");
    }
    out.is_ipv6 = true;
    out.is_loopback = IN6_IS_ADDR_LOOPBACK(&addr6);
    if (IN6_IS_ADDR_V4MAPPED(&addr6)) {
      out.is_loopback = addr6.s6_addr[12] == 127;
    }
  } else {
    size_t colon = listen.rfind(':');
    if (colon == std::string::npos) {
      return InvalidArgumentError("listen address \"" + listen + "\": expected host:port");
    }
    host = listen.substr(0, colon);
    port_text = listen.substr(colon + 1);
    if (host.find(':') != std::string::npos) {
      return InvalidArgumentError("listen address \"" + listen + "\": put IPv6 addresses in brackets: [::1]:7070");
    }
    if (host == "localhost") {
      host = "127.0.0.1";
    }
    in_addr addr4;
    if (inet_pton(AF_INET, host.c_str(), &addr4) != 1) {
      return InvalidArgumentError("listen address \"" + listen + "\": \"" + host +
                                  "\" is not an IPv4 address (use a numeric address or [ipv6])");
    }
    out.is_loopback = (ntohl(addr4.s_addr) >> 24) == 127;
  }
  ASSIGN_OR_RETURN(out.port, ParsePort(port_text, listen));
  out.host = host;
  return out;
}

}  // namespace warpscope::http
