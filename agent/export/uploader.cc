#include "agent/export/uploader.h"

#include <algorithm>

#include "base/logging.h"

namespace warpscope {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxLoggedMessages = 64;

int64_t SteadyNanos(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

StatusOr<std::unique_ptr<Uploader>> Uploader::Create(UploaderOptions options) {
  const std::string& url = options.server.server_url;
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    return InvalidArgumentError("server URL must start with http:// or https://, got '" + url + "'");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Spool> spool, Spool::Open(options.spool_dir, options.spool_max_bytes));
  return std::unique_ptr<Uploader>(new Uploader(std::move(options), std::move(spool)));
}

Uploader::Uploader(UploaderOptions options, std::unique_ptr<Spool> spool)
    : options_(std::move(options)),
      spool_(std::move(spool)),
      jitter_(options_.jitter_seed ? options_.jitter_seed : std::random_device()()) {
  std::lock_guard lock(mu_);
  SyncSpoolStatsLocked();
  if (!spool_->Empty()) {
    LOG_INFO() << spool_->size() << " batches (" << spool_->bytes() << " bytes) waiting in the spool "
               << spool_->dir() << " are sent first";
  }
}

Uploader::~Uploader() { Stop(); }

std::optional<uint64_t> Uploader::newest_spooled_sequence() const {
  std::lock_guard lock(mu_);
  return spool_->newest_sequence();
}

void Uploader::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { ThreadMain(); });
}

void Uploader::PostBatch(uint64_t sequence, std::string body) {
  std::lock_guard lock(mu_);
  ++stats_.batches_posted;
  DCHECK(queue_.empty() || queue_.back().sequence < sequence) << "sequences must increase";
  queued_bytes_ += body.size();
  queue_.push_back({sequence, std::make_shared<const std::string>(std::move(body))});
  // Every batch goes to disk as it is made, so a crash (kill -9, OOM) loses
  // none that was made; the thread sends it from there. What the disk does
  // not take stays in memory, bounded.
  SpoolQueueLocked(/*drop_oversized=*/stopping_ || !thread_.joinable());
  if (!queue_.empty() && queue_.back().sequence == sequence) ++stats_.batches_unspooled;
  if (QueueOverLocked()) {
    // The spool failed too (disk full or broken): drop the newest.
    queued_bytes_ -= queue_.back().body->size();
    queue_.pop_back();
    ++stats_.batches_dropped;
    LOG_WARNING() << "upload queue full and the spool unusable: batch " << sequence << " dropped";
  }
  cv_.notify_one();
}

UploaderStats Uploader::StatsFromAnyThread() const {
  std::lock_guard lock(mu_);
  UploaderStats s = stats_;
  s.queued = queue_.size();
  s.spooled = spool_->size();
  s.queued_bytes = queued_bytes_;
  s.max_queued_bytes = options_.max_queued_bytes;
  s.spooled_bytes = spool_->bytes();
  s.spool_max_bytes = spool_->max_bytes();
  return s;
}

void Uploader::Stop() {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      stopping_ = true;
      shutdown_deadline_ = Clock::now() + options_.shutdown_timeout;
      abort_at_ns_.store(SteadyNanos(shutdown_deadline_));
    }
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  SpoolQueueLocked(/*drop_oversized=*/true);  // without a thread (never started), or what the thread could not spool
  if (!queue_.empty()) {
    LOG_WARNING() << queue_.size() << " batches could be neither sent nor spooled and are lost";
    stats_.batches_dropped += queue_.size();
    queue_.clear();
    queued_bytes_ = 0;
  }
}

void Uploader::SyncSpoolStatsLocked() {
  const SpoolStats& s = spool_->stats();
  const uint64_t dropped = s.dropped_batches + s.corrupt_dropped;
  if (dropped > stats_.spool_dropped_batches) {
    LOG_WARNING() << "spool " << spool_->dir() << " dropped " << dropped - stats_.spool_dropped_batches
                  << " batches (oldest first; full at " << spool_->max_bytes() << " bytes, or corrupt); "
                  << dropped << " since start";
  }
  stats_.spool_dropped_batches = dropped;
}

void Uploader::SpoolQueueLocked(bool drop_oversized) {
  while (!queue_.empty()) {
    const QueuedBatch& batch = queue_.front();
    if (!drop_oversized && batch.body->size() + kSpoolHeaderSize > spool_->max_bytes()) {
      // Larger than the whole spool: sent from memory while the server
      // answers (newer batches wait behind it, in order).
      break;
    }
    Status s = spool_->Push(batch.sequence, *batch.body);
    if (s.ok()) {
      ++stats_.batches_spooled;
      spool_error_logged_ = false;
    } else if (s.code() == StatusCode::kResourceExhausted) {
      // Larger than the whole spool: counted as dropped by the spool itself.
      LOG_WARNING() << "batch " << batch.sequence << " does not fit in the spool: " << s.message();
    } else if (s.code() == StatusCode::kInvalidArgument) {
      // Not newer than the spool's newest: impossible by construction (the
      // queue is always newer than the spool); dropping beats looping.
      LOG_ERROR() << "batch " << batch.sequence << " out of order for the spool: " << s.message();
      ++stats_.batches_dropped;
    } else {
      // Disk error (full, failing): keep this batch and the newer ones in
      // memory, in order, and try the disk again later. PostBatch bounds the
      // queue and counts what it cannot keep.
      if (!spool_error_logged_) {
        LOG_WARNING() << "spooling failed, up to " << options_.max_queued_batches
                      << " batches stay in memory and newer ones are dropped (counted in upload_batches_dropped) "
                         "until the disk takes them: "
                      << s.message();
      }
      spool_error_logged_ = true;
      break;
    }
    PopFrontLocked();
  }
  SyncSpoolStatsLocked();
}

bool Uploader::QueueOverLocked() const {
  return queue_.size() > options_.max_queued_batches || (queue_.size() > 1 && queued_bytes_ > options_.max_queued_bytes);
}

void Uploader::PopFrontLocked() {
  queued_bytes_ -= queue_.front().body->size();
  queue_.pop_front();
}

void Uploader::RemoveHeadLocked(uint64_t sequence) {
  if (!queue_.empty() && queue_.front().sequence == sequence) {
    PopFrontLocked();
    return;
  }
  // The head was in the spool (or moved there by PostBatch while in flight).
  if (!spool_->Empty()) {
    if (Status s = spool_->Pop(sequence); !s.ok()) LOG_DEBUG() << "spool pop " << sequence << ": " << s.message();
  }
  SyncSpoolStatsLocked();
}

void Uploader::LogOnceLocked(const std::string& message) {
  if (logged_messages_.count(message)) {
    LOG_DEBUG() << message;
    return;
  }
  if (logged_messages_.size() < kMaxLoggedMessages) logged_messages_.insert(message);
  LOG_WARNING() << message;
}

void Uploader::HandleResultLocked(const QueuedBatch& head, const ServerAnswer& r) {
  stats_.last_http_status = static_cast<int>(r.http_status);
  switch (r.outcome) {
    case UploadOutcome::kAccepted:
      if (stats_.consecutive_failures > 0) {
        LOG_INFO() << "server " << options_.server.server_url << " answers again after " << stats_.consecutive_failures
                   << " failed attempts; " << spool_->size() << " spooled batches to send";
      }
      ++stats_.batches_sent;
      stats_.consecutive_failures = 0;
      stats_.current_backoff = std::chrono::milliseconds(0);
      backing_off_ = false;
      RemoveHeadLocked(head.sequence);
      return;
    case UploadOutcome::kRejected:
      // Sending the same bytes again cannot help: drop it, keep going.
      ++stats_.batches_rejected;
      LogOnceLocked("server rejected a batch (HTTP " + std::to_string(r.http_status) + "): " + r.message +
                    "; such batches are dropped" +
                    (r.http_status == 413 ? " (the server takes smaller requests than --upload-max-batch-bytes: "
                                            "lower it below the server's --max-request-bytes)"
                                          : ""));
      RemoveHeadLocked(head.sequence);
      return;
    case UploadOutcome::kAuthRetry:
      ++stats_.auth_failures;
      LogOnceLocked("server refused the agent's credentials (HTTP " + std::to_string(r.http_status) + ": " +
                    r.message + "); check --token/--token-file. Batches are spooled and retried");
      break;
    case UploadOutcome::kRetry:
      if (stats_.consecutive_failures == 0) {
        LOG_WARNING() << "upload to " << options_.server.server_url << kIngestPath << " failed ("
                      << (r.http_status ? "HTTP " + std::to_string(r.http_status) + ": " : std::string())
                      << r.message << "); spooling batches and retrying with backoff";
      } else {
        LOG_DEBUG() << "upload retry failed: " << r.http_status << " " << r.message;
      }
      break;
  }
  ++stats_.send_failures;
  ++stats_.consecutive_failures;
  // The failed batch leads the spool; newer ones follow it there.
  if (!queue_.empty() && queue_.front().sequence == head.sequence) SpoolQueueLocked(/*drop_oversized=*/true);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto delay = BackoffDelay(options_.initial_backoff, options_.max_backoff, stats_.consecutive_failures,
                            unit(jitter_));
  if (r.retry_after > delay) delay = std::min<std::chrono::milliseconds>(r.retry_after, options_.max_backoff);
  stats_.current_backoff = delay;
  backing_off_ = true;
  retry_at_ = Clock::now() + delay;
}

void Uploader::ThreadMain() {
  ServerConnection connection(options_.server, &abort_at_ns_);
  std::unique_lock lock(mu_);
  for (;;) {
    // Keep the order: once anything is spooled, queued batches go behind it
    // (those the disk refused stay in memory, in order).
    SpoolQueueLocked(/*drop_oversized=*/backing_off_);
    if (stopping_) {
      // At shutdown, send while the server answers, up to the deadline; the
      // rest stays in the spool for the next start.
      if (backing_off_ || Clock::now() >= shutdown_deadline_) {
        SpoolQueueLocked(/*drop_oversized=*/true);
        break;
      }
      if (queue_.empty() && spool_->Empty()) break;
    } else if (backing_off_ && Clock::now() < retry_at_) {
      cv_.wait_until(lock, retry_at_);
      continue;
    }

    QueuedBatch head;
    if (!spool_->Empty()) {
      StatusOr<std::optional<SpooledBatch>> peeked = spool_->Peek();
      SyncSpoolStatsLocked();
      if (!peeked.ok()) {
        LogOnceLocked("reading the spool failed: " + peeked.status().message());
        HandleResultLocked({}, ServerAnswer{UploadOutcome::kRetry, 0, "spool read error", {}});
        continue;
      }
      if (!peeked->has_value()) continue;  // every file was corrupt, now deleted
      head.sequence = (*peeked)->sequence;
      head.body = std::make_shared<const std::string>(std::move((*peeked)->data));
    } else if (!queue_.empty()) {
      head = queue_.front();
    } else {
      cv_.wait(lock);
      continue;
    }

    lock.unlock();
    const ServerAnswer result = connection.Send("POST", kIngestPath, "application/x-protobuf", *head.body);
    lock.lock();
    HandleResultLocked(head, result);
  }
}

}  // namespace warpscope
