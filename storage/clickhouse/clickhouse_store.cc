// ClickHouseProfileStore: opening, ingest, retention, cubins and stats. Queries:
// clickhouse_profile_query.cc (profiles, series, timelines),
// clickhouse_catalog_query.cc (labels, types, metrics), clickhouse_gpu_query.cc.
#include "storage/clickhouse/clickhouse_store.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <tuple>

#include "base/logging.h"
#include "storage/clickhouse/batch_rows.h"
#include "storage/clickhouse/row_binary.h"
#include "storage/clickhouse/sql_text.h"
#include "storage/embedded/dictionary/batch_validator.h"

namespace warpscope::clickhouse {
namespace {

constexpr int64_t kDayNs = int64_t{86400} * 1'000'000'000;
constexpr size_t kMaxCachedDictionaryEntries = 1'000'000;

// Tables whose rows expire: partitioned by day (schema_migrations.cc).
constexpr const char* kFactTables[] = {"samples",           "samples_1h", "metric_points", "gpu_activities",
                                       "gpu_trace_coverage", "cubin_uses"};

int64_t NowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1'000'000'000 + ts.tv_nsec;
}

std::string HostName() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

}  // namespace

StatusOr<std::unique_ptr<ClickHouseProfileStore>> ClickHouseProfileStore::Open(const ClickHouseOptions& options) {
  ASSIGN_OR_RETURN(ClickHouseEndpoint endpoint, ParseClickHouseUrl(options.url));
  ClickHouseClientOptions client_options;
  client_options.user = !options.user.empty() ? options.user : endpoint.user;
  client_options.password = !options.password.empty() ? options.password : endpoint.password;
  client_options.timeout_ms = options.timeout_ms > 0 ? options.timeout_ms : 30'000;
  client_options.ca_file = options.ca_file;
  auto client = std::make_unique<ClickHouseClient>(endpoint, client_options);
  std::unique_ptr<ClickHouseProfileStore> store(new ClickHouseProfileStore(options, std::move(client)));

  ASSIGN_OR_RETURN(std::string version,
                   store->client_->Execute(ClickHouseRequest::Read("SELECT version()").OutsideDatabase()));
  ASSIGN_OR_RETURN(store->server_version_, ParseServerVersion(version));
  RETURN_IF_ERROR(RunMigrations(*store->client_, store->server_version_, "warpscope-server@" + HostName()));
  LOG_INFO() << "ClickHouse store " << endpoint.ToString() << ": ClickHouse " << store->server_version_.text
             << ", schema version " << kLatestSchemaVersion;
  if (options.retention_ns > 0) {
    if (Status s = store->ApplyRetentionNow(); !s.ok()) LOG_WARNING() << "retention: " << s.ToString();
    store->bg_thread_ = std::thread([s = store.get()] { s->RunRetention(); });
  }
  return store;
}

ClickHouseProfileStore::ClickHouseProfileStore(const ClickHouseOptions& options,
                                               std::unique_ptr<ClickHouseClient> client)
    : options_(options),
      client_(std::move(client)),
      writer_(std::make_unique<IngestWriter>(client_.get(), IngestWriterOptions{})),
      committer_(std::make_unique<IngestGroupCommitter>(
          client_.get(), writer_.get(),
          GroupCommitOptions{.max_batches = options.group_max_batches,
                             .max_rows = options.group_max_rows,
                             .max_wait = std::chrono::milliseconds(std::max(0, options.group_max_wait_ms))})),
      dictionary_(std::make_unique<DictionaryReader>(client_.get(), kMaxCachedDictionaryEntries)),
      cubins_(std::make_unique<ClickHouseCubins>(
          client_.get(), options.cubins, [this] { return Now(); }, [this] { return RetentionCutoff(); })) {}

ClickHouseProfileStore::~ClickHouseProfileStore() {
  const IngestGroupCommitter::Counters c = committer_->counters();
  committer_.reset();
  if (c.batches > 0) {
    LOG_INFO() << "ClickHouse ingest: " << c.batches << " batches in " << c.groups << " groups (largest "
               << c.largest_group << "), " << writer_->inserts_sent() << " dictionary and fact INSERTs";
  }
  if (bg_thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(bg_mu_);
      bg_stop_ = true;
    }
    bg_cv_.notify_all();
    bg_thread_.join();
  }
}

int64_t ClickHouseProfileStore::Now() const { return options_.now_ns ? options_.now_ns() : NowNs(); }

int64_t ClickHouseProfileStore::RetentionCutoff() const {
  if (options_.retention_ns <= 0) return INT64_MIN;
  return Now() - options_.retention_ns;
}

StatusOr<storage::IngestResult> ClickHouseProfileStore::Ingest(const warpscope::v1::IngestBatch& batch) {
  RETURN_IF_ERROR(counters_.CheckSchema(batch));
  if (Status valid = dictionary::ValidateBatch(batch); !valid.ok()) return counters_.Rejected(std::move(valid));
  const std::string& agent = batch.agent_id();
  const std::string what = "batch of agent " + agent + " seq " + std::to_string(batch.sequence());
  // One Ingest per agent at a time on this replica (a re-send racing its
  // original waits); "new" is still asked of ClickHouse below, as another
  // replica may have stored it.
  std::optional<storage::AgentIngestGate::Pass> pass = agents_.Enter(agent, batch.sequence());
  if (!pass) return counters_.Duplicate();
  // Rows first (in parallel with other agents' Ingest calls), leaving out
  // dictionary rows this replica has written; then the group commit.
  // Rows outside what the store keeps are left out and counted.
  storage::IngestResult result;
  const std::optional<warpscope::v1::IngestBatch> kept = storage::WithoutRowsOutside(
      batch, storage::IngestTimeBounds::At(Now(), options_.retention_ns, options_.max_future_skew_ns),
      &result.dropped);
  const warpscope::v1::IngestBatch& stored = kept ? *kept : batch;
  IngestGroupCommitter::ExpectedBatch expected = committer_->ExpectBatch();
  BatchRows rows = BuildBatchRows(stored, &writer_->written_ids());
  BatchOutcome outcome = committer_->CommitAndWait(std::move(expected), std::move(rows), agent, batch.sequence(), what);
  RETURN_IF_ERROR(outcome.status);
  if (outcome.duplicate) {
    agents_.Stored(agent, outcome.stored_sequence);
    return counters_.Duplicate();
  }
  agents_.Stored(agent, batch.sequence());
  result.samples = static_cast<uint64_t>(stored.samples_size());
  result.metric_points = static_cast<uint64_t>(stored.metric_points_size());
  result.gpu_activities = static_cast<uint64_t>(stored.gpu_activities_size());
  return counters_.Stored(result);
}

Status ClickHouseProfileStore::ApplyRetentionNow() {
  const int64_t cutoff = RetentionCutoff();
  if (cutoff == INT64_MIN) return Status::Ok();
  if (options_.retention_clock_guard_ns > 0) {
    // The newest row of the fact tables (max is 0 over an empty table).
    ASSIGN_OR_RETURN(const std::string newest_body,
                     client_->Execute(ClickHouseRequest::Read(
                         "SELECT toInt64(greatest((SELECT max(time_ns) FROM samples), greatest((SELECT max(time_ns) "
                         "FROM metric_points), (SELECT max(start_ns) FROM gpu_activities)))) FORMAT RowBinary")));
    RowBinaryReader newest_row(newest_body);
    int64_t newest = static_cast<int64_t>(newest_row.UInt64());
    RETURN_IF_ERROR(newest_row.status("newest row"));
    if (newest == 0) newest = INT64_MIN;
    const int64_t now = Now();
    if (storage::RetentionMustPause(now, newest, options_.retention_clock_guard_ns)) {
      retention_paused_++;
      LOG_WARNING_EVERY_N_SEC(600) << "ClickHouse retention paused: the clock is " << (now - newest) / 1'000'000'000
                                   << " s ahead of the newest row; a clock stepped forward would drop data for "
                                      "good. Dropping resumes once rows arrive at times near the clock";
      return Status::Ok();
    }
  }
  std::string tables;
  for (const char* t : kFactTables) tables += std::string(tables.empty() ? "" : ", ") + SqlString(t);
  ASSIGN_OR_RETURN(
      std::string body,
      client_->Execute(ClickHouseRequest::Read("SELECT DISTINCT table, partition FROM system.parts WHERE database = " +
                                               SqlString(endpoint().database) + " AND table IN (" + tables +
                                               ") AND active FORMAT RowBinary")
                           .OutsideDatabase()));
  RowBinaryReader r(body);
  std::vector<std::pair<std::string, std::string>> drop;
  while (!r.done()) {
    std::string table = r.String();
    std::string partition = r.String();
    if (partition.size() != 8) continue;  // not a YYYYMMDD day: not ours to drop
    int64_t ymd = 0;
    for (char c : partition) ymd = ymd * 10 + (c - '0');
    const int64_t day_end = (DaysFromCivil(ymd / 10000, (ymd / 100) % 100, ymd % 100) + 1) * kDayNs;
    if (day_end <= cutoff) drop.emplace_back(std::move(table), std::move(partition));
  }
  RETURN_IF_ERROR(r.status("system.parts"));
  for (const auto& [table, partition] : drop) {
    // Dropping a partition another replica already dropped is not an error.
    RETURN_IF_ERROR(
        client_->Execute(ClickHouseRequest::Statement("ALTER TABLE " + table + " DROP PARTITION " + partition))
            .status());
    LOG_INFO() << "ClickHouse retention: dropped " << endpoint().database << "." << table << " day " << partition;
  }
  ASSIGN_OR_RETURN(const uint64_t unused, cubins_->RemoveUnused());
  cubin_counters_.Expired(unused);
  if (unused > 0) LOG_INFO() << "ClickHouse retention: deleting " << unused << " cubins no longer used";
  return Status::Ok();
}

void ClickHouseProfileStore::RunRetention() {
  const auto every = std::chrono::nanoseconds(std::max<int64_t>(options_.retention_interval_ns, 1'000'000));
  std::unique_lock<std::mutex> lock(bg_mu_);
  while (!bg_cv_.wait_for(lock, every, [&] { return bg_stop_; })) {
    lock.unlock();
    if (Status s = ApplyRetentionNow(); !s.ok()) LOG_WARNING() << "ClickHouse retention: " << s.ToString();
    lock.lock();
  }
}

StatusOr<std::vector<TypeRow>> ClickHouseProfileStore::LoadTypes() {
  // Small (a few dozen rows) and written by any replica: read each time.
  ASSIGN_OR_RETURN(std::string body, client_->Execute(ClickHouseRequest::Read(
                                         "SELECT type_id, any(kind), any(name), any(unit), any(period_nanos) "
                                         "FROM types GROUP BY type_id FORMAT RowBinary")));
  RowBinaryReader r(body);
  std::vector<TypeRow> out;
  while (!r.done()) {
    TypeRow t;
    t.id = r.UInt64();
    t.kind = static_cast<TypeKind>(r.UInt8());
    t.name = r.String();
    t.unit = r.String();
    t.period_nanos = r.Int64();
    out.push_back(std::move(t));
  }
  RETURN_IF_ERROR(r.status("types"));
  std::sort(out.begin(), out.end(), [](const TypeRow& a, const TypeRow& b) {
    return std::tie(a.kind, a.name, a.unit, a.period_nanos, a.id) <
           std::tie(b.kind, b.name, b.unit, b.period_nanos, b.id);
  });
  return out;
}

StatusOr<storage::CubinPutResult> ClickHouseProfileStore::PutCubin(const std::string& hash, const std::string& bytes) {
  StatusOr<storage::CubinPutResult> result = cubins_->Put(hash, bytes);
  if (!result.ok()) return cubin_counters_.Invalid(result.status());
  return cubin_counters_.Count(*result);
}

StatusOr<std::optional<storage::CubinInfo>> ClickHouseProfileStore::FindCubin(const std::string& hash) {
  return cubins_->Find(hash);
}

StatusOr<std::optional<std::string>> ClickHouseProfileStore::ReadCubin(const std::string& hash) {
  return cubins_->Read(hash);
}

Status ClickHouseProfileStore::NoteCubinUses(const std::vector<std::string>& hashes) {
  return cubins_->NoteUses(hashes);
}

storage::StoreStats ClickHouseProfileStore::stats() const {
  storage::StoreStats s = counters_.Stats();
  s.cubins = cubin_counters_.Stats();
  s.retention_paused = retention_paused_.load();
  return s;
}

}  // namespace warpscope::clickhouse
