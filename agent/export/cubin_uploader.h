// CubinUploader: sends each cubin the agent receives to warpscope-server's
// cubin store, once (docs/design/gpu_pc.md, "Cubins on the server"; the API
// in docs/api.md, "Cubins"):
//
//   HEAD <server>/api/v1/gpu/cubins/<hash>   200: the server has it (another agent sent it): done
//                                            404: PUT it
//   PUT  <server>/api/v1/gpu/cubins/<hash>   the bytes, zstd, application/octet-stream:
//                                            201 stored, 200 the server had it: done
//
// Answers are read as the batches' are (ClassifyHttpStatus,
// server_connection.h): 413 and the other 4xx are for good (the cubin is
// dropped, counted, and the message logged once); 507 (the server's cubin
// store is full), 5xx, 408/425/429, 401/403 and network errors keep it at
// the head of the queue and retry after a backoff (BackoffDelay, Retry-After
// honoured up to max_backoff), so a server that is down gets the cubins
// once it is back, within the queue's bound.
//
// Bounds: the queue holds at most max_queued_bytes of cubins (their bytes
// are shared with the collector's copy, so what the queue adds is pointers
// and one compressed body in flight); a cubin past it is dropped and
// counted. A hash is sent once per agent life: those done (sent, found on
// the server, or refused for good) and those queued are remembered, up to
// max_remembered, the oldest forgotten first (a repeat then costs a HEAD).
//
// Threading: PostCubinFromAnyThread and StatsFromAnyThread from any thread;
// Start and Stop from the owning thread. The uploader thread owns its
// ServerConnection; the queue, the remembered hashes and the stats are
// guarded by mu_, never held across a request.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>

#include "agent/export/server_connection.h"
#include "agent/pipeline/window.h"
#include "base/status.h"

namespace warpscope {

struct CubinUploaderOptions {
  ServerConnectionOptions server;
  uint64_t max_queued_bytes = uint64_t{256} << 20;
  size_t max_remembered = 65536;
  std::chrono::milliseconds initial_backoff{1000};
  // Cubins are not urgent: a full store or a server that is down is asked
  // again at most this often.
  std::chrono::milliseconds max_backoff{60000};
  // At Stop(), how long the cubins still queued may take to send; the rest
  // is dropped and counted (the libraries sent them once, the agent's next
  // life gets them only from processes that load them again).
  std::chrono::milliseconds shutdown_timeout{5000};
  uint64_t jitter_seed = 0;  // 0: seeded from std::random_device
};

struct CubinUploaderStats {
  uint64_t posted = 0;          // new cubins handed over
  uint64_t uploaded = 0;        // stored by the server (PUT answered 201)
  uint64_t already_stored = 0;  // the server had them (HEAD 200, or PUT 200)
  uint64_t rejected = 0;        // refused for good (413, 400, ...): dropped
  uint64_t dropped = 0;         // past the queue's bound, or still queued at exit
  uint64_t failures = 0;        // transient failures, each retried
  size_t queued = 0;            // waiting now
  uint64_t queued_bytes = 0;
};

class CubinUploader {
 public:
  static StatusOr<std::unique_ptr<CubinUploader>> Create(CubinUploaderOptions options);
  ~CubinUploader();  // Stop()s
  CubinUploader(const CubinUploader&) = delete;
  CubinUploader& operator=(const CubinUploader&) = delete;

  // Owning thread: starts the uploader thread.
  void Start();
  // Any thread: hands over a cubin; one already queued or done is ignored.
  // Never waits for the network.
  void PostCubinFromAnyThread(const WindowCubin& cubin);
  CubinUploaderStats StatsFromAnyThread() const;
  // Owning thread: sends what is queued while the server answers (up to
  // shutdown_timeout), drops the rest, joins the thread. Idempotent.
  void Stop();

 private:
  enum class Result { kUploaded, kAlreadyStored, kRejected, kRetry };

  explicit CubinUploader(CubinUploaderOptions options);
  void ThreadMain();
  // HEAD, then PUT when the server lacks it. *answer: the failing answer.
  Result Upload(ServerConnection& connection, const WindowCubin& cubin, ServerAnswer* answer);
  void HandleResultLocked(const WindowCubin& cubin, Result result, const ServerAnswer& answer);
  void RememberLocked(const std::string& hash);
  void PopFrontLocked();

  const CubinUploaderOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<WindowCubin> queue_;            // guarded by mu_
  std::unordered_set<std::string> known_;    // guarded by mu_: queued or done
  std::deque<std::string> done_order_;       // guarded by mu_: done hashes, oldest first
  CubinUploaderStats stats_;                 // guarded by mu_
  uint64_t consecutive_failures_ = 0;        // guarded by mu_
  std::chrono::steady_clock::time_point retry_at_{};           // guarded by mu_
  std::chrono::steady_clock::time_point shutdown_deadline_{};  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::set<std::string> logged_;             // guarded by mu_: messages logged once, bounded
  std::atomic<int64_t> abort_at_ns_{INT64_MAX};
  std::mt19937_64 jitter_;  // uploader thread only
  std::thread thread_;
};

}  // namespace warpscope
