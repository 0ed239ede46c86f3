// ConnectionServer: httplib::Server with our own per-connection loop, so a
// request rejected before its body was read (401, 404, 413 by Content-Length,
// an over-long chunked body) can close the connection instead of parsing the
// unread body as the next request. cpp-httplib 0.11 gives handlers no way to
// do that: its loop only closes on the *request's* "Connection: close", and
// for an oversized Content-Length it reads and discards the whole body.
//
// Threading: ProcessConnection runs on the httplib worker-pool threads, one
// connection per thread at a time; CloseConnectionAfterResponse() is called
// from request handlers on that same thread.
#pragma once

#include <httplib.h>

namespace warpscope::server {

class ConnectionServer : public httplib::Server {
 public:
  // Marks the connection being served on the calling worker thread to be
  // closed once the current response is written. Adds "Connection: close" to
  // `res` so well-behaved clients do not reuse it.
  static void CloseConnectionAfterResponse(httplib::Response& res);

  // httplib 0.11 listens with a backlog of 5 (compiled into the library), so
  // a burst of agents connecting at once overflows the accept queue. Call
  // after binding, before serving; listen(2) on a listening socket only
  // updates the backlog.
  void RaiseListenBacklog(int backlog);

 private:
  // Overrides httplib's private virtual: keep-alive loop, then close.
  bool process_and_close_socket(socket_t sock) override;
};

}  // namespace warpscope::server
