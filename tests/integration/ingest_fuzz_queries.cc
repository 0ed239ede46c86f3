// Query strings of the ingest fuzz (ingest_fuzz_cases.h): every GET route of
// docs/api.md with random and extreme parameters (and paths: a cubin's hash), ranges mostly over the
// fuzz's data (the last hour), and random selectors of bounded size.
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "tests/integration/ingest_fuzz_cases.h"
#include "tests/integration/server_process.h"

namespace warpscope::testing::fuzz {
namespace {

std::string RandomRegex(CaseRng& r, int depth) {
  const std::vector<std::string> atoms = {"a", ".", "n[0-9]", "\\d", "[^x]", "\\w+", "app", "python.*", "x{1,8}",
                                          "", "t0", "1.*", "(?i)APP", "\\p{L}"};
  if (depth <= 0 || r.Chance(0.4)) return r.Pick(atoms);
  switch (r.Below(5)) {
    case 0: return RandomRegex(r, depth - 1) + RandomRegex(r, depth - 1);
    case 1: return RandomRegex(r, depth - 1) + "|" + RandomRegex(r, depth - 1);
    case 2: return "(" + RandomRegex(r, depth - 1) + ")" + std::vector<std::string>{"*", "+", "?", "{1,8}", "{0,3}"}[r.Below(5)];
    case 3: return "(?:" + RandomRegex(r, depth - 1) + ")";
    default: return ".*" + RandomRegex(r, depth - 1) + ".*";
  }
}

std::string RandomSelector(CaseRng& r) {
  if (r.Chance(0.2)) {
    return r.Pick(std::vector<std::string>{
        "", "{}", "{", "}", "{node}", "{node=}", "{node=\"n0\"", "{=\"a\"}", "{node==\"a\"}", "{node=~\"(\"}",
        "{node=~\"[\"}", "{node=~\"\\\\\"}", "{node=\"\xff\"}", "node=\"n0\"", "{node=\"n0\",}", "{,}",
        "{node=\"n0\" comm=\"app\"}", "{\"node\"=\"n0\"}", "{node=~\"a{2,1}\"}", "{node=~\"(?P<x>a)\"}",
        "{node=~\"x{1001}\"}", "{node=\"\\u0000\"}", "{node=\"\\x\"}", "{n\xc3\xa9=\"1\"}", "{node!~\".*\"}",
        "{node=~\"\"}", "{__name__=\"cpu\"}", "{" + std::string(300, 'k') + "=\"v\"}",
        "{node=\"" + std::string(2000, 'v') + "\"}"});
  }
  const std::vector<std::string> names = {"node", "pid", "comm", "exe", "thread", "gpu", "container_id", "uuid",
                                          "nope", "k3"};
  const std::vector<std::string> values = {"n0", "n1", "app", "python3", "100", "", "t0", "overflow", "GPU-1"};
  const std::vector<std::string> ops = {"=", "!=", "=~", "!~"};
  std::string s = "{";
  for (uint64_t i = 0, n = 1 + r.Below(4); i < n; ++i) {
    const std::string op = r.Pick(ops);
    std::string value = op.size() == 2 && op[1] == '~' ? RandomRegex(r, 3) : r.Pick(values);
    std::string escaped;
    for (char ch : value) escaped += ch == '\\' ? "\\\\" : std::string(1, ch);
    s += (i ? "," : "") + r.Pick(names) + op + "\"" + escaped + "\"";
  }
  return s + "}";
}

// A from/to pair: mostly ranges over the fuzz's data (the last ~hour),
// sometimes extreme or malformed values. `max_span_s` keeps plausible ranges
// inside a route's limit.
std::pair<std::string, std::string> RandomRange(CaseRng& r, int64_t now_ns, int64_t max_span_s) {
  const int64_t now_ms = now_ns / 1'000'000;
  if (r.Chance(0.7)) {
    const int64_t spans[] = {1, 10, 60, 300, 900, 3600, 7200, 86'400};
    int64_t span = spans[r.Below(8)];
    if (span > max_span_s) span = max_span_s;
    const int64_t end_ms = now_ms + 60'000 - static_cast<int64_t>(r.Below(3600)) * 1000;
    switch (r.Below(3)) {
      case 0: return {std::to_string(end_ms - span * 1000), std::to_string(end_ms)};
      case 1: return {"now-" + std::to_string(span) + "s", r.Chance(0.5) ? "now" : "now+1m"};
      default: {
        auto rfc = [](int64_t ms) {
          const time_t t = ms / 1000;
          struct tm tm {};
          gmtime_r(&t, &tm);
          char buf[64];
          strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
          return std::string(buf) + "." + std::to_string(ms % 1000 + 1000).substr(1) + "Z";
        };
        return {rfc(end_ms - span * 1000), rfc(end_ms)};
      }
    }
  }
  const std::vector<std::string> odd = {
      "", "0", "-1", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "4611686018427387904",
      "99999999999999999999999", "now-999999999999999d", "now+1h", "now-", "now--5m", "now-1h1h", "now-5x",
      "now-0s", "now-1.5h", "now-100000000000w", "2026-13-45T00:00:00Z", "2026-11-29T23:59:60Z",
      "99999-01-01T00:00:00Z", "0000-01-01T00:00:00Z", "1970-01-01T00:00:00Z",
      "2026-11-29T12:00:00.123456789012345Z", "2026-11-29T12:00:00+99:99", "2026-11-29T12:00:00", "yesterday",
      "\xff", std::string(2000, '1'), "now", "now-31d", "now-32d", "1e12"};
  return {r.Chance(0.7) ? r.Pick(odd) : "now-1h", r.Chance(0.7) ? r.Pick(odd) : "now"};
}

std::string RandomUnsigned(CaseRng& r) {
  if (r.Chance(0.3)) return std::to_string(r.Below(r.Chance(0.5) ? 100 : 1'000'000));
  return r.Pick(std::vector<std::string>{"0", "1", "2", "100", "300", "8192", "200000", "200001", "10000", "10001",
                                         "1000", "1001", "100000", "100001", "-1", "18446744073709551615",
                                         "18446744073709551616", "99999999999999999999", "abc", "1e3", " 1", "+1",
                                         ""});
}

std::string RandomDuration(CaseRng& r) {
  return r.Pick(std::vector<std::string>{"1ms", "0s", "-1s", "1ns", "999us", "10s", "1m", "1d", "99999999999999h",
                                         "1.5s", "", "abc", "1h30m", "9223372036854775807ns", "1w", "5", "10S"});
}

std::string RandomGroupBy(CaseRng& r) {
  if (r.Chance(0.1)) return r.Pick(std::vector<std::string>{",,,", ",", std::string(300, 'g'), "node,,pid", "\xff"});
  const std::vector<std::string> names = {"node", "pid", "comm", "exe", "thread", "gpu", "uuid", "device", "stream",
                                          "container_id", "", "nope"};
  std::string s;
  for (uint64_t i = 0, n = r.Below(11); i < n; ++i) s += (i ? "," : "") + r.Pick(names);
  return s;
}

}  // namespace

FuzzCase MakeQueryCase(CaseRng& r, int64_t now_ns) {
  FuzzCase c;
  c.kind = Kind::kQuery;
  struct Route {
    const char* path;
    int64_t max_span_s;
  };
  static const Route routes[] = {{"/api/v1/profile", 86'400}, {"/api/v1/top", 86'400},     {"/api/v1/diff", 86'400},
                                 {"/api/v1/series", 86'400},  {"/api/v1/flamechart", 900}, {"/api/v1/metrics", 86'400},
                                 {"/api/v1/metric_names", 0}, {"/api/v1/labels", 0},       {"/api/v1/label_values", 0},
                                 {"/api/v1/targets", 86'400}, {"/api/v1/types", 0},        {"/api/v1/status", 0},
                                 {"/api/v1/gpu/kernels", 86'400}, {"/api/v1/gpu/trace", 10},
                                 {"/api/v1/gpu/trace.json", 10}, {"/api/v1/gpu/cubins/", 0}};
  const Route& route = routes[r.Below(std::size(routes))];
  std::string path = route.path;
  if (path == "/api/v1/gpu/cubins/") {  // the hash is the path's last part, percent-encoded
    path += UrlEncode(r.Pick(std::vector<std::string>{"0123456789abcdef0123456789abcdef",
                                                      "0123456789ABCDEF0123456789ABCDEF", "", "abc",
                                                      "../../dictionary.sqlite", std::string("\0", 1),
                                                      std::string(33, 'a'), std::string(2000, 'f'), "\xff"}));
  }
  std::vector<std::pair<std::string, std::string>> params;
  auto maybe = [&](double p, const std::string& k, const std::string& v) {
    if (r.Chance(p)) params.push_back({k, v});
  };
  if (route.max_span_s > 0) {
    auto [from, to] = RandomRange(r, now_ns, route.max_span_s);
    maybe(0.9, "from", from);
    maybe(0.9, "to", to);
    maybe(0.5, "selector", RandomSelector(r));
    maybe(0.3, "type", r.Pick(std::vector<std::string>{"cpu", "cpu", "gpu_time", "", "nope", std::string(65, 't'),
                                                       "\xff", std::string("cpu\0", 4)}));
  }
  if (path == "/api/v1/profile") {
    maybe(0.6, "format", r.Pick(std::vector<std::string>{"json", "pprof", "collapsed", "JSON", "", "xml"}));
    maybe(0.4, "max_nodes", RandomUnsigned(r));
  } else if (path == "/api/v1/top") {
    maybe(0.6, "limit", RandomUnsigned(r));
    maybe(0.4, "sort", r.Pick(std::vector<std::string>{"self", "total", "", "SELF", "name"}));
  } else if (path == "/api/v1/diff") {
    auto [bf, bt] = RandomRange(r, now_ns, route.max_span_s);
    maybe(0.9, "base_from", bf);
    maybe(0.9, "base_to", bt);
    maybe(0.3, "base_selector", RandomSelector(r));
    maybe(0.3, "max_nodes", RandomUnsigned(r));
  } else if (path == "/api/v1/series" || path == "/api/v1/metrics") {
    maybe(0.5, "step", RandomDuration(r));
    maybe(0.3, "max_points", RandomUnsigned(r));
    maybe(0.5, "group_by", RandomGroupBy(r));
    if (path == "/api/v1/metrics") {
      maybe(0.9, "name", r.Pick(std::vector<std::string>{"gpu_utilization", "gpu_power", "gpu_energy", "", "nope",
                                                         std::string(257, 'm'), "m5"}));
    }
  } else if (path == "/api/v1/flamechart") {
    maybe(0.5, "group_by", RandomGroupBy(r));
    maybe(0.4, "max_lanes", RandomUnsigned(r));
  } else if (path == "/api/v1/label_values") {
    maybe(0.9, "name", r.Pick(std::vector<std::string>{"node", "pid", "comm", "thread", "k1", "", "nope",
                                                       std::string(5000, 'n'), "\xff"}));
  }
  if (r.Chance(0.1)) params.push_back({"unknown_param", "1"});
  if (r.Chance(0.05) && !params.empty()) params.push_back(params[r.Below(params.size())]);  // a repeated parameter
  std::string query;
  for (const auto& [k, v] : params) query += (query.empty() ? "?" : "&") + k + "=" + UrlEncode(v);
  if (r.Chance(0.03)) {  // escapes the server must decode or refuse
    query += (query.empty() ? "?" : "&") + r.Pick(std::vector<std::string>{"from=%zz", "selector=%00", "to=now+",
                                                                          "x", "&&", "from=%", "selector=%7B%7D%"});
  }
  c.path = path + query;
  c.what = c.path.size() > 300 ? c.path.substr(0, 300) + "..." : c.path;
  return c;
}

}  // namespace warpscope::testing::fuzz
