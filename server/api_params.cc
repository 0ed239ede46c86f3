#include "server/api_params.h"

#include "base/logging.h"
#include "query/selector.h"
#include "query/time_range.h"

namespace warpscope::server {

using nlohmann::json;
using storage::ProfileQuery;

HttpResponse ErrorFor(const Status& status) {
  const int code = HttpStatusFor(status);
  if (code == 507) {
    // The store's message names files and statements; the operator finds it
    // in the log, the client learns what happened and what to do.
    LOG_WARNING_EVERY_N_SEC(10) << "storage full: " << status.message();
    return HttpResponse::Error(507, "the server's storage is full: nothing of this request was stored; retry once "
                                    "disk space is freed (the server log has the details)");
  }
  return HttpResponse::Error(code, status.message());
}

HttpResponse JsonOk(const json& body) { return HttpResponse::Json(200, body.dump(-1, ' ', false, json::error_handler_t::replace)); }

StatusOr<uint64_t> ParseUnsigned(const HttpRequest& req, const std::string& key, uint64_t fallback, uint64_t max) {
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

StatusOr<ProfileQuery> ParseProfileQuery(const HttpRequest& req, int64_t now_ns, const std::string& from_key,
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

HttpResponse WithCaveats(HttpResponse response, const storage::QueryContext& context) {
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
    const std::string member = "\"incomplete\":" + list.dump(-1, ' ', false, json::error_handler_t::replace);
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

}  // namespace warpscope::server
