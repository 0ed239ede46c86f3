#include "server/api_params.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "base/duration.h"
#include "base/logging.h"
#include "model/selector.h"
#include "model/time_range.h"
#include "query/json_text.h"

namespace warpscope::server {

using nlohmann::json;
using storage::ProfileQuery;

http::HttpResponse ErrorFor(const Status& status) {
  const int code = HttpStatusFor(status);
  if (code == 507) {
    // The store's message names files and statements; the operator finds it
    // in the log, the client learns what happened and what to do.
    LOG_WARNING_EVERY_N_SEC(10) << "storage full: " << status.message();
    return http::HttpResponse::Error(507, "the server's storage is full: nothing of this request was stored; retry once "
                                    "disk space is freed (the server log has the details)");
  }
  return http::HttpResponse::Error(code, status.message());
}

http::HttpResponse JsonOk(const json& body) { return http::HttpResponse::Json(200, query::DumpJson(body)); }

StatusOr<uint64_t> ParseUnsigned(const http::HttpRequest& req, const std::string& key, uint64_t fallback, uint64_t max) {
  const auto text = req.QueryValue(key);
  if (!text || text->empty()) return fallback;
  uint64_t value = 0;
  for (char c : *text) {
    if (c < '0' || c > '9' || value > max) {
      return InvalidArgumentError("parameter '" + key + "': expected a whole number, found \"" + *text + "\"");
    }
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value > max) {
    return InvalidArgumentError("parameter '" + key + "': at most " + std::to_string(max) + ", found " + *text);
  }
  return value;
}

StatusOr<double> ParseNumber(const http::HttpRequest& req, const std::string& key, double fallback, double min,
                             double max) {
  const std::optional<std::string> v = req.QueryValue(key);
  if (!v || v->empty()) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v->c_str(), &end);
  if (end != v->c_str() + v->size() || !(d >= min && d <= max)) {
    return InvalidArgumentError("parameter '" + key + "': expected a number from " + std::to_string(min) + " to " +
                                std::to_string(max) + ", found \"" + *v + "\"");
  }
  return d;
}

StatusOr<ProfileQuery> ParseProfileQuery(const http::HttpRequest& req, int64_t now_ns, const std::string& from_key,
                                         const std::string& to_key, const std::string& selector_key) {
  ProfileQuery q;
  q.type = req.QueryValue("type").value_or("cpu");
  if (q.type.empty()) q.type = "cpu";
  if (q.type.size() > 64) return InvalidArgumentError("parameter 'type': longer than 64 bytes");
  const std::string from = req.QueryValue(from_key).value_or("now-1h");
  const std::string to = req.QueryValue(to_key).value_or("now");
  auto range = ParseTimeRange(from, to, now_ns);
  if (!range.ok()) {
    std::string message = range.status().message();
    if (from_key != "from") {  // name the caller's parameters, not ParseTimeRange's
      auto replace = [&](const std::string& a, const std::string& b) {
        const auto pos = message.find("'" + a + "'");
        if (pos != std::string::npos) message.replace(pos, a.size() + 2, "'" + b + "'");
      };
      replace("from", from_key);
      replace("to", to_key);
    }
    return InvalidArgumentError(message);
  }
  q.from_ns = range->from_unix_ns;
  q.to_ns = range->to_unix_ns;
  const std::string selector_text = req.QueryValue(selector_key).value_or("");
  auto selector = Selector::Parse(selector_text);
  if (!selector.ok()) return InvalidArgumentError("parameter '" + selector_key + "': " + selector.status().message());
  q.selector = std::move(selector).value();
  return q;
}

int HttpStatusFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kCancelled: return 503;
    case StatusCode::kResourceExhausted: return 507;
    default: return 500;
  }
}

http::HttpResponse WithCaveats(http::HttpResponse response, const storage::QueryContext& context) {
  const std::vector<storage::DataGap> gaps = context.gaps();
  if (gaps.empty()) return response;
  json list = json::array();
  std::string summary;
  for (const storage::DataGap& g : gaps) {
    list.push_back({{"from", FormatRfc3339(g.from_ns)},
                    {"to", FormatRfc3339(g.to_ns)},
                    {"from_ms", g.from_ns / 1'000'000},
                    {"to_ms", g.to_ns / 1'000'000},
                    {"reason", g.reason}});
    if (summary.size() < 512) summary += (summary.empty() ? "" : "; ") + g.reason;
  }
  const bool json_object =
      response.content_type.rfind("application/json", 0) == 0 && !response.body.empty() && response.body[0] == '{';
  if (json_object) {
    // Spliced in front of the renderer's members: the renderers write their
    // JSON directly (query/json_text.h) and the caveats are the same for all.
    const std::string member = "\"incomplete\":" + query::DumpJson(list);
    response.body.insert(1, response.body.size() > 2 ? member + "," : member);
  } else {
    std::string header = std::to_string(gaps.size()) + " unreadable range(s): " + summary;
    for (char& c : header) {
      if (c == '\r' || c == '\n') c = ' ';
    }
    response.headers.emplace_back("X-Warpscope-Incomplete", header);
  }
  return response;
}

StatusOr<bool> ParseLineGranularity(const http::HttpRequest& req) {
  const std::string g = req.QueryValue("granularity").value_or("functions");
  if (g == "functions" || g.empty()) return false;
  if (g == "lines") return true;
  return InvalidArgumentError("parameter 'granularity': expected functions or lines, found \"" + g + "\"");
}

// group_by=a,b,c (at most 8 labels); `fallback` when absent.
StatusOr<std::vector<std::string>> ParseGroupBy(const http::HttpRequest& req, const std::string& fallback) {
  const std::string text = req.QueryValue("group_by").value_or(fallback);
  std::vector<std::string> names;
  size_t start = 0;
  while (start < text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string name = text.substr(start, comma - start);
    if (!name.empty()) names.push_back(std::move(name));
    start = comma + 1;
  }
  if (names.size() > 8) return InvalidArgumentError("parameter 'group_by': at most 8 labels");
  return names;
}

// The step of a series answer over `range`: `step` when given (a duration of
// at least 1 ms, at most 10000 points), else the smallest round step giving at
// most `max_points` (default 300) points.
StatusOr<int64_t> ParseStep(const http::HttpRequest& req, const TimeRange& range) {
  auto max_points = ParseUnsigned(req, "max_points", 300, 10'000);
  if (!max_points.ok()) return max_points.status();
  int64_t step_ns = ChooseStep(range, static_cast<int>(std::max<uint64_t>(*max_points, 1)));
  if (auto step = req.QueryValue("step"); step && !step->empty()) {
    auto parsed = ParseDuration(*step);
    if (!parsed.ok() || parsed->count() < 1'000'000) {
      return InvalidArgumentError("parameter 'step': expected a duration of at least 1ms like 10s or 1m, found \"" +
                                  *step + "\"");
    }
    if (range.span_ns() / parsed->count() > 10'000) {
      return InvalidArgumentError("parameter 'step': more than 10000 points over the range; use a larger step");
    }
    step_ns = parsed->count();
  }
  return step_ns;
}

// A Content-Type's media type, lower-cased, without parameters or spaces:
// "Application/X-Protobuf; foo=bar" -> "application/x-protobuf".
std::string MediaType(const std::string& content_type) {
  std::string out;
  for (char c : content_type.substr(0, content_type.find(';'))) {
    if (c != ' ' && c != '\t') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace warpscope::server
