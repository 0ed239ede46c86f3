// EmbeddedProfileStore: the default ProfileStore, all in one data directory.
//
//   <data_dir>/LOCK               flock'ed while a server has the dir open
//   <data_dir>/dictionary.sqlite  strings, frames, stacks, label sets, types,
//                                 each agent's highest stored sequence, the
//                                 dictionary's identity, the segment manifest
//                                 and the time ranges recorded as lost
//   <data_dir>/wal/               the write-ahead log of the head (wal/wal.h;
//                                 records: head_record.h)
//   <data_dir>/segments/          immutable segment files (segment_file.h),
//                                 named by the WAL range they hold (segment_catalog.h)
//   <data_dir>/quarantine/        files a start with `repair` could not read
//                                 (quarantine.h); never read by the store
//   <data_dir>/cubins/            the cubins, one file each, named by their
//                                 hash (cubin_directory.h)
//
// Ingest: validate -> duplicate check on (agent_id, sequence) -> intern the
// dictionaries (SQLite, durable, but *not* the sequence) -> leave out rows
// outside the time bounds (counted in the answer) -> append one WAL
// record with the rows (samples, and metric points as rows of metric types:
// metric_row.h) in global ids and the (agent, sequence) -> rows into
// the in-memory head -> the agent's sequence counts as stored -> OK. The
// sequence only counts once the rows are durable, so a crash anywhere before
// the WAL append leaves the agent's re-send welcome, and a crash after it
// replays the record and the re-send is a duplicate. Sequences reach SQLite
// at flush time, before the WAL records carrying them are deleted.
//
// Flush (every flush_interval, or when the head passes head_max_rows):
// freeze the head and note the WAL seq range it holds -> rotate the WAL ->
// write the frozen rows as segments/seg-<lo>-<hi>.wss -> publish the segment
// and drop the frozen head in one step (queries never see a row twice) ->
// record agent sequences -> delete WAL files below hi. Compaction merges runs
// of small segments adjacent in WAL order into one [lo, hi] file; retention
// deletes segments wholly older than now - retention and queries ignore rows
// older than that; it deletes cubins unused for as long too. dictionary.sqlite also keeps the manifest of published
// segments (dictionary/segment_manifest.h), updated by each of these steps.
//
// Damage: a damaged block of a segment is skipped and the answer carries a
// DataGap for its time range (logged once per segment; compaction leaves the
// segment alone). At open, a segment or WAL record of another or an older
// dictionary stops the store (store_consistency.h); so do a missing segment
// (one the manifest lists), a segment that does not open and a damaged WAL
// record, unless `repair`: the unreadable files go to quarantine/, the lost
// time ranges are recorded as gaps that every overlapping answer reports,
// and the store starts.
//
// Threading: every ProfileStore method may be called from any number of
// threads (the server's HTTP workers). Flush, compaction and retention run on
// the store's background thread (or the caller's, for the ...Now methods),
// serialized by maintenance_mu_. Ingest holds append_gate_ shared from the
// WAL append until its rows are in the head, so appends still group-commit;
// a flush takes it exclusively for the instant it freezes the head.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/file_util.h"
#include "base/status.h"
#include "storage/embedded/append_gate.h"
#include "storage/embedded/cubin_directory.h"
#include "storage/embedded/dictionary/dictionary_store.h"
#include "storage/embedded/gpu_activity_row.h"
#include "storage/embedded/resolved_stack_cache.h"
#include "storage/embedded/segment_catalog.h"
#include "storage/embedded/segment_file.h"
#include "storage/embedded/series_catalog.h"
#include "storage/embedded/wal/wal.h"
#include "storage/agent_ingest_gate.h"
#include "storage/ingest_counters.h"
#include "storage/profile_store.h"
#include "storage/retention_clock_guard.h"

namespace warpscope::embedded {

inline constexpr int64_t kSecondNs = 1'000'000'000;
// How many head rows (or series) a query handles between two looks at its
// deadline: one clock read per few thousand rows costs nothing measurable.
inline constexpr size_t kRowsPerDeadlineCheck = 4096;

struct EmbeddedStoreOptions {
  std::string data_dir;
  // Segments wholly older than now - retention are deleted and older rows are
  // left out of answers. 0 keeps everything.
  int64_t retention_ns = 14 * 24 * 3600 * kSecondNs;
  // A retention pass stands aside (warns, counts retention_paused) while now
  // is more than this ahead of the newest row: a clock stepped forward must
  // not delete everything (storage/retention_clock_guard.h). 0: never.
  int64_t retention_clock_guard_ns = storage::kRetentionClockJumpNs;
  // Rows (samples, metric points, GPU activities, coverage rows) dated more
  // than this ahead of the server's clock, or older than retention, are left
  // out at ingest and counted in the answer (storage/ingest_time_bounds.h):
  // a node with a bad clock cannot pin a segment past retention.
  int64_t max_future_skew_ns = storage::kDefaultMaxFutureSkewNs;
  int64_t flush_interval_ns = 5 * kSecondNs;
  // The head is flushed early once it holds this many rows.
  uint64_t head_max_rows = 2'000'000;
  CompactionPolicy compaction;
  // How often the background thread runs compaction and retention.
  int64_t compaction_interval_ns = 60 * kSecondNs;
  // Run the background flush/compaction thread. Tests turn it off and call
  // FlushNow/CompactNow/ApplyRetentionNow themselves.
  bool background = true;
  // Flush the head when the store is destroyed (a clean shutdown). Off, the
  // destructor leaves the files exactly as a kill -9 would.
  bool flush_on_close = true;
  // Unix nanoseconds; the wall clock when empty.
  std::function<int64_t()> now_ns;
  dictionary::BatchLimits limits;
  // Resolved stacks and their locations' frames kept in memory between
  // queries (resolved_stack_cache.h), in estimated heap bytes. Ample for the
  // server_load fleet: its whole hour (13k stacks of depth 20-40, 9.5k
  // distinct frames) left 16 MB resident after the query.
  size_t stack_cache_bytes = size_t{64} << 20;
  SegmentWriteOptions segment;
  // The cubins under <data_dir>/cubins/ (cubin_directory.h).
  storage::CubinLimits cubins;
  // A compaction output of at least this many rows gets a rollup
  // (segment_catalog.h) when the rollup is at least this many times smaller.
  uint64_t min_rollup_input_rows = 10'000;
  uint64_t min_rollup_reduction = 4;
  wal::WalOptions wal;
  // Start past what open would refuse for lost data, keeping every file: a
  // segment that does not open is moved to <data_dir>/quarantine/, a WAL file
  // with damaged records is copied there (and the intact records are flushed
  // at once, so the log no longer needs it), a missing segment is forgotten;
  // each lost time range is logged and recorded as a gap that answers
  // overlapping it report (storage::DataGap). Never needed for a crash. Off:
  // open refuses and the message names this option.
  bool repair = false;
  // Tests only: called at named points of flush and compaction ("flush:frozen",
  // "flush:segment_written", "flush:sequences_recorded", "compact:output_written",
  // "compact:rollup_written", "compact:input_deleted", "retention:manifest_updated"); returning true
  // stops the operation right there,
  // leaving the files as a crash at that point would. The store must then be
  // destroyed with flush_on_close off, like a dead process.
  std::function<bool(std::string_view point)> crash_point_for_test;
};

// The segment manifest's record of a published segment.
inline dictionary::ManifestEntry ManifestEntryOf(const Segment& s) {
  return dictionary::ManifestEntry{
      .lo = s.lo, .hi = s.hi, .min_time = s.reader->data_min_time(), .max_time = s.reader->data_max_time()};
}

// What is where, for tests and metrics.
struct EmbeddedStoreState {
  size_t segments = 0;
  uint64_t segment_rows = 0;
  uint64_t head_rows = 0;     // active + frozen
  uint64_t covered_seq = 0;   // WAL records up to here are in segments
  uint64_t wal_next_seq = 0;
  std::vector<std::string> segment_files;  // names, ascending WAL range
  std::vector<std::string> rollup_files;   // of the segments that have one
  uint64_t rollup_scans = 0;               // segments a query read from their rollup, since open
  uint64_t damaged_blocks = 0;             // distinct damaged segment blocks queries or compaction met, since open
  std::vector<dictionary::RecordedGap> gaps;  // time ranges known lost (repair), reported by answers
  CubinDirectoryState cubins;
};

class EmbeddedProfileStore final : public storage::ProfileStore {
 public:
  // Creates the layout if needed, takes the dir's lock (Unavailable: "data dir
  // X is in use by another warpscope-server"), deletes what a crash left dead,
  // loads segments and replays the WAL into the head.
  static StatusOr<std::unique_ptr<EmbeddedProfileStore>> Open(const EmbeddedStoreOptions& options);
  ~EmbeddedProfileStore() override;

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

  // Maintenance, normally run by the background thread; any thread may call
  // them (they serialize with it). FlushNow moves the whole head to a segment.
  Status FlushNow();
  Status CompactNow();
  Status ApplyRetentionNow();
  EmbeddedStoreState state() const;

 private:
  EmbeddedProfileStore(const EmbeddedStoreOptions& options, ScopedFd lock_fd);

  // Recovery at open (embedded_store_recovery.cc).
  Status Recover();
  Status OpenDictionary();
  StatusOr<LoadedSegments> LoadStoreSegments();
  // Checks the manifest against the loaded segments: a missing one refuses
  // the open, or with repair becomes a recorded gap; brings it up to date.
  Status ReconcileManifest(const LoadedSegments& loaded);
  // Replays the WAL into the head and the duplicate check. *repaired: repair
  // stepped over damage (quarantined, recorded as gaps).
  Status ReplayWalIntoHead(const DictionaryMarks& marks, const std::vector<uint8_t>& is_metric_type,
                           uint64_t* records, bool* repaired);
  // After a repaired replay: flushes the head and truncates the WAL so that
  // the damaged files (copied to quarantine/) are gone from wal/.
  void FlushRepairedWal();
  std::string quarantine_dir() const { return options_.data_dir + "/quarantine"; }
  int64_t Now() const;
  // Oldest time a query may see; INT64_MIN without retention.
  int64_t RetentionCutoff() const;
  bool CrashPoint(std::string_view point) const;
  void RunBackground();
  void RequestFlush();

  // Maintenance bodies; maintenance_mu_ held.
  Status FlushLocked();
  Status CompactLocked();
  Status CompactRun(const std::vector<std::shared_ptr<const Segment>>& inputs);
  // Writes the rollup of a compaction output; null when not worth it.
  StatusOr<std::unique_ptr<SegmentReader>> WriteRollup(const Segment& segment);
  Status RetentionLocked();
  Status CubinRetentionLocked();
  // The newest row's time (head and segments), INT64_MIN without rows.
  int64_t NewestRowTime() const;

  // Visits every row of the given types in [from, to) whose series passes
  // `series_filter` (called per row for head rows, per run for segments),
  // from the head and every overlapping segment, each row exactly once.
  // kSummed: the visitor ignores row times (it sums over the range), so a
  // segment lying wholly inside the range may be read from its rollup, whose
  // rows carry the segment's min time. Stops with the context's status once
  // the query is past its deadline or cancelled (checked per segment block
  // and every kRowsPerDeadlineCheck head rows); `context` may be null.
  enum class RowTimes { kNeeded, kSummed };
  Status ScanRows(storage::QueryContext* context, const std::vector<TypeEntry>& types, int64_t from_ns, int64_t to_ns,
                  const std::function<bool(uint64_t)>& series_filter,
                  const std::function<void(const SampleRow&)>& visit,
                  RowTimes times = RowTimes::kNeeded);

  // Groups the selected series by the values of `names` (sorted, unique):
  // group[series id] is the group's index (-1 for series not in `series`),
  // values[g] its label values.
  struct SeriesGroups {
    std::vector<int32_t> group;
    std::vector<std::vector<std::string>> values;  // sorted
  };
  // Visits the GPU activities with start in [from, to) and the coverage rows
  // with second in [coverage_from, to) whose series passes `series_filter`,
  // from the head and every segment, each row exactly once. A visitor
  // returning false stops the scan (OK). Deadlines as in ScanRows.
  Status ScanGpu(storage::QueryContext* context, int64_t from_ns, int64_t coverage_from_ns, int64_t to_ns,
                 const std::function<bool(uint64_t)>& series_filter,
                 const std::function<bool(const GpuActivityRow&)>& visit_activity,
                 const std::function<void(const GpuCoverageRow&)>& visit_coverage);

  StatusOr<SeriesGroups> GroupSeries(storage::QueryContext* context, const std::vector<uint64_t>& series,
                                     const std::vector<std::string>& names);

  // A damaged block a scan met: recorded in the segment (counted, logged once
  // per segment). Returns the gap it leaves in answers.
  storage::DataGap NoteDamagedBlock(const Segment& segment, bool rollup, const DamagedBlock& block);
  // Adds to `context` the recorded gaps overlapping [from, to); state_mu_ held.
  void AddRecordedGapsLocked(storage::QueryContext* context, int64_t from_ns, int64_t to_ns) const;

  std::string segments_dir() const { return options_.data_dir + "/segments"; }

  const EmbeddedStoreOptions options_;
  ScopedFd lock_fd_;  // holds the data dir's flock for the store's life; destroyed last
  std::unique_ptr<dictionary::DictionaryStore> dictionary_;
  std::unique_ptr<SeriesCatalog> series_;
  std::unique_ptr<ResolvedStackCache> stacks_;
  std::unique_ptr<wal::WalWriter> wal_;
  std::unique_ptr<CubinDirectory> cubins_;

  // Shared by Ingest from its WAL append until its rows are in the head and
  // its sequence in agents_; exclusive for a flush's freeze, which therefore
  // sees every record below wal_->next_seq() in the head.
  AppendGate append_gate_;

  // Guards the head and the segment list. Queries hold it shared while they
  // scan the head and take a snapshot of segments_; a flush swaps the frozen
  // head for its segment under it exclusively, so no row is seen twice.
  mutable std::shared_mutex state_mu_;
  std::vector<SampleRow> active_;                         // rows since the last freeze
  std::shared_ptr<const std::vector<SampleRow>> frozen_;  // being written to a segment
  GpuRows active_gpu_;                                    // GPU rows since the last freeze
  std::shared_ptr<const GpuRows> frozen_gpu_;             // frozen with frozen_ (both set or both null)
  uint64_t frozen_lo_ = 0, frozen_hi_ = 0;                // its WAL range
  std::shared_ptr<const SegmentList> segments_ = std::make_shared<SegmentList>();
  std::vector<dictionary::RecordedGap> gaps_;  // as in the manifest's data_gaps

  // Per-agent duplicate check: the highest sequence durable in the WAL or
  // segments, and one Ingest per agent between its check and its WAL append,
  // so two concurrent re-sends cannot both pass.
  storage::AgentIngestGate agents_;

  // Maintenance: one at a time.
  std::mutex maintenance_mu_;
  uint64_t covered_seq_ = 0;  // guarded by maintenance_mu_ (writes) and state_mu_ (state())
  std::vector<std::pair<std::string, uint64_t>> pending_sequences_;  // to record before truncating

  // Background thread control.
  std::mutex bg_mu_;
  std::condition_variable bg_cv_;
  bool bg_stop_ = false;
  bool bg_flush_requested_ = false;
  std::thread bg_thread_;

  std::atomic<uint64_t> rollup_scans_{0};
  std::atomic<uint64_t> retention_paused_{0};
  std::atomic<uint64_t> damaged_blocks_{0};
  storage::IngestCounters counters_;
  storage::CubinCounters cubin_counters_;
};

}  // namespace warpscope::embedded
