// The two facts that make uploads idempotent across agent restarts:
// a stable agent id per installation and a batch sequence that only grows.
// Both live in the agent's state directory (default /var/lib/warpscope-agent).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "base/status.h"

namespace warpscope {

inline constexpr char kAgentIdFileName[] = "agent-id";
inline constexpr char kLastSequenceFileName[] = "last-sequence";

// Reads <state_dir>/agent-id, or creates it (a random 128-bit id as 32
// lowercase hex digits, from getrandom, written atomically) on first start.
// A file that does not hold such an id is replaced with a fresh one, logged:
// a new id is safe (the server sees a new agent), a garbled one is not.
// Creates state_dir (0700) if needed.
StatusOr<std::string> LoadOrCreateAgentId(const std::string& state_dir);

// Hands out batch sequence numbers. The server stores an (agent_id, sequence)
// once and treats any sequence <= the highest it stored as a duplicate, so a
// sequence must never repeat or go backwards, even across restarts, crashes
// and lost state:
//
//   next = max(last + 1, now in unix microseconds)
//
// `last` starts from the larger of <state_dir>/last-sequence and the newest
// spooled batch, and every sequence handed out is persisted (atomically,
// before the batch leaves the agent). The clock term covers a state file that
// was lost or restored from an old backup: a restarted agent starts above
// anything it could have sent before unless the wall clock went back by more
// than the agent was down. It also means sequences carry the batch's rough
// creation time, which helps when reading server logs. One batch per upload
// window (seconds) never catches up with the microsecond clock, so in practice
// sequences are creation times.
//
// Owned by the sampling thread (which encodes batches); not thread-safe.
class BatchSequencer {
 public:
  using UnixMicrosClock = std::function<uint64_t()>;

  // Reads the persisted sequence; a missing file is a first start, an
  // unreadable or garbled one is logged and ignored (the clock term keeps
  // sequences increasing).
  static StatusOr<BatchSequencer> Open(const std::string& state_dir, std::optional<uint64_t> newest_spooled,
                                       UnixMicrosClock clock = nullptr);

  // The next sequence, persisted before it is returned. A failure to persist is
  // logged, not fatal: the clock term still orders sequences.
  uint64_t Next();
  uint64_t last() const { return last_; }

 private:
  BatchSequencer(std::string path, uint64_t last, UnixMicrosClock clock)
      : path_(std::move(path)), last_(last), clock_(std::move(clock)) {}

  std::string path_;
  uint64_t last_ = 0;
  UnixMicrosClock clock_;
  bool persist_error_logged_ = false;
};

}  // namespace warpscope
