// ClickHouseProfileStore: the storage::ProfileStore on ClickHouse
// (docs/design/clickhouse.md), for warpscope-server replicas that keep no
// state of their own: any number of them may ingest into and query one
// database.
//
//   ingest:  ValidateBatch -> per-agent gate (this replica) -> rows (only the
//            dictionary rows not written yet) -> group commit with the other
//            agents' concurrent batches (ingest_group_committer.h): one SELECT
//            (duplicate + repair checks), dictionaries, facts (repair-checked:
//            ingest_writer.h), agent_sequences rows -> OK
//   queries: type ids from `types`, selectors as SQL on label_sets, the
//            aggregation inside ClickHouse, ids resolved through cached
//            dictionaries (dictionary_reader.h)
//   retention: whole day partitions older than now - retention dropped by a
//            background thread; queries never look before the cutoff
//   cubins:  clickhouse_cubins.h, shared by the replicas; retention drops
//            their use days with the facts
//
// ClickHouse going away makes Ingest and queries return Unavailable (the
// server answers 503; agents keep their batches and re-send); nothing
// acknowledged is lost, a re-send of a batch that got partly in is stored
// exactly once, and the store recovers by itself when ClickHouse returns.
//
// Threading: every ProfileStore method may be called from any number of
// threads (the server's HTTP workers). One background thread applies
// retention and one writes ingest groups; the destructor stops both.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "storage/retention_clock_guard.h"
#include "storage/clickhouse/clickhouse_client.h"
#include "storage/clickhouse/clickhouse_cubins.h"
#include "storage/clickhouse/clickhouse_url.h"
#include "storage/clickhouse/content_ids.h"
#include "storage/clickhouse/dictionary_reader.h"
#include "storage/clickhouse/ingest_group_committer.h"
#include "storage/clickhouse/ingest_writer.h"
#include "storage/clickhouse/schema_migrations.h"
#include "storage/clickhouse/type_selection.h"
#include "storage/agent_ingest_gate.h"
#include "storage/ingest_counters.h"
#include "storage/profile_store.h"

namespace warpscope::clickhouse {

// A SELECT bounded by the query's deadline (storage/query_context.h), if any.
inline ClickHouseRequest ReadWithin(std::string sql, const storage::QueryContext* context) {
  ClickHouseRequest r = ClickHouseRequest::Read(std::move(sql));
  if (context != nullptr && context->has_deadline()) r.deadline = context->deadline();
  return r;
}

struct ClickHouseOptions {
  std::string url;   // clickhouse://HOST:PORT/DB, clickhouse+https://..., http://..., https://...
  std::string user;  // empty: "default"
  std::string password;
  std::string ca_file;       // https: the CA to verify ClickHouse against; "" the system's
  int64_t retention_ns = 0;  // 0: keep forever
  // Rows this far ahead of the server's clock are dropped at ingest
  // (storage/ingest_time_bounds.h), as are rows older than retention.
  int64_t max_future_skew_ns = storage::kDefaultMaxFutureSkewNs;
  // Unix nanoseconds now; the wall clock when empty (tests pin it).
  std::function<int64_t()> now_ns;
  int timeout_ms = 30000;
  // How often the background thread drops expired day partitions (when
  // retention_ns > 0); it also runs once at Open.
  int64_t retention_interval_ns = int64_t{3600} * 1'000'000'000;
  // A retention pass stands aside (warns, counts retention_paused) while now
  // is more than this ahead of the newest row: a clock stepped forward must
  // not drop every day (storage/retention_clock_guard.h). 0: never.
  int64_t retention_clock_guard_ns = storage::kRetentionClockJumpNs;
  // Group commit (ingest_group_committer.h): concurrent Ingest calls share
  // their INSERTs. A group closes at group_max_batches batches or
  // group_max_rows fact rows, or group_max_wait_ms after it began gathering -
  // sooner once it holds as many batches as recent groups did and no other
  // Ingest call is building its rows, so a lone agent never waits.
  // group_max_batches = 1 writes every batch on its own.
  int group_max_batches = 64;
  uint64_t group_max_rows = 500'000;  // well below max_insert_block_size: one block per INSERT
  int group_max_wait_ms = 50;
  storage::CubinLimits cubins;
};

class ClickHouseProfileStore final : public storage::ProfileStore {
 public:
  // Connects, checks the version, runs migrations. Unavailable (with the URL and curl's reason) when ClickHouse cannot
  // be reached.
  static StatusOr<std::unique_ptr<ClickHouseProfileStore>> Open(const ClickHouseOptions& options);
  ~ClickHouseProfileStore() override;

  StatusOr<storage::IngestResult> Ingest(const warpscope::v1::IngestBatch& batch) override;
  StatusOr<storage::MergedProfile> SelectProfile(const storage::ProfileQuery& query) override;
  StatusOr<std::vector<storage::Series>> SelectSeries(const storage::SeriesQuery& query) override;
  StatusOr<storage::StackTimeline> SelectStackTimeline(const storage::TimelineQuery& query) override;
  StatusOr<std::vector<storage::Labels>> SelectSeriesLabels(const storage::SeriesLabelsQuery& query) override;
  StatusOr<std::vector<storage::MetricSeries>> SelectMetricSeries(const storage::MetricQuery& query) override;
  StatusOr<std::vector<storage::MetricInfo>> MetricNames() override;
  StatusOr<storage::GpuActivities> SelectGpuActivities(const storage::GpuActivityQuery& query) override;
  StatusOr<std::vector<std::string>> LabelNames() override;
  StatusOr<std::vector<std::string>> LabelValues(const std::string& name) override;
  StatusOr<std::vector<storage::ProfileTypeInfo>> ProfileTypes() override;
  StatusOr<storage::CubinPutResult> PutCubin(const std::string& hash, const std::string& bytes) override;
  StatusOr<std::optional<storage::CubinInfo>> FindCubin(const std::string& hash) override;
  StatusOr<std::optional<std::string>> ReadCubin(const std::string& hash) override;
  Status NoteCubinUses(const std::vector<std::string>& hashes) override;
  storage::StoreStats stats() const override;

  // Drops every day partition of the fact tables (and of cubin_uses) that
  // ends before now - retention, then the cubins no use names any more
  // (no-op without retention). Any thread.
  Status ApplyRetentionNow();

  const ClickHouseEndpoint& endpoint() const { return client_->endpoint(); }
  const ServerVersion& server_version() const { return server_version_; }

 private:
  ClickHouseProfileStore(const ClickHouseOptions& options, std::unique_ptr<ClickHouseClient> client);
  void RunRetention();
  int64_t Now() const;              // Unix nanoseconds (options_.now_ns or the wall clock)
  int64_t RetentionCutoff() const;  // INT64_MIN without retention

  // Every row of `types`, one per id, sorted by (kind, name, unit, period).
  StatusOr<std::vector<TypeRow>> LoadTypes();
  const ClickHouseOptions options_;
  std::unique_ptr<ClickHouseClient> client_;
  ServerVersion server_version_;
  std::unique_ptr<IngestWriter> writer_;
  std::unique_ptr<IngestGroupCommitter> committer_;  // after writer_: stopped before it goes
  std::unique_ptr<DictionaryReader> dictionary_;
  std::unique_ptr<ClickHouseCubins> cubins_;

  // Per-agent gate and duplicate cache: it only ever answers "duplicate" (a
  // sequence <= one this replica saw stored); "new" is always asked of
  // ClickHouse, as another replica may have stored it.
  storage::AgentIngestGate agents_;

  std::mutex bg_mu_;
  std::condition_variable bg_cv_;
  bool bg_stop_ = false;
  std::thread bg_thread_;

  storage::IngestCounters counters_;
  storage::CubinCounters cubin_counters_;
  std::atomic<uint64_t> retention_paused_{0};
};

}  // namespace warpscope::clickhouse
