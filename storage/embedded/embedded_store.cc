// EmbeddedProfileStore: opening, ingest and the background thread. Recovery
// at open: embedded_store_recovery.cc; flush/compaction/retention:
// embedded_store_maintenance.cc; queries: embedded_store_query.cc.
#include "storage/embedded/embedded_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "base/logging.h"
#include "storage/embedded/head_record.h"
#include "storage/embedded/metric_row.h"

namespace warpscope::embedded {

using storage::IngestResult;

namespace {

// The batch's GPU activities and coverage rows inside `bounds`, in global
// ids; the others are counted in *dropped.
GpuRows GpuRowsOf(const warpscope::v1::IngestBatch& batch, const dictionary::InternedBatch& ids,
                  const storage::IngestTimeBounds& bounds, storage::DroppedRows* dropped) {
  GpuRows out;
  out.activities.reserve(batch.gpu_activities_size());
  for (const auto& a : batch.gpu_activities()) {
    if (!dropped->Keep(bounds, a.start_unix_nanos())) continue;
    GpuActivityRow row;
    row.start_ns = a.start_unix_nanos();
    row.duration_ns = a.duration_nanos();
    row.series_id = ids.label_set_ids[a.label_set()];
    row.name_id = ids.string_ids[a.name()];
    row.system_name_id = ids.string_ids[a.system_name()];
    row.stack_id = a.stack() == 0 ? 0 : ids.stack_ids[a.stack() - 1];
    row.correlation_id = a.correlation_id();
    row.graph_id = a.graph_id();
    row.bytes = a.bytes();
    row.device = a.device();
    row.stream = a.stream();
    row.grid[0] = a.grid_x();
    row.grid[1] = a.grid_y();
    row.grid[2] = a.grid_z();
    row.block[0] = a.block_x();
    row.block[1] = a.block_y();
    row.block[2] = a.block_z();
    row.registers_per_thread = a.registers_per_thread();
    row.static_shared_bytes = a.static_shared_bytes();
    row.dynamic_shared_bytes = a.dynamic_shared_bytes();
    row.copy_kind = a.copy_kind();
    row.kind = static_cast<uint32_t>(a.kind());
    row.launch_start_ns = a.launch_start_unix_nanos();
    row.launch_duration_ns = a.launch_duration_nanos();
    row.launch_tid = a.launch_tid();
    row.launch_api = static_cast<uint32_t>(a.launch_api());
    out.activities.push_back(row);
  }
  out.coverage.reserve(batch.gpu_trace_coverage_size());
  for (const auto& c : batch.gpu_trace_coverage()) {
    if (!dropped->Keep(bounds, c.second_unix_nanos())) continue;
    out.coverage.push_back(GpuCoverageRow{.second_ns = c.second_unix_nanos(),
                                          .series_id = ids.label_set_ids[c.label_set()],
                                          .recorded = c.recorded(),
                                          .sent = c.sent(),
                                          .complete_until_ns = c.complete_until_unix_nanos()});
  }
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<EmbeddedProfileStore>> EmbeddedProfileStore::Open(const EmbeddedStoreOptions& options) {
  if (options.data_dir.empty()) return InvalidArgumentError("embedded store: data_dir is empty");
  if (::mkdir(options.data_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoError(errno, "creating data dir " + options.data_dir);
  }
  // Our own lock before anything else is opened: the WAL writer flocks wal/
  // too, but a second server must fail here, before it touches SQLite or
  // deletes "dead" files that the first one is about to publish.
  const std::string lock_path = options.data_dir + "/LOCK";
  ScopedFd lock_fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!lock_fd.valid()) return ErrnoError(errno, "opening " + lock_path);
  if (::flock(lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return UnavailableError("data dir " + options.data_dir + " is in use by another warpscope-server");
    }
    return ErrnoError(errno, "locking " + lock_path);
  }
  std::unique_ptr<EmbeddedProfileStore> store(new EmbeddedProfileStore(options, std::move(lock_fd)));
  RETURN_IF_ERROR(store->Recover().WithContext("opening data dir " + options.data_dir));
  ASSIGN_OR_RETURN(store->cubins_, CubinDirectory::Open(options.data_dir + "/cubins", options.cubins,
                                                        [s = store.get()] { return s->Now(); }));
  if (options.background) store->bg_thread_ = std::thread([s = store.get()] { s->RunBackground(); });
  return store;
}

EmbeddedProfileStore::EmbeddedProfileStore(const EmbeddedStoreOptions& options, ScopedFd lock_fd)
    : options_(options), lock_fd_(std::move(lock_fd)) {}

EmbeddedProfileStore::~EmbeddedProfileStore() {
  if (bg_thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(bg_mu_);
      bg_stop_ = true;
    }
    bg_cv_.notify_all();
    bg_thread_.join();
  }
  if (options_.flush_on_close && wal_ != nullptr) {
    Status status = FlushNow();
    if (!status.ok()) LOG_WARNING() << "flush at close: " << status.ToString() << " (the WAL keeps the head)";
  }
}

int64_t EmbeddedProfileStore::Now() const {
  if (options_.now_ns) return options_.now_ns();
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * kSecondNs + ts.tv_nsec;
}

int64_t EmbeddedProfileStore::RetentionCutoff() const {
  if (options_.retention_ns <= 0) return INT64_MIN;
  return Now() - options_.retention_ns;
}

bool EmbeddedProfileStore::CrashPoint(std::string_view point) const {
  return options_.crash_point_for_test && options_.crash_point_for_test(point);
}

StatusOr<IngestResult> EmbeddedProfileStore::Ingest(const warpscope::v1::IngestBatch& batch) {
  RETURN_IF_ERROR(counters_.CheckSchema(batch));
  if (Status valid = dictionary::ValidateBatch(batch, options_.limits); !valid.ok()) {
    return counters_.Rejected(std::move(valid));
  }
  const std::string& agent = batch.agent_id();
  // One Ingest per agent at a time (a re-send racing its original waits).
  std::optional<storage::AgentIngestGate::Pass> pass = agents_.Enter(agent, batch.sequence());
  if (!pass) return counters_.Duplicate();

  ASSIGN_OR_RETURN(dictionary::InternedBatch ids, dictionary_->InternBatch(batch, {.record_sequence = false}));
  // Rows outside what the store keeps are left out and counted; the batch
  // itself is stored (its sequence too) even when nothing of it is kept.
  const storage::IngestTimeBounds bounds =
      storage::IngestTimeBounds::At(Now(), options_.retention_ns, options_.max_future_skew_ns);
  IngestResult result;
  std::vector<SampleRow> rows;
  rows.reserve(batch.samples_size() + batch.metric_points_size());
  for (const auto& s : batch.samples()) {
    if (!result.dropped.Keep(bounds, s.time_unix_nanos())) continue;
    rows.push_back(SampleRow{.time_ns = s.time_unix_nanos(),
                             .series_id = ids.label_set_ids[s.label_set()],
                             .stack_id = ids.stack_ids[s.stack()],
                             .value = s.value(),
                             .type_id = static_cast<uint32_t>(ids.type_ids[s.type()])});
  }
  result.samples = rows.size();
  for (const auto& p : batch.metric_points()) {
    if (!result.dropped.Keep(bounds, p.time_unix_nanos())) continue;
    rows.push_back(MetricRow(p.time_unix_nanos(), ids.label_set_ids[p.label_set()],
                             static_cast<uint32_t>(ids.metric_type_ids[p.metric()]), p.value()));
  }
  result.metric_points = rows.size() - result.samples;
  const GpuRows gpu = GpuRowsOf(batch, ids, bounds, &result.dropped);
  result.gpu_activities = gpu.activities.size();
  const std::string payload = EncodeHeadRecord(agent, batch.sequence(), rows, gpu);
  size_t head_rows = 0;
  {
    AppendGate::Shared gate(append_gate_);
    StatusOr<uint64_t> seq = wal_->Append(payload);
    if (!seq.ok()) {
      return seq.status().WithContext("storing batch of " + agent + " seq " + std::to_string(batch.sequence()));
    }
    {
      std::unique_lock<std::shared_mutex> lock(state_mu_);
      active_.insert(active_.end(), rows.begin(), rows.end());
      active_gpu_.Append(gpu);
      head_rows = active_.size() + active_gpu_.size();
    }
    agents_.Stored(agent, batch.sequence());
  }
  counters_.Stored(result);
  if (head_rows >= options_.head_max_rows) RequestFlush();
  return result;
}

void EmbeddedProfileStore::RequestFlush() {
  {
    std::lock_guard<std::mutex> lock(bg_mu_);
    bg_flush_requested_ = true;
  }
  bg_cv_.notify_all();
}

void EmbeddedProfileStore::RunBackground() {
  using Clock = std::chrono::steady_clock;
  const auto flush_every = std::chrono::nanoseconds(std::max<int64_t>(options_.flush_interval_ns, 1'000'000));
  const auto compact_every = std::chrono::nanoseconds(std::max<int64_t>(options_.compaction_interval_ns, 1'000'000));
  auto next_flush = Clock::now() + flush_every;
  auto next_compaction = Clock::now() + compact_every;
  std::unique_lock<std::mutex> lock(bg_mu_);
  while (!bg_stop_) {
    bg_cv_.wait_until(lock, std::min(next_flush, next_compaction), [&] { return bg_stop_ || bg_flush_requested_; });
    if (bg_stop_) break;
    const bool flush = bg_flush_requested_ || Clock::now() >= next_flush;
    const bool compact = Clock::now() >= next_compaction;
    bg_flush_requested_ = false;
    lock.unlock();
    if (flush) {
      if (Status s = FlushNow(); !s.ok()) LOG_WARNING() << "flush: " << s.ToString() << " (retrying later)";
      next_flush = Clock::now() + flush_every;
    }
    if (compact) {
      if (Status s = ApplyRetentionNow(); !s.ok()) LOG_WARNING() << "retention: " << s.ToString();
      if (Status s = CompactNow(); !s.ok()) LOG_WARNING() << "compaction: " << s.ToString();
      next_compaction = Clock::now() + compact_every;
    }
    lock.lock();
  }
}

StatusOr<storage::CubinPutResult> EmbeddedProfileStore::PutCubin(const std::string& hash, const std::string& bytes) {
  StatusOr<storage::CubinPutResult> result = cubins_->Put(hash, bytes);
  if (!result.ok()) return cubin_counters_.Invalid(result.status());
  return cubin_counters_.Count(*result);
}

StatusOr<std::optional<storage::CubinInfo>> EmbeddedProfileStore::FindCubin(const std::string& hash) {
  return cubins_->Find(hash, RetentionCutoff());
}

StatusOr<std::optional<std::string>> EmbeddedProfileStore::ReadCubin(const std::string& hash) {
  return cubins_->Read(hash, RetentionCutoff());
}

Status EmbeddedProfileStore::NoteCubinUses(const std::vector<std::string>& hashes) {
  cubins_->NoteUses(hashes);
  return Status::Ok();
}

storage::StoreStats EmbeddedProfileStore::stats() const {
  storage::StoreStats s = counters_.Stats();
  s.cubins = cubin_counters_.Stats();
  s.retention_paused = retention_paused_.load();
  return s;
}

EmbeddedStoreState EmbeddedProfileStore::state() const {
  EmbeddedStoreState out;
  std::shared_lock<std::shared_mutex> lock(state_mu_);
  out.segments = segments_->size();
  for (const auto& s : *segments_) {
    out.segment_rows += s->reader->total_rows();
    out.segment_files.push_back(SegmentFileName(s->lo, s->hi));
    if (s->rollup != nullptr) out.rollup_files.push_back(RollupFileName(s->lo, s->hi));
  }
  out.rollup_scans = rollup_scans_.load(std::memory_order_relaxed);
  out.damaged_blocks = damaged_blocks_.load(std::memory_order_relaxed);
  out.gaps = gaps_;
  out.head_rows = active_.size() + (frozen_ ? frozen_->size() : 0) + active_gpu_.size() +
                  (frozen_gpu_ ? frozen_gpu_->size() : 0);
  out.covered_seq = covered_seq_;
  out.cubins = cubins_->state();
  out.wal_next_seq = wal_->next_seq();
  return out;
}

}  // namespace warpscope::embedded
