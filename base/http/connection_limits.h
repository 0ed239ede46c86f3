// The connection layer's limits and counters (connection_server.h), apart
// from httplib so that HttpServer's users can set and read them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "base/http/request_head.h"

namespace warpscope::http {

struct ConnectionLimits {
  RequestHeadLimits head;
  // A request's head must be complete this long after its first byte (408).
  std::chrono::milliseconds header_timeout{10'000};
  // A connection with no request in progress (new, or kept alive between
  // requests) is closed after this long without a byte.
  std::chrono::milliseconds idle_timeout{5'000};
  // Once its head is in, a request's body must be read within this (408),
  // and its response written within this again.
  std::chrono::milliseconds body_timeout{60'000};
  // Open connections, and open connections from one client address; over
  // either a new connection gets 503 and is closed.
  size_t max_connections = 4096;
  size_t max_connections_per_client = 256;
  // Client addresses remembered as having sent valid credentials (the
  // oldest is forgotten past this); their connections are evicted last.
  size_t max_authenticated_clients = 65'536;
  // Requests with a complete head waiting for a worker, per lane (503 past it).
  size_t max_queued_per_lane = 256;
  // A kept-alive connection is closed after this many requests.
  size_t max_requests_per_connection = 100;
};

// What the connection layer refused or closed, since start.
struct ConnectionCounters {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused_connections{0};  // over max_connections or max_connections_per_client
  // Closed to make room for a new connection when max_connections were open:
  // the oldest still waiting for a head, never one of an authenticated
  // client for an unauthenticated one.
  std::atomic<uint64_t> evicted_waiting_heads{0};
  std::atomic<uint64_t> heads_too_large{0};      // 431
  std::atomic<uint64_t> uris_too_long{0};        // 414
  std::atomic<uint64_t> malformed_heads{0};      // 400 before parsing
  std::atomic<uint64_t> header_timeouts{0};      // 408: the head did not arrive in time
  std::atomic<uint64_t> body_timeouts{0};        // the body or the response missed its deadline
  std::atomic<uint64_t> idle_closed{0};          // idle connections closed after idle_timeout
  std::atomic<uint64_t> queue_full{0};           // 503: every worker of the lane busy and its queue full
  std::atomic<uint64_t> requests{0};             // heads handed to a worker
  // 403 on a tokenless loopback server: a Host or Origin that names neither
  // localhost, a loopback address nor --listen's host (DNS rebinding).
  std::atomic<uint64_t> foreign_hosts{0};
};

}  // namespace warpscope::http
