#include "server/api_params.h"

#include <gtest/gtest.h>

namespace warpscope::server {
namespace {

TEST(ApiParamsTest, GranularityIsFunctionsOrLines) {
  http::HttpRequest req;
  EXPECT_FALSE(*ParseLineGranularity(req));
  req.query.emplace("granularity", "lines");
  EXPECT_TRUE(*ParseLineGranularity(req));
  req.query.clear();
  req.query.emplace("granularity", "functions");
  EXPECT_FALSE(*ParseLineGranularity(req));
  req.query.clear();
  req.query.emplace("granularity", "addresses");
  const StatusOr<bool> bad = ParseLineGranularity(req);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected functions or lines"), std::string::npos);
}

TEST(ApiParamsTest, NumbersAreWithinTheirBounds) {
  http::HttpRequest req;
  EXPECT_EQ(*ParseNumber(req, "pue", 1.2, 1, 10), 1.2);
  req.query.emplace("pue", "1.5");
  EXPECT_EQ(*ParseNumber(req, "pue", 1.2, 1, 10), 1.5);
  for (const char* bad : {"0.5", "11", "1.5x", "nan"}) {
    req.query.clear();
    req.query.emplace("pue", bad);
    const StatusOr<double> d = ParseNumber(req, "pue", 1.2, 1, 10);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_NE(d.status().message().find("parameter 'pue': expected a number from"), std::string::npos);
  }
}

TEST(ApiParamsTest, StatusesMapToHttp) {
  EXPECT_EQ(HttpStatusFor(InvalidArgumentError("x")), 400);
  EXPECT_EQ(HttpStatusFor(NotFoundError("x")), 404);
  EXPECT_EQ(HttpStatusFor(UnavailableError("x")), 503);
  EXPECT_EQ(HttpStatusFor(DeadlineExceededError("x")), 503);
  EXPECT_EQ(HttpStatusFor(CancelledError("x")), 503);
  EXPECT_EQ(HttpStatusFor(ResourceExhaustedError("x")), 507);
  EXPECT_EQ(HttpStatusFor(DataLossError("x")), 500);
  EXPECT_EQ(HttpStatusFor(InternalError("x")), 500);
}

// A full disk's message names the store's statements and files; the client
// gets what happened and what to do, the log the details.
TEST(ApiParamsTest, StorageFullAnswerHidesTheStoresInternals) {
  const http::HttpResponse r = ErrorFor(ResourceExhaustedError(
      "interning batch: INSERT INTO strings(id, value) VALUES (?, ?): database or disk is full (sqlite 13)"));
  EXPECT_EQ(r.status, 507);
  EXPECT_EQ(r.body.find("INSERT"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("storage is full"), std::string::npos) << r.body;
}

TEST(ApiParamsTest, CaveatsGoFirstInJsonAndIntoAHeaderOtherwise) {
  storage::QueryContext context;
  const http::HttpResponse plain = WithCaveats(http::HttpResponse::Json(200, "{\"total\":5}"), context);
  EXPECT_EQ(plain.body, "{\"total\":5}");
  context.AddGap({1'000'000'000, 2'000'000'000, "segment seg-1-2.wss block 0 is corrupt"});
  context.AddGap({1'000'000'000, 2'000'000'000, "segment seg-1-2.wss block 0 is corrupt"});  // once
  const http::HttpResponse json = WithCaveats(http::HttpResponse::Json(200, "{\"total\":5}"), context);
  EXPECT_EQ(json.body,
            "{\"incomplete\":[{\"from\":\"1970-01-01T00:00:01Z\",\"from_ms\":1000,\"reason\":\"segment "
            "seg-1-2.wss block 0 is corrupt\",\"to\":\"1970-01-01T00:00:02Z\",\"to_ms\":2000}],\"total\":5}");
  const http::HttpResponse empty = WithCaveats(http::HttpResponse::Json(200, "{}"), context);
  EXPECT_EQ(empty.body.rfind("{\"incomplete\":[", 0), 0u);
  EXPECT_EQ(empty.body.back(), '}');
  EXPECT_EQ(empty.body[empty.body.size() - 2], ']');
  http::HttpResponse text;
  text.content_type = "text/plain";
  text.body = "main;work 5\n";
  const http::HttpResponse collapsed = WithCaveats(text, context);
  EXPECT_EQ(collapsed.body, text.body);
  ASSERT_EQ(collapsed.headers.size(), 1u);
  EXPECT_EQ(collapsed.headers[0].first, "X-Warpscope-Incomplete");
  EXPECT_EQ(collapsed.headers[0].second, "1 unreadable range(s): segment seg-1-2.wss block 0 is corrupt");
}

}  // namespace
}  // namespace warpscope::server
