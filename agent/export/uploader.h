// Uploader: sends the agent's IngestBatches to warpscope-server.
//
// HTTP contract (docs/getting-started.md, "Continuous mode"):
//   POST <server>/api/v1/ingest
//   Content-Type: application/x-protobuf, Content-Encoding: zstd,
//   Authorization: Bearer <token> (when a token is set)
//   2xx                 stored, or a duplicate of a stored (agent_id, sequence): done
//   401, 403            the token is wrong or missing: logged, kept, retried (fixable on the server)
//   408, 425, 429       transient: kept, retried (Retry-After honoured, capped at max_backoff)
//   other 4xx (400 bad batch, 413 too large, ...): permanent for this batch: logged once per
//                       distinct message, counted, dropped
//   5xx, network errors, timeouts: transient: kept, retried
// (ClassifyHttpStatus, server_connection.h). Retries back off exponentially
// with jitter (BackoffDelay: initial_backoff doubling up to max_backoff, each
// wait drawn from [d/2, d]); a success resets the backoff.
//
// Durability: PostBatch writes each batch to the on-disk Spool at once
// (fsync'ed, spool.h), and the thread sends it from there, so a crash of the
// agent (kill -9, an OOM kill, a SIGKILL after the stop timeout) loses no
// batch that was made. Only a batch the disk refuses (full, failing: counted
// in batches_unspooled) waits in memory, max_queued_batches at most, and is
// lost with the process; so is one larger than the whole spool, sent from
// memory.
//
// Ordering: the server treats any sequence <= the highest it stored as a
// duplicate, so batches must arrive in increasing sequence order. The
// uploader keeps every unacknowledged batch either in the Spool (the older
// ones) or in the in-memory queue (the newer ones, those the disk refused)
// and always sends the oldest: queued batches follow the spool into it as
// soon as the disk takes them, and the spool is drained oldest first. A batch
// whose answer was lost is sent again with the same sequence and acknowledged
// as a duplicate.
//
// Threading: PostBatch and StatsFromAnyThread may be called from any thread
// (the run loop); everything else from the owning thread. The uploader thread
// owns the ServerConnection (reused, so connections are kept alive). The queue and
// the Spool are guarded by mu_, which is never held across a request: the
// Spool is written by PostBatch (the caller waits for the disk, an fsync per
// batch, never for the network) and read and trimmed by the uploader thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "agent/export/server_connection.h"
#include "agent/export/spool.h"
#include "base/status.h"

namespace warpscope {

inline constexpr char kIngestPath[] = "/api/v1/ingest";

struct UploaderOptions {
  ServerConnectionOptions server;  // kIngestPath is appended to its URL
  std::string spool_dir;
  uint64_t spool_max_bytes = 256ull << 20;
  // In memory: batches the spool could not take (disk full or failing; a
  // window makes up to one batch per source, window_batches.h); past either
  // bound the newest batch is dropped and counted.
  size_t max_queued_batches = 16;
  uint64_t max_queued_bytes = 48ull << 20;
  std::chrono::milliseconds initial_backoff{1000};
  // A server that comes back is noticed at most this late (the wait is drawn
  // from [max/2, max] once it is reached): short enough that little is lost
  // to the spool bound meanwhile, long enough that a fleet of agents retrying
  // a recovering server stays a trickle.
  std::chrono::milliseconds max_backoff{10000};
  // At Stop(), how long the batches still queued may take to send before the
  // rest is spooled (a request in flight is aborted at this deadline).
  std::chrono::milliseconds shutdown_timeout{10000};
  uint64_t jitter_seed = 0;  // 0: seeded from std::random_device
};

struct UploaderStats {
  uint64_t batches_posted = 0;    // PostBatch calls
  uint64_t batches_sent = 0;      // answered 2xx (stored or duplicate)
  uint64_t batches_rejected = 0;  // permanent 4xx: dropped
  uint64_t batches_dropped = 0;   // neither queued nor spooled (spool unusable and queue full), or lost at exit
  uint64_t send_failures = 0;     // transient failures: network, timeouts, 5xx, 408/425/429, 401/403
  uint64_t auth_failures = 0;     // 401/403 among them
  uint64_t batches_spooled = 0;   // pushed into the spool
  uint64_t batches_unspooled = 0;  // posted but not taken by the spool at once (disk error, too large): in memory
  uint64_t spool_dropped_batches = 0;  // evicted by the spool bound, too large for it, or found corrupt
  uint64_t consecutive_failures = 0;   // since the last success; 0 when healthy
  std::chrono::milliseconds current_backoff{0};  // the wait before the next retry; 0 when healthy
  int last_http_status = 0;       // 0: no answer (network error) or nothing sent yet
  size_t queued = 0;              // batches in memory now
  size_t spooled = 0;             // batches in the spool now
  uint64_t queued_bytes = 0;      // of the batches in memory
  uint64_t max_queued_bytes = 0;  // their bound (options)
  uint64_t spooled_bytes = 0;     // on disk
  uint64_t spool_max_bytes = 0;
};

class Uploader {
 public:
  // Opens (and locks) the spool; nothing is sent before Start.
  static StatusOr<std::unique_ptr<Uploader>> Create(UploaderOptions options);
  ~Uploader();  // Stop()s
  Uploader(const Uploader&) = delete;
  Uploader& operator=(const Uploader&) = delete;

  // Owning thread, before Start: the newest spooled sequence (a restarted
  // agent continues above it).
  std::optional<uint64_t> newest_spooled_sequence() const;

  // Owning thread: starts the uploader thread; spooled batches are sent first.
  void Start();

  // Any thread: hands over one batch (the zstd-compressed IngestBatch carrying
  // `sequence`). Sequences must increase from call to call. Never waits for
  // the network.
  void PostBatch(uint64_t sequence, std::string body);

  // Any thread.
  UploaderStats StatsFromAnyThread() const;

  // Owning thread: sends what is still queued while the server answers (up to
  // shutdown_timeout), spools the rest, and joins the thread. Idempotent.
  void Stop();

 private:
  struct QueuedBatch {
    uint64_t sequence = 0;
    std::shared_ptr<const std::string> body;
  };

  Uploader(UploaderOptions options, std::unique_ptr<Spool> spool);
  void ThreadMain();
  void HandleResultLocked(const QueuedBatch& head, const ServerAnswer& result);
  // Moves queued batches, oldest first, into the spool (stops at a disk error,
  // keeping the rest in memory so order is kept). A batch larger than the
  // whole spool stops it too (sent from memory), unless `drop_oversized`
  // (the server is failing, or the uploader stops): then it is dropped, counted.
  void SpoolQueueLocked(bool drop_oversized);
  void RemoveHeadLocked(uint64_t sequence);
  // Over max_queued_batches or max_queued_bytes (the head, which may be in
  // flight, is never what makes it over).
  bool QueueOverLocked() const;
  void PopFrontLocked();
  void SyncSpoolStatsLocked();
  void LogOnceLocked(const std::string& message);

  const UploaderOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<Spool> spool_;    // guarded by mu_
  std::deque<QueuedBatch> queue_;   // guarded by mu_; newer than everything spooled
  uint64_t queued_bytes_ = 0;       // guarded by mu_; of queue_
  UploaderStats stats_;             // guarded by mu_
  bool stopping_ = false;           // guarded by mu_
  bool backing_off_ = false;        // guarded by mu_
  std::chrono::steady_clock::time_point retry_at_{};        // guarded by mu_
  std::chrono::steady_clock::time_point shutdown_deadline_{};  // guarded by mu_
  std::set<std::string> logged_messages_;  // guarded by mu_; bounded
  bool spool_error_logged_ = false;        // guarded by mu_
  // Read by curl's progress callback on the uploader thread: a request still
  // running at this steady-clock time (ns) is aborted (shutdown).
  std::atomic<int64_t> abort_at_ns_{INT64_MAX};

  std::mt19937_64 jitter_;  // uploader thread only
  std::thread thread_;
};

}  // namespace warpscope
