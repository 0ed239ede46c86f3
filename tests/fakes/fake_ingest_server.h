// A scripted stand-in for warpscope-server's POST /api/v1/ingest, for the
// uploader's tests: the real HTTP core (base/http/http_server.h, which checks
// sizes and decompresses zstd) with a handler that records every request and
// answers what the test scripts. It keeps the server's idempotency rule: a
// batch whose sequence is <= the highest stored for its agent is a duplicate,
// answered 200 and not stored again. And its cubin store, for the cubin
// uploader's tests: HEAD and PUT /api/v1/gpu/cubins/<hash> (the body checked
// against the hash), or one scripted status for every cubin request.
//
// Threading: handlers run on the server's threads; every method is thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "proto/warpscope/v1/ingest.pb.h"
#include "base/http/http_server.h"

namespace warpscope::testing {

class FakeIngestServer {
 public:
  // Store the batch, then answer 503 as if the answer got lost on the way.
  static constexpr int kStoreThenLoseAck = -1;

  struct Request {
    std::chrono::steady_clock::time_point at;
    std::string authorization;
    std::string content_type;
    std::string content_encoding;
    bool parsed = false;
    v1::IngestBatch batch;  // decoded body (the HTTP core already undid zstd)
    int answered = 0;
    bool duplicate = false;
  };

  struct CubinRequest {
    std::string method;  // HEAD or PUT
    std::string hash;
    std::string authorization;
    std::string content_encoding;
    int answered = 0;
  };

  FakeIngestServer();
  ~FakeIngestServer();

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  // Answers for the next requests, in order; 200 once they are used up.
  void Script(std::vector<int> statuses);
  // Every answer from now on (instead of 200 after the script).
  void SetDefaultStatus(int status);
  // While blocked, requests wait in the handler (a stuck server).
  void Block();
  void Unblock();

  // Every cubin request from now on gets `status`; 0: the store's answers.
  void SetCubinStatus(int status);
  // As if another agent had uploaded it.
  void StoreCubin(const std::string& hash, const std::string& bytes);
  std::vector<CubinRequest> cubin_requests() const;
  std::map<std::string, std::string> cubins() const;  // hash -> bytes
  bool WaitForCubinRequests(size_t count, std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;

  std::vector<Request> requests() const;
  std::vector<uint64_t> request_sequences() const;
  std::vector<uint64_t> stored_sequences() const;
  // Waits until `count` batches are stored (false on timeout).
  bool WaitForStored(size_t count, std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;
  bool WaitForRequests(size_t count, std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;

 private:
  http::HttpResponse Handle(const http::HttpRequest& request);
  http::HttpResponse HandleCubin(const http::HttpRequest& request);

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::deque<int> script_;
  int default_status_ = 200;
  bool blocked_ = false;
  std::vector<Request> requests_;
  std::vector<uint64_t> stored_;
  std::map<std::string, uint64_t> highest_;  // agent id -> highest stored sequence
  int cubin_status_ = 0;
  std::vector<CubinRequest> cubin_requests_;
  std::map<std::string, std::string> cubins_;
  std::unique_ptr<http::HttpServer> server_;
};

}  // namespace warpscope::testing
