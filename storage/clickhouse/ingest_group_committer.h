// IngestGroupCommitter: group commit for the ClickHouse store's ingest
// (docs/design/clickhouse.md §6). On 18.16 every INSERT costs 15-25 ms of
// ClickHouse's time whatever its size, and makes a part to merge later, so
// batches that arrive together from many agents share their statements: one
// SELECT (duplicate and repair checks of every batch), one INSERT per
// dictionary table with new rows, one per fact table, one into
// agent_sequences. A batch is acknowledged only after the INSERTs holding its
// rows and then its agent_sequences row succeeded; a failure fails every
// batch of the group (the agents re-send, and the repair check sorts out what
// got in), except a batch found partially stored, which fails alone with
// DataLoss.
//
// A group gathers while the committer is free: it closes when it holds
// max_batches batches or max_rows fact rows, or max_wait after gathering
// began, and sooner once no other Ingest call is building its rows
// (ExpectBatch) and it holds as many batches as the largest of the last 16
// groups. So a lone agent never waits (its groups are of one), and under load
// the batches queued while the last group was written are joined by those
// of the agents it just acknowledged, if they come back within max_wait
// (without that, a closed loop of N senders settles at two groups of N/2
// taking turns).
//
// Threading: owns one thread, the committer, which forms and writes groups
// one at a time. ExpectBatch and CommitAndWait are called from the store's
// Ingest threads (any number); CommitAndWait blocks its caller until the
// batch's group is done. A queued batch lives in its blocked caller's frame;
// from queueing until it is marked done only the committer touches it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "storage/clickhouse/batch_rows.h"
#include "storage/clickhouse/clickhouse_client.h"
#include "storage/clickhouse/ingest_writer.h"

namespace warpscope::clickhouse {

struct GroupCommitOptions {
  int max_batches = 64;        // 1: every batch on its own
  uint64_t max_rows = 500'000;  // fact rows (a single larger batch still goes, alone)
  std::chrono::milliseconds max_wait{50};
};

struct BatchOutcome {
  Status status;                 // OK: stored, or a duplicate
  bool duplicate = false;        // already stored (by this or another replica)
  uint64_t stored_sequence = 0;  // the agent's stored sequence when duplicate
};

class IngestGroupCommitter {
 public:
  IngestGroupCommitter(ClickHouseClient* client, IngestWriter* writer, GroupCommitOptions options);
  // Writes what is queued, then stops the committer. No caller may still be
  // inside ExpectBatch/CommitAndWait's reach (the store is being destroyed).
  ~IngestGroupCommitter();

  // Says a batch is on its way (its rows are being built): a gathering group
  // waits for it, up to max_wait. Ends with CommitAndWait or its destruction.
  class ExpectedBatch {
   public:
    ExpectedBatch(ExpectedBatch&& other) noexcept : committer_(other.committer_) { other.committer_ = nullptr; }
    ExpectedBatch& operator=(ExpectedBatch&&) = delete;
    ~ExpectedBatch();

   private:
    friend class IngestGroupCommitter;
    explicit ExpectedBatch(IngestGroupCommitter* committer) : committer_(committer) {}
    IngestGroupCommitter* committer_;
  };
  ExpectedBatch ExpectBatch();

  // Queues the batch and blocks until its group is written. `what` names it
  // in errors ("batch of agent a seq 3"). Any Ingest thread.
  BatchOutcome CommitAndWait(ExpectedBatch expected, BatchRows rows, std::string agent, uint64_t sequence,
                             std::string what);

  struct Counters {
    uint64_t groups = 0, batches = 0, largest_group = 0;
  };
  Counters counters() const;

 private:
  struct Pending {
    BatchRows rows;
    std::string agent;
    uint64_t sequence = 0;
    std::string what;
    std::chrono::steady_clock::time_point queued_at;
    BatchOutcome outcome;
    bool done = false;
  };

  void RunCommitter();                             // the committer thread
  std::vector<Pending*> TakeGroup();               // mu_ held
  void WriteGroup(const std::vector<Pending*>& group);  // committer thread, mu_ not held
  void Expected(int delta);

  ClickHouseClient* const client_;
  IngestWriter* const writer_;
  const GroupCommitOptions options_;

  mutable std::mutex mu_;
  std::condition_variable queue_cv_;  // the committer: a batch queued or no longer expected, or stop
  std::condition_variable done_cv_;   // callers: a group finished
  std::deque<Pending*> queue_;        // owned by the callers blocked in CommitAndWait
  uint64_t queued_rows_ = 0;
  int expected_ = 0;
  bool stop_ = false;
  std::deque<size_t> recent_group_sizes_;  // the last 16, committer thread only
  Counters counters_;
  std::thread committer_;
};

}  // namespace warpscope::clickhouse
