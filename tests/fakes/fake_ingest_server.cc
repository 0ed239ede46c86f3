#include "tests/fakes/fake_ingest_server.h"

#include "base/logging.h"

namespace warpscope::testing {

FakeIngestServer::FakeIngestServer() {
  http::HttpServerOptions options;
  options.listen = "127.0.0.1:0";
  http::Routes routes = {{"POST", "/api/v1/ingest", [this](const http::HttpRequest& r) { return Handle(r); }}};
  auto started = http::HttpServer::Start(options, std::move(routes));
  CHECK(started.ok()) << started.status().ToString();
  server_ = std::move(started).value();
}

FakeIngestServer::~FakeIngestServer() {
  Unblock();
  server_->Stop();
}

void FakeIngestServer::Script(std::vector<int> statuses) {
  std::lock_guard lock(mu_);
  script_.assign(statuses.begin(), statuses.end());
}

void FakeIngestServer::SetDefaultStatus(int status) {
  std::lock_guard lock(mu_);
  default_status_ = status;
}

void FakeIngestServer::Block() {
  std::lock_guard lock(mu_);
  blocked_ = true;
}

void FakeIngestServer::Unblock() {
  {
    std::lock_guard lock(mu_);
    blocked_ = false;
  }
  cv_.notify_all();
}

http::HttpResponse FakeIngestServer::Handle(const http::HttpRequest& r) {
  std::unique_lock lock(mu_);
  Request req;
  req.at = std::chrono::steady_clock::now();
  req.authorization = r.Header("Authorization").value_or("");
  req.content_type = r.Header("Content-Type").value_or("");
  req.content_encoding = r.Header("Content-Encoding").value_or("");
  req.parsed = req.batch.ParseFromString(r.body);
  cv_.wait(lock, [&] { return !blocked_; });
  int status = default_status_;
  if (!script_.empty()) {
    status = script_.front();
    script_.pop_front();
  }
  if (!req.parsed) status = 400;
  const bool store = status == kStoreThenLoseAck || (status >= 200 && status < 300);
  if (store) {
    uint64_t& highest = highest_[req.batch.agent_id()];
    req.duplicate = req.batch.sequence() <= highest;
    if (!req.duplicate) {
      highest = req.batch.sequence();
      stored_.push_back(req.batch.sequence());
    }
  }
  if (status == kStoreThenLoseAck) status = 503;
  req.answered = status;
  requests_.push_back(req);
  cv_.notify_all();
  if (status >= 200 && status < 300) {
    return http::HttpResponse::Json(200, req.duplicate ? R"({"status":"duplicate"})" : R"({"status":"stored"})");
  }
  return http::HttpResponse::Error(status, "scripted " + std::to_string(status));
}

std::vector<FakeIngestServer::Request> FakeIngestServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

std::vector<uint64_t> FakeIngestServer::request_sequences() const {
  std::lock_guard lock(mu_);
  std::vector<uint64_t> out;
  for (const Request& r : requests_) out.push_back(r.batch.sequence());
  return out;
}

std::vector<uint64_t> FakeIngestServer::stored_sequences() const {
  std::lock_guard lock(mu_);
  return stored_;
}

bool FakeIngestServer::WaitForStored(size_t count, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return stored_.size() >= count; });
}

bool FakeIngestServer::WaitForRequests(size_t count, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return requests_.size() >= count; });
}

}  // namespace warpscope::testing
