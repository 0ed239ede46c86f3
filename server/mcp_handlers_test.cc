// The MCP tools' ranges against the routes they call: each route stands in
// as a stub that parses from/to exactly as the API does and says what it got.
#include "server/mcp_handlers.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/time_range.h"
#include "server/api_params.h"

namespace warpscope::server {
namespace {

using nlohmann::json;

// Not on a millisecond: a range resolved from "now-…" then has ends between
// milliseconds, as it has in production.
constexpr int64_t kNow = 1'764'417'600'123'456'789;

http::Routes StubRoutes() {
  http::Routes routes;
  for (const char* path : {"/api/v1/insights", "/api/v1/top", "/api/v1/profile", "/api/v1/gpu/kernels",
                           "/api/v1/metrics", "/api/v1/metric_names", "/api/v1/targets", "/api/v1/types"}) {
    routes.push_back({"GET", path, [](const http::HttpRequest& req) {
                        auto q = ParseProfileQuery(req, kNow);
                        if (!q.ok()) return ErrorFor(q.status());
                        return JsonOk({{"from_ns", q->from_ns}, {"to_ns", q->to_ns}, {"metrics", json::array()},
                                       {"types", json::array()}});
                      }});
  }
  return routes;
}

json CallTool(const http::Routes& routes, const std::string& tool, const json& arguments) {
  const auto mcp = std::find_if(routes.begin(), routes.end(), [](const http::Route& r) { return r.path == "/mcp"; });
  EXPECT_NE(mcp, routes.end());
  http::HttpRequest req;
  req.method = "POST";
  req.path = "/mcp";
  req.headers.emplace("Content-Type", "application/json");
  req.body = json{{"jsonrpc", "2.0"},
                  {"id", 1},
                  {"method", "tools/call"},
                  {"params", {{"name", tool}, {"arguments", arguments}}}}
                 .dump();
  const http::HttpResponse r = mcp->handler(req);
  EXPECT_EQ(r.status, 200) << r.body;
  return json::parse(r.body)["result"];
}

// The API takes a range of exactly its longest span (now-31d); so must the
// tools, which resolve it once and pass it on to the routes.
TEST(McpHandlersTest, ToolsPassTheApisOwnRangeOn) {
  ApiOptions options;
  options.now_ns = [] { return kNow; };
  http::Routes routes = StubRoutes();
  AddMcpRoutes(options, &routes);
  for (const char* tool : {"list_targets", "get_insights", "top_functions", "gpu_kernels"}) {
    json r = CallTool(routes, tool, {{"from", "now-31d"}});
    ASSERT_EQ(r["isError"], false) << tool << ": " << r.dump();
    EXPECT_EQ(r["structuredContent"]["from_ns"], kNow - kDefaultMaxQuerySpanNs) << tool;
    EXPECT_EQ(r["structuredContent"]["to_ns"], kNow) << tool;
  }
  // One past the limit is the API's own refusal.
  json r = CallTool(routes, "list_targets", {{"from", "now-32d"}});
  EXPECT_EQ(r["isError"], true);
  EXPECT_NE(r["content"][0]["text"].get<std::string>().find("more than the limit of 31d"), std::string::npos)
      << r.dump();
  // Absolute ends pass through unchanged, to the nanosecond.
  r = CallTool(routes, "list_targets", {{"from", "2025-11-29T12:00:00.000000001Z"}, {"to", "1764417700000"}});
  ASSERT_EQ(r["isError"], false) << r.dump();
  EXPECT_EQ(r["structuredContent"]["from_ns"], int64_t{1'764'417'600'000'000'001});
  EXPECT_EQ(r["structuredContent"]["to_ns"], int64_t{1'764'417'700'000'000'000});
}

}  // namespace
}  // namespace warpscope::server
