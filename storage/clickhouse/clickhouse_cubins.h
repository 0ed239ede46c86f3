// ClickHouseCubins: the ClickHouse store's cubins (storage/cubin_store.h),
// shared by every server replica on the database (schema 4,
// schema_migrations.h):
//
//   cubins      (hash, bytes, size)  ReplacingMergeTree ORDER BY hash: one
//               row per cubin once merged (two replicas storing one cubin
//               at once write the same row twice)
//   cubin_uses  (hash, day)          ReplacingMergeTree, day partitions: a
//               row per cubin and day it was put or named by a batch
//
// Retention drops cubin_uses' old days with the fact tables' (18.16 has no
// TTL), then deletes the cubins no use row names any more (ALTER ... DELETE,
// which ClickHouse applies in the background); answers only see cubins with
// a use row inside retention, so an expired cubin is gone for them at once.
// A put writes its use row before the cubin, so retention never finds a
// cubin being stored without one. The store-wide byte bound is checked
// against the sum of the cubins' sizes before each insert: replicas storing
// at the same moment may pass it by what they store together.
//
// Threading: every method from any thread (the client is thread-safe;
// noted_ is guarded by mu_).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "storage/clickhouse/clickhouse_client.h"
#include "storage/cubin_store.h"

namespace warpscope::clickhouse {

class ClickHouseCubins {
 public:
  // `now_ns`: the store's clock; `cutoff_ns`: its retention cutoff (INT64_MIN
  // without retention). `client` must outlive this.
  ClickHouseCubins(ClickHouseClient* client, storage::CubinLimits limits, std::function<int64_t()> now_ns,
                   std::function<int64_t()> cutoff_ns);

  StatusOr<storage::CubinPutResult> Put(const std::string& hash, const std::string& bytes);
  StatusOr<std::optional<storage::CubinInfo>> Find(const std::string& hash);
  StatusOr<std::optional<std::string>> Read(const std::string& hash);
  // One use row per cubin and day from this replica; the first of each day
  // is written, the rest were already.
  Status NoteUses(const std::vector<std::string>& hashes);
  // After retention dropped cubin_uses' old days: deletes the cubins that no
  // use row names; returns how many.
  StatusOr<uint64_t> RemoveUnused();

 private:
  // Writes use rows of today for `hashes` (valid ones), skipping those this
  // replica wrote today unless `always`.
  Status WriteUses(const std::vector<std::string>& hashes, bool always);
  // " AND hash IN (the cubins used inside retention)", or "" without retention.
  std::string UsedInsideRetentionSql() const;

  ClickHouseClient* const client_;
  const storage::CubinLimits limits_;
  const std::function<int64_t()> now_ns_;
  const std::function<int64_t()> cutoff_ns_;
  std::mutex mu_;
  int64_t noted_day_ = -1;                 // guarded by mu_
  std::unordered_set<std::string> noted_;  // guarded by mu_: hashes with a use row of noted_day_
};

}  // namespace warpscope::clickhouse
