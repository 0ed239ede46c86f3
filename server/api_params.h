// Parameters and answers shared by the API's handlers (api_handlers.cc,
// gpu_handlers.cc): the common from/to/selector, whole numbers, errors and
// JSON answers. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/http/http_server.h"
#include "model/time_range.h"
#include "storage/profile_store.h"

namespace warpscope::server {

// The HTTP answer for a failed status (HttpStatusFor's code, the message as the error).
http::HttpResponse ErrorFor(const Status& status);
http::HttpResponse JsonOk(const nlohmann::json& body);

// A whole number parameter; `fallback` when absent or empty, InvalidArgument
// naming the parameter when malformed or above `max`.
StatusOr<uint64_t> ParseUnsigned(const http::HttpRequest& req, const std::string& key, uint64_t fallback, uint64_t max);
// A number parameter in [min, max]; `fallback` when absent or empty,
// InvalidArgument naming the parameter and the bounds otherwise.
StatusOr<double> ParseNumber(const http::HttpRequest& req, const std::string& key, double fallback, double min,
                             double max);

// type, from, to (default: the last hour) and selector, shared by every query.
// The keys may be renamed (the diff's base_from, base_to, base_selector).
StatusOr<storage::ProfileQuery> ParseProfileQuery(const http::HttpRequest& req, int64_t now_ns,
                                                  const std::string& from_key = "from",
                                                  const std::string& to_key = "to",
                                                  const std::string& selector_key = "selector");

// granularity=functions (default) or lines: true for lines
// (query/line_granularity.h).
StatusOr<bool> ParseLineGranularity(const http::HttpRequest& req);

// group_by=a,b,c (at most 8 labels); `fallback` when absent.
StatusOr<std::vector<std::string>> ParseGroupBy(const http::HttpRequest& req, const std::string& fallback);

// The step of a series answer over `range`: `step` when given (a duration of
// at least 1 ms, at most 10000 points over the range), else the smallest
// round step giving at most `max_points` (default 300) points.
StatusOr<int64_t> ParseStep(const http::HttpRequest& req, const TimeRange& range);

// A Content-Type's media type, lower-cased, without parameters or spaces:
// "Application/X-Protobuf; foo=bar" -> "application/x-protobuf".
std::string MediaType(const std::string& content_type);

// The HTTP status for a storage or parsing error: InvalidArgument 400,
// NotFound 404, Unavailable, DeadlineExceeded and Cancelled 503,
// ResourceExhausted 507, others 500.
int HttpStatusFor(const Status& status);

// A successful query answer with the caveats its context collected (ranges
// the store could not read): JSON answers get an "incomplete" list of
// {from, to, from_ms, to_ms, reason} as their first member, other answers
// (pprof, collapsed text) an X-Warpscope-Incomplete header saying the same,
// so a partial answer is never taken for a whole one.
http::HttpResponse WithCaveats(http::HttpResponse response, const storage::QueryContext& context);

}  // namespace warpscope::server
