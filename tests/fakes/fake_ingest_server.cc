#include "tests/fakes/fake_ingest_server.h"

#include "base/logging.h"
#include "model/cubin_hash.h"

namespace warpscope::testing {
namespace {

constexpr char kCubinsPath[] = "/api/v1/gpu/cubins/";

}  // namespace

FakeIngestServer::FakeIngestServer() {
  http::HttpServerOptions options;
  options.listen = "127.0.0.1:0";
  auto cubin = [this](const http::HttpRequest& r) { return HandleCubin(r); };
  http::Routes routes = {{"POST", "/api/v1/ingest", [this](const http::HttpRequest& r) { return Handle(r); }},
                         {"PUT", std::string(kCubinsPath) + "*", cubin},
                         {"GET", std::string(kCubinsPath) + "*", cubin}};
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

http::HttpResponse FakeIngestServer::HandleCubin(const http::HttpRequest& r) {
  std::lock_guard lock(mu_);
  CubinRequest req;
  req.method = r.method;
  req.hash = r.path.substr(sizeof(kCubinsPath) - 1);
  req.authorization = r.Header("Authorization").value_or("");
  req.content_encoding = r.Header("Content-Encoding").value_or("");
  const bool held = cubins_.count(req.hash) > 0;
  if (cubin_status_ != 0) {
    req.answered = cubin_status_;
  } else if (r.method == "PUT") {
    req.answered = CubinHash(r.body) != req.hash ? 400 : held ? 200 : 201;
    if (req.answered == 201) cubins_[req.hash] = r.body;
  } else {
    req.answered = held ? 200 : 404;
  }
  cubin_requests_.push_back(req);
  cv_.notify_all();
  if (req.answered >= 300) return http::HttpResponse::Error(req.answered, "scripted " + std::to_string(req.answered));
  return http::HttpResponse::Json(req.answered, "{}");
}

void FakeIngestServer::SetCubinStatus(int status) {
  std::lock_guard lock(mu_);
  cubin_status_ = status;
}

void FakeIngestServer::StoreCubin(const std::string& hash, const std::string& bytes) {
  std::lock_guard lock(mu_);
  cubins_[hash] = bytes;
}

std::vector<FakeIngestServer::CubinRequest> FakeIngestServer::cubin_requests() const {
  std::lock_guard lock(mu_);
  return cubin_requests_;
}

std::map<std::string, std::string> FakeIngestServer::cubins() const {
  std::lock_guard lock(mu_);
  return cubins_;
}

bool FakeIngestServer::WaitForCubinRequests(size_t count, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return cubin_requests_.size() >= count; });
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
