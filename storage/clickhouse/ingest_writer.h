// IngestWriter: writes the rows (batch_rows.h) of a group of batches to
// ClickHouse, steps 3 to 5 of docs/design/clickhouse.md §6; the group commit
// around it is ingest_group_committer.h. A group of one batch is the plain
// case; a group shares every statement.
//
// Check: one SELECT answers, for every batch of the group, its agent's stored
// sequence (the duplicate check) and its rows in each fact table (the repair
// check), each count within the batch's types, series and time range, so the
// sort keys and day partitions prune.
//
// Dictionaries first, so no fact ever references a missing id: one INSERT
// per dictionary table of the group's rows whose ids this replica has not
// written (WrittenDictionaryIds; ids go in only after their INSERT succeeded).
//
// Facts: one INSERT per fact table holding every block of the group that the
// check found missing. One INSERT is one ClickHouse block (groups stay far
// below max_insert_block_size), so each batch's rows of a table are all in or
// none: 0 -> insert, all -> already there (an earlier attempt, here or on
// another replica, got in before failing), anything else is a partial block,
// which ClickHouse's atomic inserts rule out (DataLoss for that batch alone).
// A failed INSERT is retried only after counting again, since it may have
// landed even though its answer was lost. So a re-send after a failure is
// stored exactly once.
//
// Threading: any number of threads; the id cache has its own locks. Callers
// keep two batches of one agent apart (ClickHouseProfileStore's per-agent gate).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "storage/clickhouse/batch_rows.h"
#include "storage/clickhouse/clickhouse_client.h"
#include "storage/clickhouse/written_ids.h"

namespace warpscope::clickhouse {

struct IngestWriterOptions {
  size_t cached_ids_per_table = 1'000'000;  // ~40 MB of sets when all full
  RetryPolicy retry;                        // the check, dictionary inserts and the fact loop
};

// What ClickHouse holds of one batch.
struct StoredBatchState {
  uint64_t sequence = 0;        // the highest stored sequence of the batch's agent (when asked; 0: none)
  std::vector<uint64_t> counts;  // rows of the batch per fact table, in BatchRows::facts order
};

// DataLoss when a fact table holds some but not all of the batch's rows.
Status CheckNotPartial(const BatchRows& rows, const StoredBatchState& state, const std::string& what);

class IngestWriter {
 public:
  IngestWriter(ClickHouseClient* client, IngestWriterOptions options);

  // Read by BuildBatchRows so cached dictionary rows are not even built.
  const WrittenDictionaryIds& written_ids() const { return written_; }

  // One SELECT (retried per options.retry). With `agents` (one per batch),
  // also each agent's stored sequence.
  StatusOr<std::vector<StoredBatchState>> CheckStored(const std::vector<const BatchRows*>& group,
                                                      const std::vector<std::string>* agents);
  Status WriteDictionaries(const std::vector<const BatchRows*>& group);
  // Stores every block that `stored` (CheckStored's answer) says is missing.
  // `batch_status[i]` must start OK for the batches to store; a batch found
  // partial on a recount gets DataLoss there and is left out. The result is
  // the group's: a failure is every remaining batch's.
  Status WriteFacts(const std::vector<const BatchRows*>& group, std::vector<StoredBatchState> stored,
                    std::vector<Status>* batch_status);

  // One batch, without the duplicate check (tests).
  Status WriteDictionaries(const BatchRows& rows) { return WriteDictionaries(std::vector<const BatchRows*>{&rows}); }
  // `what` names the batch in errors ("agent a seq 3").
  Status WriteFacts(const BatchRows& rows, const std::string& what);

  // Forgets every cached id (tests: a database dropped under a live store).
  void ForgetCachedIds() { written_.Clear(); }

  // Statements sent (not counting retries), for the store's log line.
  uint64_t inserts_sent() const { return inserts_sent_.load(); }

 private:
  StatusOr<std::vector<StoredBatchState>> CheckStored(const std::vector<const BatchRows*>& group,
                                                      const std::vector<std::string>* agents,
                                                      const RetryPolicy& retry);

  ClickHouseClient* const client_;
  const IngestWriterOptions options_;
  WrittenDictionaryIds written_;
  std::atomic<uint64_t> inserts_sent_{0};
};

}  // namespace warpscope::clickhouse
