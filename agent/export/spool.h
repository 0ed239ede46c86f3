// Spool: a bounded on-disk queue of upload batches.
//
// When the server is unreachable or slow, the uploader parks each batch (an
// opaque byte string, zstd-compressed protobuf) here and sends them back in
// sequence order once the server answers again. The agent is a guest on
// production machines, so the spool is bounded (oldest batches are dropped
// first, and every drop is counted) and a damaged spool never stops the agent:
// files that fail validation are deleted and counted, never reported as errors.
//
// Crash safety: each batch is its own file, written to a temporary name,
// fsync'ed, renamed into place and the directory fsync'ed before Push returns
// OK. A crash (SIGKILL, power loss) therefore loses at most the batch in
// flight; a half-written temp file is swept on the next Open.
//
// On-disk format of one file, batch-<sequence, 20 decimal digits>.wsb, all
// integers little-endian:
//   0  char[8] magic   "WSSPOOL\0"
//   8  u16     version (kSpoolFormatVersion)
//  10  u16     header size (32; lets a later version grow the header)
//  12  u32     CRC-32 (zlib) of bytes 16..31 followed by the payload
//  16  u64     sequence (must match the file name)
//  24  u64     payload length (file size must be exactly header + length)
//  32  payload
//
// Threading: a Spool is not thread-safe. The uploader owns it and guards
// every call with its own mutex (the run loop may spool a batch from its
// thread when the uploader is stuck in a request; uploader.h). Within a process,
// and across processes, one Spool owns a directory: Open takes an exclusive
// flock on <dir>/LOCK and fails with FailedPrecondition if another owner holds it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/file_util.h"
#include "base/status.h"

namespace warpscope {

inline constexpr uint16_t kSpoolFormatVersion = 1;
inline constexpr size_t kSpoolHeaderSize = 32;

struct SpooledBatch {
  uint64_t sequence = 0;
  std::string data;
};

// Counters since Open (not persisted across restarts). Byte counts are
// on-disk file sizes, header included, so they add up with bytes().
struct SpoolStats {
  uint64_t pushed = 0;           // batches accepted by Push
  uint64_t popped = 0;           // batches removed by Pop after an upload
  uint64_t dropped_batches = 0;  // evicted by the size bound, or too large to ever fit
  uint64_t dropped_bytes = 0;
  uint64_t corrupt_dropped = 0;  // files that failed validation (Open or Peek) and were deleted
};

class Spool {
 public:
  // Creates dir (0700) if needed, takes the directory lock, deletes leftover
  // temp files and batch files that fail validation (files not named like
  // ours are left alone), then enforces max_bytes on
  // what is left (the bound may have shrunk since the last run). Errors only
  // for things that make the spool unusable: the directory cannot be created,
  // listed or locked.
  static StatusOr<std::unique_ptr<Spool>> Open(const std::string& dir, uint64_t max_bytes);

  ~Spool() = default;
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  // Durably stores one batch. sequence must be greater than every sequence
  // already spooled (InvalidArgument otherwise). A batch whose file alone
  // exceeds max_bytes is not written: ResourceExhausted, counted as dropped.
  // Otherwise, after the write, the oldest batches are evicted until the
  // total fits. On a disk error (ENOSPC, EFBIG, EIO, ...) the batch is not
  // stored and not counted: Unavailable, whatever the errno (a full disk may
  // have room later); no partial file is left behind and the spool stays
  // usable.
  Status Push(uint64_t sequence, std::string_view batch);

  // The oldest batch, read back and validated; nullopt when empty. A file
  // found corrupt (or gone) now is deleted, counted, and the next one tried.
  // Errors only for I/O failures that might be transient (the file is kept).
  StatusOr<std::optional<SpooledBatch>> Peek();

  // Deletes the oldest batch after it was uploaded. InvalidArgument if
  // sequence is not the oldest (or the spool is empty).
  Status Pop(uint64_t sequence);

  bool Empty() const { return files_.empty(); }
  size_t size() const { return files_.size(); }
  uint64_t bytes() const { return total_bytes_; }
  uint64_t max_bytes() const { return max_bytes_; }
  // The newest spooled sequence, so a restarted agent can continue after it.
  std::optional<uint64_t> newest_sequence() const;
  const SpoolStats& stats() const { return stats_; }
  const std::string& dir() const { return dir_; }

  // Exposed for tests and tools: the file name for a sequence, and the full
  // file image (header + payload) that Push writes.
  static std::string FileNameFor(uint64_t sequence);
  static std::string EncodeFile(uint64_t sequence, std::string_view batch);

 private:
  Spool(std::string dir, uint64_t max_bytes, ScopedFd dir_fd, ScopedFd lock_fd);

  Status Scan();
  std::string PathFor(uint64_t sequence) const;
  // Removes the file and forgets it; counts nothing.
  void RemoveFile(uint64_t sequence);
  // Evicts oldest batches (never `keep`) until total_bytes_ <= max_bytes_.
  void EnforceBound(std::optional<uint64_t> keep);
  Status SyncDir();

  const std::string dir_;
  const uint64_t max_bytes_;
  ScopedFd dir_fd_;   // for fsync of the directory after rename/unlink
  ScopedFd lock_fd_;  // holds the flock for the Spool's lifetime
  std::map<uint64_t, uint64_t> files_;  // sequence -> file size, oldest first
  uint64_t total_bytes_ = 0;
  SpoolStats stats_;
};

}  // namespace warpscope
