// Write-ahead log of the embedded store's in-memory head.
//
// The server acknowledges an agent's upload only once it is durable. Uploads
// land in the head, which is flushed to immutable segment files every few
// seconds; in between, this log is what survives a crash. The server appends
// each upload and acks it once Append returns OK. On start it replays the log
// from the first seq the segments do not cover, then opens a writer. After a
// flush it calls Rotate before the flush and TruncateBefore after it, with the
// first seq the flush did not cover.
//
// Guarantees:
//  - An Append that returned OK (its record was fdatasync'ed) is replayed
//    intact after a kill -9 or a power loss.
//  - An Append that failed is never replayed as valid: the writer truncates
//    the partial write and makes that durable before it returns. (A kill -9
//    between the failure and the truncation can leave it whole; the caller did
//    not ack it either way.) If the truncation itself fails, the writer is
//    unusable from then on (every call returns that error) until it is
//    reopened.
//  - Records of an Append still in flight during a crash may or may not be
//    replayed, but a replayed record is always whole and checksummed.
// Format: wal_format.h.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/file_util.h"
#include "base/status.h"
#include "storage/embedded/wal/wal_format.h"

namespace warpscope::wal {

struct WalOptions {
  // A file is rotated before an append that would take it past this size. A
  // single commit group larger than this still goes into one file.
  uint64_t max_file_size = 64ull << 20;
  // Larger payloads are refused with InvalidArgument. At most 4 GiB - 1.
  uint64_t max_record_size = 64ull << 20;
};

struct WalWriterStats {
  uint64_t appends = 0;         // acknowledged records
  uint64_t failed_appends = 0;  // records that got an error
  uint64_t syncs = 0;           // fdatasync calls that made a commit group durable
  uint64_t max_group_records = 0;
  uint64_t bytes_written = 0;   // record bytes made durable (headers included)
  uint64_t files_started = 0;   // by Open (fresh dir, torn tail) and by rotation, automatic or not
};

// Appends records durably, one file at a time.
//
// Threading: Append and stats() may be called from any number of threads at
// once. Rotate and TruncateBefore belong to the owner thread (the one that
// opened the writer); they may run while other threads Append. The owner
// destroys the writer only after every Append has returned.
//
// Group commit (leader/follower): an Append takes a seq and joins the open
// commit group under the lock. If no group is being written, its thread
// becomes the leader: it takes the open group, releases the lock, writes all
// of the group's records with one pwritev and one fdatasync, and wakes the
// group's members. Appends that arrive meanwhile fill the next group, so the
// number of syncs per record falls as concurrency rises. Payloads are not
// copied: each caller is blocked in Append until its group is done, which
// keeps its payload alive for the leader.
class WalWriter {
 public:
  // Creates dir if needed and takes an exclusive lock on it (a second writer on
  // the same dir gets Unavailable). Continues after the last intact record of
  // the newest file; when that file ends in a torn record, the torn bytes are
  // truncated away and a new file is started.
  static StatusOr<std::unique_ptr<WalWriter>> Open(const std::string& dir, const WalOptions& options);

  WalWriter(const WalWriter&) = delete;
  WalWriter& operator=(const WalWriter&) = delete;
  ~WalWriter();

  // Returns the record's seq once it is durable. ResourceExhausted for a full
  // disk or file size limit; the log stays consistent and later appends work
  // once space is back. Seqs are consecutive across acknowledged records: the
  // seqs of a failed group are reused.
  StatusOr<uint64_t> Append(std::string_view payload);

  // Starts a new file for the records appended from now on, so that the
  // current one can be deleted once the head it covers is flushed. A no-op
  // when the current file has no records. Owner thread.
  Status Rotate();

  // Deletes the files all of whose records have seq < seq. Never deletes the
  // file being appended to. Owner thread.
  Status TruncateBefore(uint64_t seq);

  // The seq the next record will get (if no group fails first).
  uint64_t next_seq() const;
  WalWriterStats stats() const;

 private:
  struct PendingRecord {
    char header[kRecordHeaderSize];
    std::string_view payload;  // owned by the Append caller, blocked until the group is done
    uint32_t payload_crc;
  };
  struct CommitGroup {
    uint64_t first_seq = 0;
    std::vector<PendingRecord> records;
    uint64_t bytes = 0;
    bool done = false;
    Status status;
  };

  WalWriter(std::string dir, const WalOptions& options, ScopedFd dir_fd, ScopedFd lock_fd);

  // Leader-only (the thread that set leader_active_, or Open before any other
  // thread can see the writer); called without mu_.
  Status WriteGroup(const CommitGroup& group, Status* broken);
  Status StartNewFile(uint64_t first_seq);
  Status UndoPartialWrite();

  // Takes the leader role for a non-append task (rotation) without starving it:
  // while one waits, Appends do not start new leaders.
  void AcquireLeadership(std::unique_lock<std::mutex>& lock);
  void ReleaseLeadership();
  static void Renumber(CommitGroup* group, uint64_t first_seq);

  const std::string dir_;
  const WalOptions options_;
  const ScopedFd dir_fd_;   // for fsync after creating, renaming and deleting files
  const ScopedFd lock_fd_;  // holds the flock for the writer's lifetime

  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_. Appends join open_group_; its first_seq is one past the
  // last record of the group being written (or of the file, when idle).
  std::shared_ptr<CommitGroup> open_group_;
  bool leader_active_ = false;
  int leadership_waiters_ = 0;
  Status broken_;              // set when a failed write could not be undone
  std::vector<WalFile> files_;  // oldest first; the last one is being appended to
  WalWriterStats stats_;

  // Owned by the leader: only the thread holding leadership touches these.
  ScopedFd fd_;
  std::string file_path_;
  uint64_t file_size_ = 0;
  uint64_t file_records_ = 0;
};

struct ReplayOptions {
  // Step over damaged records instead of failing with DataLoss; ReplayStats
  // counts what was skipped.
  bool skip_corrupt = false;
};

// Where a replay with skip_corrupt lost records: a damaged file (corrupt
// records, a damaged header, a torn tail in a file that is not the newest)
// or a missing one (path empty).
struct WalDamage {
  std::string path;
  uint64_t first_seq = 0;  // the seqs the file (or the hole) should hold: [first_seq, end_seq)
  uint64_t end_seq = 0;
  uint64_t lost_records = 0;
  uint64_t lost_bytes = 0;
};

struct ReplayStats {
  uint64_t files_read = 0;
  uint64_t records = 0;          // delivered to the callback
  uint64_t last_seq = 0;         // of the last delivered record, 0 if none
  uint64_t torn_tail_bytes = 0;  // at the end of the newest file
  uint64_t skipped_records = 0;  // lost to damage, counted from seq gaps (skip_corrupt only)
  uint64_t skipped_bytes = 0;
  uint64_t corrupt_regions = 0;
  std::vector<WalDamage> damage;  // skip_corrupt only, in seq order
};

// Calls fn(seq, payload) for every record with seq >= from_seq, in seq order
// across files; the payload view is valid only during the call. A torn last
// record of the newest file (a crash mid-append) ends the replay cleanly. Any
// other damage (a bad record mid-file, a truncated older file, a missing file)
// is DataLoss naming the file and offset, unless options.skip_corrupt. Files
// entirely before from_seq are not read. A dir that does not exist holds no
// records. An error from fn stops the replay and is returned as is.
//
// Reads whole files into memory one at a time. Must not run on a dir that a
// writer is appending to (it would see the in-flight tail as torn).
Status ReplayWal(const std::string& dir, uint64_t from_seq, const ReplayOptions& options, const RecordFn& fn,
                 ReplayStats* stats);
inline Status ReplayWal(const std::string& dir, uint64_t from_seq, const RecordFn& fn) {
  return ReplayWal(dir, from_seq, ReplayOptions{}, fn, nullptr);
}

}  // namespace warpscope::wal
