// HttpServer: the HTTP core of warpscope-server (docs/design/server.md):
// listen-address parsing and the no-token security rule, bearer-token auth on
// /api/ (and routes that ask for it), request size limits, zstd request bodies, a (method, path) routing
// table and JSON errors. It knows nothing about storage: the server binary
// passes in the routes.
//
// Connections go through ConnectionServer (connection_server.h): bounded
// request heads with deadlines read off the worker threads, connection limits
// in all and per client, and one worker pool per route lane, so ingest and
// /healthz keep their workers whatever queries do.
//
// Threading: Start() and Stop() are called from the owning (main) thread.
// Handlers run on the server's worker threads, up to `threads` (queries) plus
// `ingest_threads` at once, so they must be thread-safe; a handler may block
// (the ingest handler waits for the WAL's fdatasync) at the cost of one
// worker of its lane for that long.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/http/connection_limits.h"

namespace warpscope::http {

class ConnectionServer;

struct HttpServerOptions {
  // host:port; "[::1]:7070" for IPv6; port 0 picks a free port (see port()).
  std::string listen = "127.0.0.1:7070";
  // Bearer token required on /api/; empty = no auth, which is only allowed on
  // a loopback address unless insecure_listen_any is set.
  std::string token;
  bool insecure_listen_any = false;
  // Limit on the request body as sent (compressed).
  size_t max_request_bytes = 16u << 20;
  // Limit on a zstd body after decompression.
  size_t max_decompressed_bytes = 64u << 20;
  // Workers of the query lane (every route not in the ingest lane).
  int threads = 8;
  // Workers of the ingest lane (RouteLane::kIngest: ingest and /healthz); 0
  // puts those routes on the query lane's workers.
  int ingest_threads = 4;
  // Heads, deadlines and connection limits (connection_limits.h).
  ConnectionLimits connections;
  // Where the connection layer counts what it refuses; null: the server's
  // own. Not owned; must outlive the server.
  ConnectionCounters* counters = nullptr;
};

struct CaseInsensitiveLess {
  bool operator()(std::string_view a, std::string_view b) const;
};

struct HttpRequest {
  std::string method;  // "GET", "POST", ... ("HEAD" goes to the GET route unless the path has a HEAD route)
  std::string path;    // without the query string, percent-decoded
  // Query parameters, percent-decoded ('+' is a space); a key may repeat.
  std::multimap<std::string, std::string> query;
  std::multimap<std::string, std::string, CaseInsensitiveLess> headers;
  // The body, already decompressed when it came with Content-Encoding: zstd.
  std::string body;
  // The request carried the server's bearer token (false on a tokenless
  // server).
  bool authenticated = false;
  // It carried an Origin header naming localhost, a loopback address or
  // --listen's host (listen_address.h, IsLocalAuthority); false without one.
  bool local_origin = false;

  // The first value of a query parameter or header, if present.
  std::optional<std::string> QueryValue(const std::string& key) const;
  std::vector<std::string> QueryValues(const std::string& key) const;
  std::optional<std::string> Header(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";  // empty: no Content-Type header
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;

  static HttpResponse Json(int status, std::string body);
  // {"error": {"code": <status>, "message": "<message>"}}: every error the
  // server sends has this shape.
  static HttpResponse Error(int status, std::string_view message);
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// Which worker pool serves a route: ingest and health checks apart from
// queries, so that no number of slow queries can hold up ingest.
enum class RouteLane { kQuery, kIngest };

struct Route {
  // "GET", "POST", ...; a GET route also serves HEAD, unless the path has a
  // HEAD route of its own (one in another lane, say).
  std::string method;
  // An exact path ("/api/v1/ingest"), or a prefix ending in '*' ("/assets/*";
  // "/*" is a fallback for every path). An exact route wins over any prefix,
  // a longer prefix over a shorter one.
  std::string path;
  HttpHandler handler;
  RouteLane lane = RouteLane::kQuery;
  // Behind the bearer token like every path under /api/: for an endpoint
  // whose path clients expect elsewhere (/mcp). With a prefix route, every
  // path it serves.
  bool needs_token = false;
};
using Routes = std::vector<Route>;

class HttpServer {
 public:
  // Binds before returning (so port() is known and a busy port is an error
  // here, not later) and starts serving on background threads.
  static StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options, Routes routes);

  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port (the kernel's pick when options.listen asked for port 0).
  int port() const { return port_; }
  // What the connection layer refused and closed since Start; any thread.
  const ConnectionCounters& counters() const { return *counters_; }

  // Stops accepting, lets requests already being handled finish and write
  // their responses, then joins all threads. Idempotent. Owning thread only.
  void Stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  const ConnectionCounters* counters_ = nullptr;
};

}  // namespace warpscope::http
