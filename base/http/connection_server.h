// ConnectionServer: httplib::Server's request parsing and routing under a
// connection layer of our own, built so that nobody can take the server down
// before authenticating (docs/design/server.md, "Connections"):
//
//   * One I/O thread ("http-io", epoll) owns every connection that is not
//     being served: it accepts, enforces the connection limits (in all and
//     per client address), and reads each request's head into a bounded
//     buffer (request_head.h: size, line and count limits, 431/414/400) with
//     a deadline (408). A slow or idle client therefore costs one fd and at
//     most one head's bytes, never a worker.
//   * When every connection slot is taken, a new connection evicts the
//     oldest one still waiting for its (first) head rather than be refused;
//     clients that authenticated before are never evicted for others, so a
//     flood of half-sent heads from many addresses cannot lock agents out.
//   * Only a complete head goes to a worker, of the *lane* its route names
//     (e.g. ingest and /healthz apart from queries), each lane its own pool
//     with a bounded queue (503 when full): queries can never hold the
//     workers that ingest needs.
//   * A worker runs httplib's process_request over the buffered head; the
//     body must arrive, and the response be written, within a deadline. A
//     kept-alive connection then goes back to the I/O thread; after any
//     parse error httplib answers itself, or a handler's
//     CloseConnectionAfterResponse, it is closed (lingering briefly so the
//     client can read the answer), never parsed on.
//
// Threading: Serve() and Shutdown() belong to the owning thread.
// CloseConnectionAfterResponse() and BodyDeadlinePassed() are called from
// request handlers on the worker thread serving that request. Counters are
// atomics, readable from any thread.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/http/connection_limits.h"

namespace warpscope::http {

class ConnectionServer : public httplib::Server {
 public:
  // The lane (index into Serve's lane_threads) of a request, from its
  // method and target (path and query string, as sent).
  using LaneOf = std::function<size_t(std::string_view method, std::string_view target)>;

  ConnectionServer();
  ~ConnectionServer() override;  // Shutdown()s

  // After bind_to_port: starts the I/O thread and one pool per lane
  // (lane_threads[i] workers, each >= 1). `counters` must outlive the server.
  Status Serve(const ConnectionLimits& limits, std::vector<int> lane_threads, LaneOf lane_of,
               ConnectionCounters* counters);
  // Stops accepting, serves the requests whose heads are already read and
  // lets the ones being handled finish, closes every connection and joins
  // all threads. Idempotent.
  void Shutdown();

  // Marks the connection being served on the calling worker thread to be
  // closed once the current response is written. Adds "Connection: close" to
  // `res` so well-behaved clients do not reuse it.
  static void CloseConnectionAfterResponse(httplib::Response& res);
  // On the worker thread, after a body read failed: whether it failed
  // because the request's body deadline passed.
  static bool BodyDeadlinePassed();
  // On the worker thread: the request being served carried valid
  // credentials, so its client address goes in the table of authenticated
  // clients, whose connections a full server keeps over others'.
  static void NoteClientAuthenticated();

 private:
  struct Impl;
  struct Connection;
  // Runs httplib's parser and handlers for one request whose head is in the
  // stream's buffer; worker thread.
  bool ServeOneRequest(httplib::Stream& stream, bool last, bool& connection_closed);
  // httplib's accept loop is not used (Serve runs our own); never called.
  bool process_and_close_socket(socket_t sock) override;

  std::unique_ptr<Impl> impl_;
};

}  // namespace warpscope::http
