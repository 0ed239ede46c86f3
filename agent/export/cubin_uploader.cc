#include "agent/export/cubin_uploader.h"

#include "base/http/zstd_body.h"
#include "base/logging.h"

namespace warpscope {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kCubinsPath[] = "/api/v1/gpu/cubins/";
constexpr size_t kMaxLoggedMessages = 64;
constexpr int kZstdLevel = 3;

}  // namespace

StatusOr<std::unique_ptr<CubinUploader>> CubinUploader::Create(CubinUploaderOptions options) {
  const std::string& url = options.server.server_url;
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    return InvalidArgumentError("server URL must start with http:// or https://, got '" + url + "'");
  }
  return std::unique_ptr<CubinUploader>(new CubinUploader(std::move(options)));
}

CubinUploader::CubinUploader(CubinUploaderOptions options)
    : options_(std::move(options)), jitter_(options_.jitter_seed ? options_.jitter_seed : std::random_device()()) {}

CubinUploader::~CubinUploader() { Stop(); }

void CubinUploader::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { ThreadMain(); });
}

void CubinUploader::PostCubinFromAnyThread(const WindowCubin& cubin) {
  if (cubin.bytes == nullptr) return;
  {
    std::lock_guard lock(mu_);
    if (known_.count(cubin.hash)) return;
    ++stats_.posted;
    if (stats_.queued_bytes + cubin.bytes->size() > options_.max_queued_bytes || stopping_) {
      ++stats_.dropped;
      LOG_WARNING_EVERY_N_SEC(60) << "cubin " << cubin.hash << " (" << cubin.bytes->size()
                                  << " bytes) not uploaded: " << stats_.queued_bytes
                                  << " bytes of cubins wait for the server already (counted in cubin_uploads_dropped)";
      return;
    }
    known_.insert(cubin.hash);
    queue_.push_back(cubin);
    stats_.queued_bytes += cubin.bytes->size();
  }
  cv_.notify_one();
}

CubinUploaderStats CubinUploader::StatsFromAnyThread() const {
  std::lock_guard lock(mu_);
  CubinUploaderStats s = stats_;
  s.queued = queue_.size();
  return s;
}

void CubinUploader::Stop() {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      stopping_ = true;
      shutdown_deadline_ = Clock::now() + options_.shutdown_timeout;
      abort_at_ns_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(shutdown_deadline_.time_since_epoch())
                             .count());
    }
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  if (!queue_.empty()) {
    LOG_WARNING() << queue_.size() << " cubins were not uploaded before the agent stopped";
    stats_.dropped += queue_.size();
    while (!queue_.empty()) PopFrontLocked();
  }
}

void CubinUploader::PopFrontLocked() {
  stats_.queued_bytes -= queue_.front().bytes->size();
  queue_.pop_front();
}

void CubinUploader::RememberLocked(const std::string& hash) {
  done_order_.push_back(hash);
  while (done_order_.size() > options_.max_remembered) {
    known_.erase(done_order_.front());
    done_order_.pop_front();
  }
}

CubinUploader::Result CubinUploader::Upload(ServerConnection& connection, const WindowCubin& cubin,
                                            ServerAnswer* answer) {
  const std::string path = kCubinsPath + cubin.hash;
  *answer = connection.Head(path);
  if (answer->outcome == UploadOutcome::kAccepted) return Result::kAlreadyStored;
  if (answer->http_status != 404) return answer->outcome == UploadOutcome::kRejected ? Result::kRejected : Result::kRetry;
  StatusOr<std::string> body = http::CompressZstd(*cubin.bytes, kZstdLevel);
  if (!body.ok()) {
    *answer = ServerAnswer{UploadOutcome::kRejected, 0, body.status().message(), {}};
    return Result::kRejected;
  }
  *answer = connection.Send("PUT", path, "application/octet-stream", *body);
  switch (answer->outcome) {
    case UploadOutcome::kAccepted: return answer->http_status == 201 ? Result::kUploaded : Result::kAlreadyStored;
    case UploadOutcome::kRejected: return Result::kRejected;
    case UploadOutcome::kRetry:
    case UploadOutcome::kAuthRetry: break;
  }
  return Result::kRetry;
}

void CubinUploader::HandleResultLocked(const WindowCubin& cubin, Result result, const ServerAnswer& answer) {
  if (result == Result::kRetry) {
    ++stats_.failures;
    if (consecutive_failures_++ == 0) {
      LOG_WARNING() << "uploading cubin " << cubin.hash << " failed ("
                    << (answer.http_status ? "HTTP " + std::to_string(answer.http_status) + ": " : std::string())
                    << answer.message << "); it and the cubins after it are retried with backoff";
    }
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    auto delay = BackoffDelay(options_.initial_backoff, options_.max_backoff, consecutive_failures_, unit(jitter_));
    if (answer.retry_after > delay) delay = std::min(answer.retry_after, options_.max_backoff);
    retry_at_ = Clock::now() + delay;
    return;  // the cubin stays at the head
  }
  consecutive_failures_ = 0;
  switch (result) {
    case Result::kUploaded: ++stats_.uploaded; break;
    case Result::kAlreadyStored: ++stats_.already_stored; break;
    case Result::kRejected: {
      ++stats_.rejected;
      const std::string message = "the server refused a cubin (HTTP " + std::to_string(answer.http_status) + "): " +
                                  answer.message + "; such cubins are dropped";
      if (!logged_.count(message) && logged_.size() < kMaxLoggedMessages) {
        logged_.insert(message);
        LOG_WARNING() << message;
      }
      break;
    }
    case Result::kRetry: break;
  }
  PopFrontLocked();
  RememberLocked(cubin.hash);
}

void CubinUploader::ThreadMain() {
  ServerConnection connection(options_.server, &abort_at_ns_);
  std::unique_lock lock(mu_);
  for (;;) {
    if (stopping_) {
      // At shutdown, only while the server answers and the deadline allows.
      if (queue_.empty() || consecutive_failures_ > 0 || Clock::now() >= shutdown_deadline_) break;
    } else if (queue_.empty()) {
      cv_.wait(lock);
      continue;
    } else if (Clock::now() < retry_at_) {
      cv_.wait_until(lock, retry_at_);
      continue;
    }
    const WindowCubin cubin = queue_.front();
    lock.unlock();
    ServerAnswer answer;
    const Result result = Upload(connection, cubin, &answer);
    lock.lock();
    HandleResultLocked(cubin, result, answer);
  }
}

}  // namespace warpscope
