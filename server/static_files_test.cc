// StaticFileRoutes on a real http::HttpServer on loopback, with a token set: the
// UI's files need none, the API still does.
#include "server/static_files.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <array>
#include <string>

#include "base/gzip.h"

namespace warpscope::server {
namespace {

constexpr char kToken[] = "static-token";

const std::array<EmbeddedFile, 3> kFiles = {{
    {"/index.html", "text/html; charset=utf-8", "<!doctype html><div id=app></div>", {}},
    {"/assets/index-abc123.js", "text/javascript; charset=utf-8", "console.log(1)", {}},
    {"/favicon.svg", "image/svg+xml", "<svg/>", {}},
}};

std::unique_ptr<http::HttpServer> StartWith(std::span<const EmbeddedFile> files) {
  http::HttpServerOptions o;
  o.listen = "127.0.0.1:0";
  o.token = kToken;
  http::Routes routes = StaticFileRoutes(files);
  routes.push_back({"GET", "/api/v1/types", [](const http::HttpRequest&) { return http::HttpResponse::Json(200, "{}"); }});
  auto s = http::HttpServer::Start(o, std::move(routes));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

// The gzip copy made at build time goes to clients that take gzip, as it
// is: not compressed again, and the plain bytes to the others.
TEST(StaticFilesTest, ServesTheBuildTimeGzipCopyToClientsThatTakeIt) {
  const std::string js(4000, 'a');
  const std::string packed = GzipCompress(js, 9).value();
  const std::array<EmbeddedFile, 1> files = {{{"/assets/app-1.js", "text/javascript; charset=utf-8", js, packed}}};
  auto server = StartWith(files);
  ASSERT_TRUE(server);
  httplib::Client c("127.0.0.1", server->port());
  c.set_decompress(false);
  auto gz = c.Get("/assets/app-1.js", {{"Accept-Encoding", "gzip, deflate, br, zstd"}});
  ASSERT_TRUE(gz);
  EXPECT_EQ(gz->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(gz->get_header_value("Vary"), "Accept-Encoding");
  EXPECT_EQ(gz->body, packed);
  auto plain = c.Get("/assets/app-1.js", {{"Accept-Encoding", "br"}});
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->get_header_value("Content-Encoding"), "");
  EXPECT_EQ(plain->body, js);
}

TEST(StaticFilesTest, ServesIndexAssetsAndFallsBackToTheApp) {
  auto server = StartWith(kFiles);
  ASSERT_TRUE(server);
  httplib::Client c("127.0.0.1", server->port());

  auto index = c.Get("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->body, kFiles[0].data);
  EXPECT_EQ(index->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(index->get_header_value("Cache-Control"), "no-cache");

  auto js = c.Get("/assets/index-abc123.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->body, "console.log(1)");
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(js->get_header_value("Cache-Control"), "public, max-age=31536000, immutable");

  auto missing = c.Get("/assets/index-old.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body.rfind("{\"error\": {\"code\": 404", 0), 0u) << missing->body;

  auto icon = c.Get("/favicon.svg");
  ASSERT_TRUE(icon);
  EXPECT_EQ(icon->body, "<svg/>");

  // A view's URL (a shared link) loads the app.
  auto view = c.Get("/flame?from=now-5m&search=hot");
  ASSERT_TRUE(view);
  EXPECT_EQ(view->status, 200);
  EXPECT_EQ(view->body, kFiles[0].data);

  // The API keeps its token and its JSON errors.
  EXPECT_EQ(c.Get("/api/v1/types")->status, 401);
  auto api = c.Get("/api/v1/types", {{"Authorization", std::string("Bearer ") + kToken}});
  ASSERT_TRUE(api);
  EXPECT_EQ(api->status, 200);
  auto unknown = c.Get("/api/v1/nope", {{"Authorization", std::string("Bearer ") + kToken}});
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(unknown->get_header_value("Content-Type"), "application/json");
}

TEST(StaticFilesTest, WithoutTheUiTheRootSaysSo) {
  auto server = StartWith({});
  ASSERT_TRUE(server);
  httplib::Client c("127.0.0.1", server->port());
  auto index = c.Get("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 404);
  EXPECT_NE(index->body.find("WARPSCOPE_BUILD_UI=OFF"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::server
