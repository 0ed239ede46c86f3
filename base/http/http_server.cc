#include "base/http/http_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <strings.h>

#include "base/logging.h"
#include "base/http/connection_server.h"
#include "base/http/listen_address.h"
#include "base/http/query_string.h"
#include "base/http/zstd_body.h"
#include "base/http/response_encoding.h"

namespace warpscope::http {
namespace {

std::string JsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

// Compares in time that depends only on the lengths, never on where the
// first difference is, so the token cannot be guessed byte by byte.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? a[i] : 0;
    unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

// The scheme-less authority of an Origin ("http://host:7070" -> "host:7070").
std::string_view OriginAuthority(std::string_view origin) {
  const size_t at = origin.find("://");
  return at == std::string_view::npos ? origin : origin.substr(at + 3);
}

bool IsApiPath(const std::string& path) { return path == "/api" || path.rfind("/api/", 0) == 0; }

bool IsChunked(const httplib::Request& req) {
  return strcasecmp(req.get_header_value("Transfer-Encoding").c_str(), "chunked") == 0;
}

// Content-Length as sent; nullopt when absent, -1 when malformed.
std::optional<long long> ContentLength(const httplib::Request& req) {
  if (!req.has_header("Content-Length")) return std::nullopt;
  std::string v = req.get_header_value("Content-Length");
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 18) return -1;
  return std::stoll(v);
}

bool HasBody(const httplib::Request& req) {
  auto len = ContentLength(req);
  return IsChunked(req) || (len && *len != 0);
}

void Fill(const HttpResponse& from, httplib::Response& to) {
  to.status = from.status;
  for (const auto& [k, v] : from.headers) to.set_header(k, v);
  if (from.content_type.empty()) {
    to.body = from.body;  // no body to type (a 202 or 204): no Content-Type header
  } else {
    to.set_content(from.body, from.content_type.c_str());
  }
}

}  // namespace

bool CaseInsensitiveLess::operator()(std::string_view a, std::string_view b) const {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    int x = std::tolower(static_cast<unsigned char>(a[i]));
    int y = std::tolower(static_cast<unsigned char>(b[i]));
    if (x != y) return x < y;
  }
  return a.size() < b.size();
}

std::optional<std::string> HttpRequest::QueryValue(const std::string& key) const {
  auto it = query.find(key);
  if (it == query.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> HttpRequest::QueryValues(const std::string& key) const {
  std::vector<std::string> out;
  auto [b, e] = query.equal_range(key);
  for (auto it = b; it != e; ++it) out.push_back(it->second);
  return out;
}

std::optional<std::string> HttpRequest::Header(const std::string& name) const {
  auto it = headers.find(name);
  if (it == headers.end()) return std::nullopt;
  return it->second;
}

HttpResponse HttpResponse::Json(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::Error(int status, std::string_view message) {
  return Json(status, "{\"error\": {\"code\": " + std::to_string(status) + ", \"message\": \"" +
                          JsonEscape(message) + "\"}}");
}

// Owned by HttpServer; the checks and Dispatch run on worker threads and only
// read the immutable options and routing table.
struct HttpServer::Impl {
  HttpServerOptions options;
  ListenAddress listen;
  // Tokenless on loopback: only local Host and Origin values are answered.
  bool local_names_only = false;
  ConnectionCounters* counters = nullptr;
  // path -> routes for that path (one per method).
  std::map<std::string, std::vector<Route>> routes;
  // prefix (without its '*') -> routes under that prefix, longest first.
  std::map<std::string, std::vector<Route>, std::greater<>> prefix_routes;
  ConnectionServer http;
  ConnectionCounters own_counters;
  bool stopped = false;

  // The checks that need only the request line and headers, run before any
  // of the body is read (also for "Expect: 100-continue"). Returns the error
  // response, or nullopt when the request may proceed.
  std::optional<HttpResponse> CheckBeforeBody(const httplib::Request& req) const {
    if (local_names_only) {
      // Nothing but the Host header tells a rebinding page's request from
      // the user's own: without a token, only local names are answered.
      const std::string host = req.get_header_value("Host");
      if (!host.empty() && !IsLocalAuthority(host, listen)) {
        counters->foreign_hosts++;
        LOG_WARNING_EVERY_N_SEC(60) << "http: refusing a request for Host " << host.substr(0, 200)
                                    << " (a server without a token answers only localhost and loopback names)";
        return HttpResponse::Error(403, "Host " + host.substr(0, 200) +
                                            " is not a name of this server: without a token it answers only "
                                            "localhost, loopback addresses and its --listen host");
      }
      const std::string origin = req.get_header_value("Origin");
      if (!origin.empty() && !IsLocalAuthority(OriginAuthority(origin), listen)) {
        counters->foreign_hosts++;
        return HttpResponse::Error(403, "Origin " + origin.substr(0, 200) +
                                            " may not use this server: without a token it answers only pages of "
                                            "localhost and loopback addresses");
      }
    }
    const std::vector<Route>* candidates = RoutesFor(req.path);
    const bool needs_token =
        IsApiPath(req.path) || (candidates != nullptr && std::any_of(candidates->begin(), candidates->end(),
                                                                     [](const Route& r) { return r.needs_token; }));
    if (!options.token.empty() && needs_token) {
      const bool ok = HasToken(req);
      if (ok) ConnectionServer::NoteClientAuthenticated();
      if (!ok) {
        const std::string auth = req.get_header_value("Authorization");
        HttpResponse r = HttpResponse::Error(
            401, auth.empty() ? "missing Authorization: Bearer <token> header" : "invalid bearer token");
        r.headers.emplace_back("WWW-Authenticate", "Bearer");
        return r;
      }
    }
    if (candidates == nullptr) return HttpResponse::Error(404, "no such path: " + req.path);
    if (FindRoute(*candidates, req.method) == nullptr) {
      std::string allow;
      const bool own_head = FindRoute(*candidates, "HEAD", /*get_for_head=*/false) != nullptr;
      for (const Route& r : *candidates) {
        allow += (allow.empty() ? "" : ", ") + r.method;
        if (r.method == "GET" && !own_head) allow += ", HEAD";
      }
      HttpResponse r = HttpResponse::Error(405, "method " + req.method + " not allowed on " + req.path);
      r.headers.emplace_back("Allow", allow);
      return r;
    }
    std::string encoding = req.get_header_value("Content-Encoding");
    if (!encoding.empty() && strcasecmp(encoding.c_str(), "zstd") != 0 &&
        strcasecmp(encoding.c_str(), "identity") != 0) {
      return HttpResponse::Error(415, "unsupported Content-Encoding \"" + encoding + "\" (use zstd or none)");
    }
    auto len = ContentLength(req);
    if (len && *len < 0) return HttpResponse::Error(400, "malformed Content-Length");
    if (len && static_cast<unsigned long long>(*len) > options.max_request_bytes) {
      return HttpResponse::Error(413, "request body of " + std::to_string(*len) + " bytes exceeds the limit of " +
                                          std::to_string(options.max_request_bytes));
    }
    return std::nullopt;
  }

  // Whether the request carries the server's bearer token.
  bool HasToken(const httplib::Request& req) const {
    if (options.token.empty()) return false;
    const std::string auth = req.get_header_value("Authorization");
    constexpr std::string_view kScheme = "bearer ";
    return auth.size() > kScheme.size() && strncasecmp(auth.c_str(), kScheme.data(), kScheme.size()) == 0 &&
           ConstantTimeEquals(std::string_view(auth).substr(kScheme.size()), options.token);
  }

  // The routes of the exact path, else of the longest matching prefix.
  const std::vector<Route>* RoutesFor(const std::string& path) const {
    if (auto it = routes.find(path); it != routes.end()) return &it->second;
    // Sorted descending, so a longer prefix comes before any shorter prefix of it.
    for (const auto& [prefix, candidates] : prefix_routes) {
      if (path.compare(0, prefix.size(), prefix) == 0) return &candidates;
    }
    return nullptr;
  }

  // The lane of the route a request line names (the query lane when none
  // does: the error answer is cheap either way). I/O thread.
  size_t LaneOf(std::string_view method, std::string_view target) const {
    const std::string path(target.substr(0, target.find('?')));
    const std::vector<Route>* candidates = RoutesFor(path);
    if (candidates == nullptr) return 0;
    const Route* route = FindRoute(*candidates, method);
    return route != nullptr && route->lane == RouteLane::kIngest && options.ingest_threads > 0 ? 1 : 0;
  }

  // The route of `method`; a HEAD without a route of its own is served by
  // the GET route (httplib sends the head of its answer only).
  static const Route* FindRoute(const std::vector<Route>& candidates, std::string_view method,
                                bool get_for_head = true) {
    for (const Route& r : candidates) {
      if (r.method == method) return &r;
    }
    return get_for_head && method == "HEAD" ? FindRoute(candidates, "GET", false) : nullptr;
  }

  // Reads the body (when `reader` is given), decodes it and runs the handler.
  // CheckBeforeBody has already passed.
  HttpResponse Dispatch(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader* reader) {
    std::string raw;
    if (reader != nullptr && HasBody(req)) {
      bool too_big = false;
      // Reserve what Content-Length announces (CheckBeforeBody has capped it)
      // instead of growing the buffer chunk by chunk.
      if (auto len = ContentLength(req); len && *len > 0) {
        raw.reserve(std::min<size_t>(static_cast<size_t>(*len), options.max_request_bytes));
      }
      bool ok = (*reader)([&](const char* data, size_t n) {
        if (raw.size() + n > options.max_request_bytes) {
          too_big = true;
          return false;
        }
        raw.append(data, n);
        return true;
      });
      if (too_big) {
        ConnectionServer::CloseConnectionAfterResponse(res);
        return HttpResponse::Error(413, "request body exceeds the limit of " +
                                            std::to_string(options.max_request_bytes) + " bytes");
      }
      if (!ok) {
        ConnectionServer::CloseConnectionAfterResponse(res);
        if (ConnectionServer::BodyDeadlinePassed()) {
          return HttpResponse::Error(408, "request body not received within " +
                                              std::to_string(options.connections.body_timeout.count()) + " ms");
        }
        return HttpResponse::Error(400, "could not read the request body");
      }
    }
    HttpRequest request;
    request.method = req.method;
    request.path = req.path;
    request.authenticated = HasToken(req);
    if (req.has_header("Origin")) {
      request.local_origin = IsLocalAuthority(OriginAuthority(req.get_header_value("Origin")), listen);
    }
    // httplib 0.11 leaves '+' undecoded in req.params; parse the target ourselves.
    request.query = ParseQueryString(req.target);
    for (const auto& [name, value] : req.headers) {
      // The connection layer renamed it (response_encoding.h); handlers see it as sent.
      request.headers.emplace(strcasecmp(name.c_str(), kHiddenAcceptEncoding) == 0 ? "Accept-Encoding" : name, value);
    }
    if (strcasecmp(req.get_header_value("Content-Encoding").c_str(), "zstd") == 0) {
      StatusOr<std::string> body = DecompressZstdCapped(raw, options.max_decompressed_bytes);
      if (!body.ok()) {
        int status = body.status().code() == StatusCode::kResourceExhausted ? 413 : 400;
        return HttpResponse::Error(status, body.status().message());
      }
      request.body = std::move(body).value();
    } else {
      request.body = std::move(raw);
    }
    const Route* route = FindRoute(*RoutesFor(req.path), req.method);
    // The one place exceptions are caught: a handler should return errors as
    // responses, but one that throws must not take the server down.
    try {
      return route->handler(request);
    } catch (const std::exception& e) {
      LOG_ERROR() << "handler for " << req.method << " " << req.path << " threw: " << e.what();
    } catch (...) {
      LOG_ERROR() << "handler for " << req.method << " " << req.path << " threw a non-std exception";
    }
    return HttpResponse::Error(500, "internal error");
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options, Routes routes) {
  ASSIGN_OR_RETURN(ListenAddress addr, ParseListenAddress(options.listen));
  if (options.token.empty() && !addr.is_loopback && !options.insecure_listen_any) {
    return FailedPreconditionError("refusing to listen on non-loopback address " + options.listen +
                                   " without authentication: pass --token <secret> (agents send it as a bearer "
                                   "token), or --insecure-listen-any to accept unauthenticated requests from the "
                                   "network");
  }
  if (options.threads < 1) return InvalidArgumentError("threads must be at least 1");
  if (options.ingest_threads < 0) return InvalidArgumentError("ingest_threads must not be negative");

  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->listen = addr;
  impl->local_names_only = options.token.empty() && addr.is_loopback;
  impl->counters = options.counters != nullptr ? options.counters : &impl->own_counters;
  for (Route& r : routes) {
    if (r.path.empty() || r.path[0] != '/' || !r.handler) {
      return InvalidArgumentError("bad route \"" + r.method + " " + r.path + "\"");
    }
    const size_t star = r.path.find('*');
    const bool prefix = star != std::string::npos;
    if (prefix && star != r.path.size() - 1) {
      return InvalidArgumentError("bad route \"" + r.method + " " + r.path + "\": '*' only at the end");
    }
    std::vector<Route>& same_path =
        prefix ? impl->prefix_routes[r.path.substr(0, r.path.size() - 1)] : impl->routes[r.path];
    if (Impl::FindRoute(same_path, r.method, /*get_for_head=*/false) != nullptr) {
      return InvalidArgumentError("duplicate route " + r.method + " " + r.path);
    }
    same_path.push_back(std::move(r));
  }

  Impl* self = impl.get();
  httplib::Server& http = impl->http;
  // httplib 0.11's default also sets SO_REUSEPORT, which lets a second server
  // bind a port that is already in use; we want that to be an error.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // A backstop only: our own checks run first and are stricter.
  http.set_payload_max_length(options.max_request_bytes);

  auto reject = [](const httplib::Request& req, httplib::Response& res, const HttpResponse& error) {
    Fill(error, res);
    // The body was not read: close rather than parse it as the next request.
    if (HasBody(req)) ConnectionServer::CloseConnectionAfterResponse(res);
  };
  http.set_pre_routing_handler([self, reject](const httplib::Request& req, httplib::Response& res) {
    if (auto error = self->CheckBeforeBody(req)) {
      reject(req, res, *error);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Without this, httplib answers "100 Continue" before any check runs and
  // the client uploads a body we are about to refuse.
  http.set_expect_100_continue_handler([self, reject](const httplib::Request& req, httplib::Response& res) {
    if (auto error = self->CheckBeforeBody(req)) {
      reject(req, res, *error);
      return error->status;
    }
    return 100;
  });
  auto plain = [self](const httplib::Request& req, httplib::Response& res) {
    // GET/HEAD/OPTIONS bodies are never read by httplib.
    if (HasBody(req)) ConnectionServer::CloseConnectionAfterResponse(res);
    HttpResponse r = self->Dispatch(req, res, nullptr);
    EncodeResponseBody(req.get_header_value(kHiddenAcceptEncoding), &r);
    Fill(r, res);
  };
  auto with_body = [self](const httplib::Request& req, httplib::Response& res,
                          const httplib::ContentReader& reader) {
    HttpResponse r = self->Dispatch(req, res, &reader);
    EncodeResponseBody(req.get_header_value(kHiddenAcceptEncoding), &r);
    Fill(r, res);
  };
  const std::string any = ".*";
  http.Get(any, plain).Options(any, plain);
  http.Post(any, with_body).Put(any, with_body).Patch(any, with_body).Delete(any, with_body);
  // Errors httplib produces itself (a malformed request line or header, a
  // bad Range) get the same JSON shape as ours, and close the connection:
  // what follows a request httplib could not parse is not parsed on.
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        ConnectionServer::CloseConnectionAfterResponse(res);
        Fill(HttpResponse::Error(res.status, "request rejected by the HTTP layer"), res);
        return httplib::Server::HandlerResponse::Handled;
      }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    Fill(HttpResponse::Error(500, "internal error"), res);
  });

  int port = addr.port;
  errno = 0;
  bool bound = port == 0 ? (port = http.bind_to_any_port(addr.host)) > 0 : http.bind_to_port(addr.host, port);
  if (!bound) {
    int err = errno;
    std::string why = err == EADDRINUSE      ? "the address is already in use"
                      : err == EADDRNOTAVAIL ? "the address does not belong to this host"
                      : err == EACCES        ? "permission denied"
                      : err != 0             ? std::strerror(err)
                                             : "bind failed";
    return UnavailableError("cannot listen on " + options.listen + ": " + why);
  }

  ConnectionCounters* counters = self->counters;
  std::vector<int> lanes = {options.threads};
  if (options.ingest_threads > 0) lanes.push_back(options.ingest_threads);
  RETURN_IF_ERROR(self->http.Serve(
      options.connections, lanes,
      [self](std::string_view method, std::string_view target) { return self->LaneOf(method, target); }, counters));

  std::unique_ptr<HttpServer> server(new HttpServer(std::move(impl)));
  server->port_ = port;
  server->counters_ = counters;
  return server;
}

void HttpServer::Stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  // Stops accepting; requests already read are served and answered before
  // the threads are joined.
  impl_->http.Shutdown();
}

}  // namespace warpscope::http
