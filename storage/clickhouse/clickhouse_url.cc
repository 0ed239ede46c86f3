#include "storage/clickhouse/clickhouse_url.h"

#include <cctype>

namespace warpscope::clickhouse {
namespace {

Status Bad(const std::string& url, const std::string& why) {
  return InvalidArgumentError("ClickHouse URL \"" + url + "\": " + why +
                              " (want clickhouse://HOST:PORT/DATABASE, clickhouse+https://..., http:// or https://)");
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool PercentDecode(const std::string& in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = HexValue(in[i + 1]);
    const int lo = HexValue(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

}  // namespace

std::string ClickHouseEndpoint::BaseUrl() const {
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return std::string(tls ? "https" : "http") + "://" + h + ":" + std::to_string(port) + "/";
}

std::string ClickHouseEndpoint::ToString() const { return BaseUrl() + database; }

StatusOr<ClickHouseEndpoint> ParseClickHouseUrl(const std::string& url) {
  ClickHouseEndpoint out;
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return Bad(url, "no scheme");
  std::string scheme = url.substr(0, scheme_end);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme == "clickhouse" || scheme == "http") {
    out.tls = false;
    out.port = 8123;
  } else if (scheme == "clickhouse+https" || scheme == "https") {
    out.tls = true;
    out.port = 8443;
  } else {
    return Bad(url, "unknown scheme \"" + scheme + "\"");
  }
  std::string rest = url.substr(scheme_end + 3);
  if (rest.find_first_of("?#") != std::string::npos) return Bad(url, "query strings and fragments are not supported");
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (!path.empty() && path.back() == '/') path.pop_back();

  if (const size_t at = authority.rfind('@'); at != std::string::npos) {
    const std::string userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const size_t colon = userinfo.find(':');
    if (!PercentDecode(userinfo.substr(0, colon), &out.user)) return Bad(url, "bad percent-encoding in the user");
    if (colon != std::string::npos && !PercentDecode(userinfo.substr(colon + 1), &out.password)) {
      return Bad(url, "bad percent-encoding in the password");
    }
  }
  std::string port_text;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) return Bad(url, "unterminated [IPv6] host");
    out.host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return Bad(url, "junk after the [IPv6] host");
      port_text = after.substr(1);
      if (port_text.empty()) return Bad(url, "empty port");
    }
  } else {
    const size_t colon = authority.find(':');
    out.host = authority.substr(0, colon);
    if (colon != std::string::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return Bad(url, "empty port");
    }
  }
  if (out.host.empty()) return Bad(url, "no host");
  for (char c : out.host) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_' && c != ':') {
      return Bad(url, "bad character in the host");
    }
  }
  if (!port_text.empty()) {
    if (port_text.size() > 5) return Bad(url, "bad port \"" + port_text + "\"");
    int port = 0;
    for (char c : port_text) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return Bad(url, "bad port \"" + port_text + "\"");
      port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535) return Bad(url, "port " + port_text + " out of range");
    out.port = port;
  }
  if (path.find('/') != std::string::npos) return Bad(url, "the path must be a single database name");
  out.database = path.empty() ? kDefaultDatabase : path;
  for (char c : out.database) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
      return Bad(url, "database \"" + out.database + "\" must be letters, digits and underscores");
    }
  }
  return out;
}

}  // namespace warpscope::clickhouse
