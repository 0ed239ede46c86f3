#include "server/static_files.h"

#include "base/http/response_encoding.h"

#include <map>
#include <memory>
#include <string>

namespace warpscope::server {
namespace {

// Vite puts a content hash into every name under /assets/, so a cached copy
// never goes stale; index.html names the current ones and is revalidated.
constexpr char kImmutable[] = "public, max-age=31536000, immutable";
constexpr char kRevalidate[] = "no-cache";

constexpr char kNoUiPage[] =
    "<!doctype html><title>warpscope</title><p>This warpscope-server was built without the web UI "
    "(WARPSCOPE_BUILD_UI=OFF). The API is under <code>/api/v1/</code> (docs/api.md).</p>";

http::HttpResponse Serve(const http::HttpRequest& req, const EmbeddedFile& file, const char* cache_control) {
  http::HttpResponse r;
  r.content_type = std::string(file.content_type);
  const bool gzip =
      !file.gzip.empty() && http::ParseAcceptEncoding(req.Header("Accept-Encoding").value_or("")).gzip;
  r.body = std::string(gzip ? file.gzip : file.data);
  if (gzip) r.headers.emplace_back("Content-Encoding", "gzip");
  if (!file.gzip.empty()) r.headers.emplace_back("Vary", "Accept-Encoding");
  r.headers.emplace_back("Cache-Control", cache_control);
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  return r;
}

bool IsApiPath(const std::string& path) { return path == "/api" || path.rfind("/api/", 0) == 0; }

}  // namespace

http::Routes StaticFileRoutes(std::span<const EmbeddedFile> files) {
  auto by_path = std::make_shared<std::map<std::string, const EmbeddedFile*, std::less<>>>();
  for (const EmbeddedFile& f : files) by_path->emplace(std::string(f.path), &f);
  auto index_page = [by_path](const http::HttpRequest& req) {
    auto it = by_path->find("/index.html");
    if (it != by_path->end()) return Serve(req, *it->second, kRevalidate);
    http::HttpResponse r;
    r.status = 404;
    r.content_type = "text/html; charset=utf-8";
    r.body = kNoUiPage;
    return r;
  };

  http::Routes routes;
  routes.push_back({"GET", "/", [index_page](const http::HttpRequest& req) { return index_page(req); }});
  routes.push_back({"GET", "/assets/*", [by_path](const http::HttpRequest& req) {
                      auto it = by_path->find(req.path);
                      if (it == by_path->end()) return http::HttpResponse::Error(404, "no such file: " + req.path);
                      return Serve(req, *it->second, kImmutable);
                    }});
  // Top-level files (favicon) by name; any other path is a view of the app.
  routes.push_back({"GET", "/*", [by_path, index_page](const http::HttpRequest& req) {
                      if (IsApiPath(req.path)) return http::HttpResponse::Error(404, "no such path: " + req.path);
                      auto it = by_path->find(req.path);
                      if (it != by_path->end()) return Serve(req, *it->second, kRevalidate);
                      return index_page(req);
                    }});
  return routes;
}

}  // namespace warpscope::server
