// EmbeddedProfileStore: flush, compaction and retention. All run under
// maintenance_mu_, on the background thread or a caller of the ...Now methods.
// The crash points name the places a kill -9 may strike between durable
// steps; segment_catalog.h explains why every one of them leaves each row in
// exactly one live place.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>

#include "base/logging.h"
#include "base/saturating.h"
#include "storage/embedded/embedded_store.h"

namespace warpscope::embedded {
namespace {

Status FsyncDir(const std::string& dir) {
  ScopedFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "open " + dir);
  if (::fsync(fd.get()) != 0) return ErrnoError(errno, "fsync " + dir);
  return Status::Ok();
}

Status SimulatedCrash(std::string_view point) {
  return InternalError("simulated crash at " + std::string(point));
}

// The segment first: a rollup left alone is dead at the next Open.
Status DeleteSegmentFiles(const Segment& segment) {
  for (const SegmentReader* r : {segment.reader.get(), segment.rollup.get()}) {
    if (r != nullptr && ::unlink(r->path().c_str()) != 0 && errno != ENOENT) {
      return ErrnoError(errno, "delete " + r->path());
    }
  }
  return Status::Ok();
}

struct RollupKey {
  uint64_t series, stack;
  bool operator==(const RollupKey&) const = default;
};
struct RollupKeyHash {
  size_t operator()(const RollupKey& k) const { return std::hash<uint64_t>{}(k.series * 0x9E3779B97F4A7C15ull ^ k.stack); }
};

}  // namespace

StatusOr<std::unique_ptr<SegmentReader>> EmbeddedProfileStore::WriteRollup(const Segment& segment) {
  const SegmentReader& reader = *segment.reader;
  if (reader.row_count() < options_.min_rollup_input_rows) return std::unique_ptr<SegmentReader>();
  // Profile types only: metric rows keep their value in the key (metric_row.h)
  // and their queries always need time.
  ASSIGN_OR_RETURN(std::vector<TypeEntry> types, series_->Types("", TypeKind::kProfile));
  std::vector<SampleRow> rows;
  uint64_t profile_rows = 0;
  for (const TypeEntry& t : types) {
    std::unordered_map<RollupKey, int64_t, RollupKeyHash> sums;
    RETURN_IF_ERROR(reader.Scan(INT64_MIN, INT64_MAX, nullptr, t.id, [&](const SampleRow& r) {
      SaturatingAddTo(sums[RollupKey{r.series_id, r.stack_id}], r.value);
      ++profile_rows;
    }));
    for (const auto& [key, value] : sums) {
      SampleRow row;
      row.time_ns = reader.min_time();
      row.type_id = t.id;
      row.series_id = key.series;
      row.stack_id = key.stack;
      row.value = value;
      rows.push_back(row);
    }
  }
  // Worth a file only when it saves most of the scan.
  if (rows.empty() || rows.size() * options_.min_rollup_reduction > profile_rows) {
    return std::unique_ptr<SegmentReader>();
  }
  const std::string path = segments_dir() + "/" + RollupFileName(segment.lo, segment.hi);
  RETURN_IF_ERROR(WriteSegment(path, std::move(rows), {}, segment.reader->dictionary_marks(), options_.segment));
  return SegmentReader::Open(path);
}

Status EmbeddedProfileStore::FlushNow() {
  std::lock_guard<std::mutex> lock(maintenance_mu_);
  return FlushLocked();
}

Status EmbeddedProfileStore::CompactNow() {
  std::lock_guard<std::mutex> lock(maintenance_mu_);
  return CompactLocked();
}

Status EmbeddedProfileStore::ApplyRetentionNow() {
  std::lock_guard<std::mutex> lock(maintenance_mu_);
  if (options_.retention_ns > 0) {
    const int64_t now = Now(), newest = NewestRowTime();
    if (storage::RetentionMustPause(now, newest, options_.retention_clock_guard_ns)) {
      retention_paused_++;
      LOG_WARNING_EVERY_N_SEC(600) << "retention paused: the clock (" << now / kSecondNs
                                   << " s) is " << (now - newest) / kSecondNs
                                   << " s ahead of the newest row; a clock stepped forward would delete data for "
                                      "good. Deleting resumes once rows arrive at times near the clock";
      return Status::Ok();
    }
  }
  RETURN_IF_ERROR(RetentionLocked());
  return CubinRetentionLocked();
}

int64_t EmbeddedProfileStore::NewestRowTime() const {
  int64_t newest = INT64_MIN;
  std::shared_lock<std::shared_mutex> lock(state_mu_);
  for (const auto& s : *segments_) {
    if (s->reader->total_rows() > 0) newest = std::max(newest, s->reader->data_max_time());
  }
  for (const SampleRow& r : active_) newest = std::max(newest, r.time_ns);
  if (frozen_) {
    for (const SampleRow& r : *frozen_) newest = std::max(newest, r.time_ns);
  }
  return newest;
}

Status EmbeddedProfileStore::CubinRetentionLocked() {
  const int64_t cutoff = RetentionCutoff();
  if (cutoff == INT64_MIN) return Status::Ok();
  const StatusOr<uint64_t> removed = cubins_->RemoveUnusedBefore(cutoff);
  if (!removed.ok()) return removed.status().WithContext("cubin retention");
  cubin_counters_.Expired(*removed);
  if (*removed > 0) LOG_INFO() << "retention deleted " << *removed << " cubins unused for longer than the retention";
  return Status::Ok();
}

Status EmbeddedProfileStore::FlushLocked() {
  // A frozen head left by a failed flush (disk full) is written first; the
  // active head keeps growing meanwhile and its WAL records stay.
  if (frozen_ == nullptr) {
    {
      AppendGate::Exclusive gate(append_gate_);
      // No Ingest is between its WAL append and its head insert now: every
      // record below next_seq is in the head or in segments, and its
      // sequence is in agents_.
      const uint64_t hi = wal_->next_seq() - 1;
      if (hi <= covered_seq_) return Status::Ok();  // nothing appended since the last flush
      pending_sequences_ = agents_.StoredSequences();
      std::unique_lock<std::shared_mutex> lock(state_mu_);
      frozen_ = std::make_shared<const std::vector<SampleRow>>(std::move(active_));
      active_ = {};
      frozen_gpu_ = std::make_shared<const GpuRows>(std::move(active_gpu_));
      active_gpu_ = {};
      frozen_lo_ = covered_seq_ + 1;
      frozen_hi_ = hi;
    }
    // Records appended from now on go to a new file, so the ones frozen can
    // be deleted below. Failing here only means that happens a flush later.
    if (Status s = wal_->Rotate(); !s.ok()) LOG_WARNING() << "WAL rotation: " << s.ToString();
  }
  if (CrashPoint("flush:frozen")) return SimulatedCrash("flush:frozen");

  std::shared_ptr<Segment> segment;
  if (!frozen_->empty() || !frozen_gpu_->empty()) {
    const std::string path = segments_dir() + "/" + SegmentFileName(frozen_lo_, frozen_hi_);
    // Every id in the rows was interned before its WAL append: the
    // dictionary's marks now cover them (dictionary_marks.h).
    RETURN_IF_ERROR(WriteSegment(path, *frozen_, *frozen_gpu_, dictionary_->Marks(), options_.segment)
                        .WithContext("flushing the head"));
    if (CrashPoint("flush:segment_written")) return SimulatedCrash("flush:segment_written");
    segment = std::make_shared<Segment>();
    segment->lo = frozen_lo_;
    segment->hi = frozen_hi_;
    ASSIGN_OR_RETURN(segment->reader, SegmentReader::Open(path));
    // Listed once it is in place: the manifest never claims a file not yet
    // written (a crash before this leaves a live file the next open lists).
    RETURN_IF_ERROR(
        dictionary_->UpdateManifest({.added = {ManifestEntryOf(*segment)}}).WithContext("flushing the head"));
  }
  {
    // The hand-off: queries see the rows either in the frozen head or in the
    // segment, never both.
    std::unique_lock<std::shared_mutex> lock(state_mu_);
    if (segment != nullptr) {
      auto list = std::make_shared<SegmentList>(*segments_);
      list->push_back(std::move(segment));
      segments_ = std::move(list);
    }
    frozen_.reset();
    frozen_gpu_.reset();
    covered_seq_ = frozen_hi_;
  }
  // Sequences of the records about to be deleted must be in SQLite first. On
  // failure the WAL simply stays; the next flush records a newer snapshot.
  RETURN_IF_ERROR(dictionary_->RecordAgentSequences(pending_sequences_));
  if (CrashPoint("flush:sequences_recorded")) return SimulatedCrash("flush:sequences_recorded");
  return wal_->TruncateBefore(covered_seq_ + 1);
}

Status EmbeddedProfileStore::CompactLocked() {
  std::shared_ptr<const SegmentList> snapshot;
  {
    std::shared_lock<std::shared_mutex> lock(state_mu_);
    snapshot = segments_;
  }
  // Only this thread changes the list (maintenance_mu_), so the plan stays valid.
  for (const auto& [begin, end] : PlanCompaction(*snapshot, options_.compaction)) {
    std::vector<std::shared_ptr<const Segment>> inputs(snapshot->begin() + begin, snapshot->begin() + end);
    Status status = CompactRun(inputs);
    // An input found damaged is left as it is from now on (PlanCompaction);
    // the other runs go on.
    const bool damaged = std::any_of(inputs.begin(), inputs.end(), [](const auto& in) { return in->damage.any(); });
    if (!status.ok() && damaged) {
      LOG_WARNING() << "compaction leaves a damaged segment as it is: " << status.ToString();
      continue;
    }
    RETURN_IF_ERROR(status);
  }
  return Status::Ok();
}

Status EmbeddedProfileStore::CompactRun(const std::vector<std::shared_ptr<const Segment>>& inputs) {
  // Every type, metric types too: a metric row goes through WriteSegment's
  // merge like a sample row (metric_row.h says why that keeps every point).
  ASSIGN_OR_RETURN(std::vector<TypeEntry> types, series_->Types("", TypeKind::kAny));
  const int64_t cutoff = RetentionCutoff();
  std::vector<SampleRow> rows;
  GpuRows gpu;
  uint64_t input_rows = 0;
  for (const auto& in : inputs) input_rows += in->reader->total_rows();
  rows.reserve(input_rows);
  for (const auto& in : inputs) {
    // A damaged block stops the run: merged, its rows would silently vanish.
    ScanHooks hooks;
    hooks.on_damaged_block = [&](const DamagedBlock& block) {
      NoteDamagedBlock(*in, /*rollup=*/false, block);
      return block.status;
    };
    for (const TypeEntry& t : types) {
      RETURN_IF_ERROR(in->reader->Scan(
          cutoff, INT64_MAX, nullptr, t.id, [&](const SampleRow& row) { rows.push_back(row); }, hooks));
    }
    // GPU rows are carried over as they are: never merged (gpu_activity_row.h).
    RETURN_IF_ERROR(in->reader->ScanGpuActivities(
        cutoff, INT64_MAX, nullptr, [&](const GpuActivityRow& row) { gpu.activities.push_back(row); }, hooks));
    RETURN_IF_ERROR(in->reader->ScanGpuCoverage(
        cutoff, INT64_MAX, nullptr, [&](const GpuCoverageRow& row) { gpu.coverage.push_back(row); }, hooks));
  }
  const uint64_t lo = inputs.front()->lo, hi = inputs.back()->hi;
  const std::string path = segments_dir() + "/" + SegmentFileName(lo, hi);
  RETURN_IF_ERROR(WriteSegment(path, std::move(rows), std::move(gpu), dictionary_->Marks(), options_.segment)
                      .WithContext("compacting"));
  if (CrashPoint("compact:output_written")) return SimulatedCrash("compact:output_written");
  auto output = std::make_shared<Segment>();
  output->lo = lo;
  output->hi = hi;
  ASSIGN_OR_RETURN(output->reader, SegmentReader::Open(path));
  // The rollup is an optional copy: failing to write it costs query speed only.
  if (StatusOr<std::unique_ptr<SegmentReader>> rollup = WriteRollup(*output); !rollup.ok()) {
    LOG_WARNING() << "rollup of " << path << ": " << rollup.status().ToString();
  } else {
    output->rollup = std::move(rollup).value();
  }
  if (CrashPoint("compact:rollup_written")) return SimulatedCrash("compact:rollup_written");
  // The output replaces its inputs in the manifest in one transaction. On
  // failure the output stays: by its name it already makes the inputs dead
  // at the next open, and the manifest lists either them (covered by it) or it.
  dictionary::ManifestChange change;
  for (const auto& in : inputs) change.removed.push_back(ManifestEntryOf(*in));
  change.added.push_back(ManifestEntryOf(*output));
  RETURN_IF_ERROR(dictionary_->UpdateManifest(change).WithContext("compacting"));
  {
    std::unique_lock<std::shared_mutex> lock(state_mu_);
    auto list = std::make_shared<SegmentList>();
    bool placed = false;
    for (const auto& s : *segments_) {
      if (std::find(inputs.begin(), inputs.end(), s) != inputs.end()) {
        if (!placed) list->push_back(output);
        placed = true;
      } else {
        list->push_back(s);
      }
    }
    segments_ = std::move(list);
  }
  // The output's name already makes the inputs dead (segment_catalog.h); a
  // crash from here on only leaves files that the next Open deletes. Queries
  // still reading an input keep it alive through their open fd.
  for (const auto& in : inputs) {
    RETURN_IF_ERROR(DeleteSegmentFiles(*in));
    if (CrashPoint("compact:input_deleted")) return SimulatedCrash("compact:input_deleted");
  }
  LOG_DEBUG() << "compacted " << inputs.size() << " segments (" << input_rows << " rows) into " << path;
  return FsyncDir(segments_dir());
}

Status EmbeddedProfileStore::RetentionLocked() {
  const int64_t cutoff = RetentionCutoff();
  if (cutoff == INT64_MIN) return Status::Ok();
  std::vector<std::shared_ptr<const Segment>> expired;
  auto list = std::make_shared<SegmentList>();
  bool gaps_expired = false;
  {
    // Only this thread changes the list (maintenance_mu_): it stays as read here.
    std::shared_lock<std::shared_mutex> lock(state_mu_);
    for (const auto& s : *segments_) {
      const SegmentReader& r = *s->reader;
      if (r.total_rows() == 0 || r.data_max_time() < cutoff) {
        expired.push_back(s);
      } else {
        list->push_back(s);
      }
    }
    for (const dictionary::RecordedGap& g : gaps_) gaps_expired |= g.to_ns <= cutoff;
  }
  if (expired.empty() && !gaps_expired) return Status::Ok();
  // Out of the manifest before the files go: a crash in between leaves files
  // the next open lists again, and the next retention deletes.
  dictionary::ManifestChange change;
  for (const auto& s : expired) change.removed.push_back(ManifestEntryOf(*s));
  change.drop_gaps_before = cutoff;
  RETURN_IF_ERROR(dictionary_->UpdateManifest(change).WithContext("retention"));
  if (CrashPoint("retention:manifest_updated")) return SimulatedCrash("retention:manifest_updated");
  {
    std::unique_lock<std::shared_mutex> lock(state_mu_);
    segments_ = std::move(list);
    std::erase_if(gaps_, [&](const dictionary::RecordedGap& g) { return g.to_ns <= cutoff; });
  }
  if (expired.empty()) return Status::Ok();
  // Deleting a segment can let WAL records of its range (if their file is
  // still there) be replayed at the next Open: their rows are all older than
  // the cutoff too, so answers never show them and the next flush and
  // retention drop them again.
  for (const auto& s : expired) RETURN_IF_ERROR(DeleteSegmentFiles(*s));
  LOG_INFO() << "retention deleted " << expired.size() << " segments";
  return FsyncDir(segments_dir());
}

}  // namespace warpscope::embedded
