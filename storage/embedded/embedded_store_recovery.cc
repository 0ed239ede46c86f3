// EmbeddedProfileStore: what Open does before the store serves, on the
// opening thread: open the dictionary, load the segments, check that the two
// belong together (store_consistency.h) and that every segment the manifest
// lists is there (dictionary/segment_manifest.h), replay the WAL into the
// head. Lost data stops the open unless options_.repair, which moves what
// cannot be read to quarantine/ and records the lost time ranges as gaps.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>

#include "base/logging.h"
#include "base/saturating.h"
#include "storage/embedded/embedded_store.h"
#include "storage/embedded/head_record.h"
#include "storage/embedded/quarantine.h"
#include "storage/embedded/store_consistency.h"

namespace warpscope::embedded {

using dictionary::ManifestEntry;
using dictionary::RecordedGap;

namespace {

bool FileExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// True when the data dir holds rows that refer to a dictionary: a segment
// file, or a WAL file with more than its header.
StatusOr<bool> HoldsData(const std::string& segments_dir, const std::string& wal_dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(segments_dir, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(segments_dir, ec)) {
      uint64_t lo = 0, hi = 0;
      if (ParseSegmentFileName(e.path().filename().string(), &lo, &hi)) return true;
    }
  }
  StatusOr<std::vector<wal::WalFile>> files = wal::ListWalFiles(wal_dir, nullptr);
  if (!files.ok()) return files.status().code() == StatusCode::kNotFound ? StatusOr<bool>(false) : files.status();
  for (const wal::WalFile& f : *files) {
    struct stat st {};
    if (::stat(f.path.c_str(), &st) != 0) return ErrnoError(errno, "stat " + f.path);
    if (static_cast<uint64_t>(st.st_size) > wal::kFileHeaderSize) return true;
  }
  return false;
}

std::string RowsBetween(int64_t min_time, int64_t max_time) {
  return "rows from " + FormatUnixTime(min_time) + " to " + FormatUnixTime(max_time);
}

// The time span of a WAL record's rows; false for a record without rows.
bool RecordSpan(const HeadRecord& record, int64_t* min_time, int64_t* max_time) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const SampleRow& r : record.rows) lo = std::min(lo, r.time_ns), hi = std::max(hi, r.time_ns);
  for (const GpuActivityRow& a : record.gpu.activities) lo = std::min(lo, a.start_ns), hi = std::max(hi, a.start_ns);
  for (const GpuCoverageRow& c : record.gpu.coverage) lo = std::min(lo, c.second_ns), hi = std::max(hi, c.second_ns);
  *min_time = lo;
  *max_time = hi;
  return lo <= hi;
}

}  // namespace

Status EmbeddedProfileStore::OpenDictionary() {
  const std::string path = options_.data_dir + "/dictionary.sqlite";
  const std::string wal_dir = options_.data_dir + "/wal";
  ASSIGN_OR_RETURN(const bool holds_data, HoldsData(segments_dir(), wal_dir));
  // With rows on disk a new, empty dictionary would hand out their ids again
  // and give old rows new meanings: refuse instead of creating one.
  if (holds_data && !FileExists(path)) return DictionaryBehind(path + " is missing but segments/ or wal/ hold data");
  StatusOr<std::unique_ptr<dictionary::DictionaryStore>> opened =
      dictionary::DictionaryStore::Open(path, options_.limits, {.create = !holds_data});
  if (!opened.ok()) {
    if (holds_data && opened.status().message().find("holds no dictionary") != std::string::npos) {
      return DictionaryBehind(path + " is empty but segments/ or wal/ hold data");
    }
    return opened.status();
  }
  dictionary_ = std::move(opened).value();
  return Status::Ok();
}

StatusOr<LoadedSegments> EmbeddedProfileStore::LoadStoreSegments() {
  LoadOptions load;
  if (options_.repair) load.quarantine_dir = quarantine_dir();
  StatusOr<LoadedSegments> loaded = LoadSegments(segments_dir(), load);
  if (!loaded.ok() && loaded.status().code() == StatusCode::kDataLoss) {
    return DataLossError(loaded.status().message() + "; start with " + std::string(kRepairOption) +
                         " to move it into " + quarantine_dir() +
                         "/ and serve the rest, its time range recorded as a gap in answers");
  }
  if (!loaded.ok()) return loaded.status();
  for (const QuarantinedSegment& q : loaded->quarantined) {
    LOG_WARNING() << "repair: moved segment " << q.name << ", which does not open (" << q.why.message() << "), to "
                  << q.moved_to;
  }
  return loaded;
}

Status EmbeddedProfileStore::ReconcileManifest(const LoadedSegments& loaded) {
  ASSIGN_OR_RETURN(std::vector<ManifestEntry> entries, dictionary_->ManifestEntries());
  const SegmentList& live = loaded.segments;  // ascending lo, disjoint
  dictionary::ManifestChange change;
  std::vector<ManifestEntry> missing;
  for (const ManifestEntry& e : entries) {
    // The only live segment that can cover e: the last one starting at or before it.
    auto it = std::upper_bound(live.begin(), live.end(), e.lo,
                               [](uint64_t lo, const std::shared_ptr<const Segment>& s) { return lo < s->lo; });
    if (it != live.begin() && (*std::prev(it))->hi >= e.hi) {
      const Segment& s = **std::prev(it);
      // Merged into a compaction output that crashed before recording it.
      if (s.lo != e.lo || s.hi != e.hi) change.removed.push_back(e);
      continue;
    }
    missing.push_back(e);
  }
  for (const auto& s : live) {
    // Published by a flush or compaction that crashed before recording it, or
    // written before the manifest existed.
    const bool listed = std::binary_search(entries.begin(), entries.end(), ManifestEntryOf(*s),
                                           [](const ManifestEntry& a, const ManifestEntry& b) {
                                             return std::tie(a.lo, a.hi) < std::tie(b.lo, b.hi);
                                           });
    if (!listed) change.added.push_back(ManifestEntryOf(*s));
  }
  std::map<std::string, const QuarantinedSegment*> quarantined;
  for (const QuarantinedSegment& q : loaded.quarantined) quarantined[q.name] = &q;
  const int64_t cutoff = RetentionCutoff();
  std::vector<std::string> refusals;
  for (const ManifestEntry& m : missing) {
    const std::string name = SegmentFileName(m.lo, m.hi);
    change.removed.push_back(m);
    if (m.max_time < cutoff) {
      LOG_INFO() << "segment " << name << " is gone, but every row it held is past retention";
      continue;
    }
    refusals.push_back("segment segments/" + name + " is missing (it held " + RowsBetween(m.min_time, m.max_time) +
                       ", WAL records " + std::to_string(m.lo) + " to " + std::to_string(m.hi) + ")");
    auto q = quarantined.find(name);
    const std::string reason =
        q != quarantined.end()
            ? "segment " + name + " does not open (" + q->second->why.message() + "); moved to " + q->second->moved_to
            : "segment " + name + " was missing at start-up";
    change.gaps_added.push_back(
        RecordedGap{.from_ns = m.min_time, .to_ns = SaturatingAdd(m.max_time, 1), .reason = reason + "; rows lost"});
    if (options_.repair) {
      LOG_WARNING() << "repair: " << reason << "; its " << RowsBetween(m.min_time, m.max_time) << " are lost";
    }
  }
  for (const QuarantinedSegment& q : loaded.quarantined) {
    const bool listed = std::any_of(missing.begin(), missing.end(),
                                    [&](const ManifestEntry& m) { return SegmentFileName(m.lo, m.hi) == q.name; });
    if (!listed) {
      LOG_WARNING() << "repair: " << q.name << " is not in the segment manifest, so when its rows were is not known "
                    << "(nothing is lost if it was a compaction output whose inputs are still there)";
    }
  }
  if (!refusals.empty() && !options_.repair) {
    std::string message;
    for (const std::string& r : refusals) message += (message.empty() ? "" : "; ") + r;
    return FailedPreconditionError(message + "; restore it, or start with " + std::string(kRepairOption) +
                                   " to serve without it, its time range recorded as a gap in answers");
  }
  RETURN_IF_ERROR(dictionary_->UpdateManifest(change));
  ASSIGN_OR_RETURN(gaps_, dictionary_->RecordedGaps());
  return Status::Ok();
}

Status EmbeddedProfileStore::ReplayWalIntoHead(const DictionaryMarks& marks, const std::vector<uint8_t>& is_metric_type,
                                               uint64_t* records, bool* repaired) {
  const std::string wal_dir = options_.data_dir + "/wal";
  struct RecordTimes {
    uint64_t seq;
    int64_t min_time, max_time;
  };
  std::vector<RecordTimes> times;  // with repair, ascending seq: when the lost records' neighbours were
  std::vector<uint64_t> delivered;  // with repair, ascending: the seqs replayed intact
  uint64_t undecodable = 0;
  bool repairing = false;
  // Every record still in the WAL feeds the duplicate check; those past what
  // segments hold also go back into the head.
  auto replay = [&](uint64_t seq, std::string_view payload) -> Status {
    const std::string what = "WAL record seq " + std::to_string(seq);
    StatusOr<HeadRecord> record = DecodeHeadRecord(payload, what);
    if (!record.ok()) {
      if (!repairing || record.status().code() != StatusCode::kDataLoss) return record.status();
      LOG_WARNING() << "repair: " << record.status().message() << "; its rows are lost";
      ++undecodable;
      return Status::Ok();
    }
    RETURN_IF_ERROR(CheckRecordIds(what, *record, marks, is_metric_type));
    agents_.Stored(record->agent_id, record->sequence);
    if (repairing) delivered.push_back(seq);
    if (int64_t lo = 0, hi = 0; repairing && RecordSpan(*record, &lo, &hi)) times.push_back({seq, lo, hi});
    if (seq > covered_seq_) {
      active_.insert(active_.end(), record->rows.begin(), record->rows.end());
      active_gpu_.Append(record->gpu);
    }
    return Status::Ok();
  };
  wal::ReplayStats stats;
  Status status = wal::ReplayWal(wal_dir, 0, {}, replay, &stats);
  *records = stats.records;
  if (status.ok() || status.code() != StatusCode::kDataLoss) return status;
  if (!options_.repair) {
    return DataLossError(status.message() + "; start with " + std::string(kRepairOption) + " to copy the damaged " +
                         "write-ahead log into " + quarantine_dir() +
                         "/ and start without the records it loses, their time range recorded as a gap in answers");
  }
  // Again from the start, stepping over the damage (the duplicate check only
  // ever rises, so what the first pass gave it stays right).
  active_.clear();
  active_gpu_ = {};
  repairing = true;
  RETURN_IF_ERROR(wal::ReplayWal(wal_dir, 0, {.skip_corrupt = true}, replay, &stats));
  *records = stats.records;
  *repaired = true;

  std::vector<RecordedGap> gaps;
  std::vector<std::string> to_copy;
  for (const wal::WalDamage& d : stats.damage) {
    if (!d.path.empty()) to_copy.push_back(d.path);
    const std::string where = d.path.empty() ? "a missing write-ahead log file" : d.path;
    // The runs of seqs the damaged range lost (unknown end: up to its start).
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    const uint64_t end = std::max(d.end_seq, d.first_seq + 1);
    for (uint64_t seq = d.first_seq; seq < end; ++seq) {
      if (std::binary_search(delivered.begin(), delivered.end(), seq)) continue;
      if (!runs.empty() && runs.back().second + 1 == seq) {
        runs.back().second = seq;
      } else {
        runs.emplace_back(seq, seq);
      }
    }
    for (const auto& [first, last] : runs) {
      // The lost rows lie among those of the nearest intact records before
      // and after: agents send in time order, a few seconds apart.
      int64_t lo = INT64_MAX, hi = INT64_MIN;
      auto after = std::lower_bound(times.begin(), times.end(), last + 1,
                                    [](const RecordTimes& t, uint64_t seq) { return t.seq < seq; });
      if (after != times.end()) lo = std::min(lo, after->min_time), hi = std::max(hi, after->max_time);
      if (after != times.begin() && std::prev(after)->seq < first) {
        lo = std::min(lo, std::prev(after)->min_time), hi = std::max(hi, std::prev(after)->max_time);
      }
      const std::string lost = "write-ahead log records " + std::to_string(first) + " to " + std::to_string(last) +
                               " (" + where + ") are unreadable";
      if (lo <= hi) {
        gaps.push_back(RecordedGap{.from_ns = lo, .to_ns = SaturatingAdd(hi, 1), .reason = lost + "; rows lost"});
        LOG_WARNING() << "repair: " << lost << "; their rows, from about " << FormatUnixTime(lo) << " to "
                      << FormatUnixTime(hi) << ", are lost";
      } else {
        LOG_WARNING() << "repair: " << lost << "; their rows are lost (time range unknown)";
      }
    }
    if (runs.empty()) LOG_WARNING() << "repair: " << where << " has " << d.lost_bytes << " damaged bytes";
  }
  if (undecodable > 0) {
    // Which file held them is not known: keep every file.
    ASSIGN_OR_RETURN(std::vector<wal::WalFile> files, wal::ListWalFiles(wal_dir, nullptr));
    for (const wal::WalFile& f : files) to_copy.push_back(f.path);
  }
  std::sort(to_copy.begin(), to_copy.end());
  to_copy.erase(std::unique(to_copy.begin(), to_copy.end()), to_copy.end());
  for (const std::string& path : to_copy) {
    ASSIGN_OR_RETURN(std::string copy, CopyToQuarantine(quarantine_dir(), path));
    LOG_WARNING() << "repair: copied " << path << " to " << copy;
  }
  RETURN_IF_ERROR(dictionary_->UpdateManifest({.gaps_added = gaps}));
  gaps_.insert(gaps_.end(), gaps.begin(), gaps.end());
  return Status::Ok();
}

void EmbeddedProfileStore::FlushRepairedWal() {
  // What the repaired replay put into the head goes to a segment, and every
  // WAL file it came from (the damaged ones, copied to quarantine/) can then
  // go, so the next start needs no repair.
  if (Status s = FlushNow(); !s.ok()) {
    LOG_WARNING() << "repair: flushing the replayed head: " << s.ToString()
                  << " (the damaged write-ahead log stays until a flush succeeds)";
    return;
  }
  Status s = dictionary_->RecordAgentSequences(agents_.StoredSequences());
  if (s.ok()) s = wal_->TruncateBefore(covered_seq_ + 1);
  if (!s.ok()) LOG_WARNING() << "repair: truncating the write-ahead log: " << s.ToString();
}

Status EmbeddedProfileStore::Recover() {
  RETURN_IF_ERROR(OpenDictionary());
  series_ = std::make_unique<SeriesCatalog>(dictionary_.get());
  stacks_ = std::make_unique<ResolvedStackCache>(dictionary_.get(), options_.stack_cache_bytes);
  const DictionaryMarks marks = dictionary_->Marks();

  ASSIGN_OR_RETURN(LoadedSegments loaded, LoadStoreSegments());
  for (const auto& s : loaded.segments) {
    RETURN_IF_ERROR(
        CheckSegmentMarks("segments/" + SegmentFileName(s->lo, s->hi), s->reader->dictionary_marks(), marks));
    covered_seq_ = std::max(covered_seq_, s->hi);
  }
  RETURN_IF_ERROR(ReconcileManifest(loaded));
  segments_ = std::make_shared<SegmentList>(std::move(loaded.segments));

  // WAL records carry their rows' ids: each must be in the dictionary.
  ASSIGN_OR_RETURN(std::vector<TypeEntry> types, series_->Types("", TypeKind::kAny));
  std::vector<uint8_t> is_metric_type(marks.max_type_id + 1, 0);
  for (const TypeEntry& t : types) {
    if (t.id < is_metric_type.size()) is_metric_type[t.id] = t.is_metric();
  }
  for (auto& [agent, sequence] : dictionary_->AgentSequences()) agents_.Stored(agent, sequence);
  uint64_t replayed = 0;
  bool repaired_wal = false;
  RETURN_IF_ERROR(ReplayWalIntoHead(marks, is_metric_type, &replayed, &repaired_wal));

  const std::string wal_dir = options_.data_dir + "/wal";
  ASSIGN_OR_RETURN(wal_, wal::WalWriter::Open(wal_dir, options_.wal));
  if (wal_->next_seq() <= covered_seq_) {
    // New records would get seqs that segments already claim, and a later
    // replay would skip them: refuse rather than lose data.
    return FailedPreconditionError("the WAL in " + wal_dir + " continues at seq " + std::to_string(wal_->next_seq()) +
                                   " but segments hold records up to " + std::to_string(covered_seq_) +
                                   "; was wal/ deleted?");
  }
  if (repaired_wal) FlushRepairedWal();
  LOG_INFO() << "embedded store " << options_.data_dir << ": " << segments_->size() << " segments, " << replayed
             << " WAL records replayed, " << active_.size() << " rows and " << active_gpu_.activities.size()
             << " GPU activities in the head" << (gaps_.empty() ? "" : ", " + std::to_string(gaps_.size()) +
                                                                          " time ranges recorded as lost");
  return Status::Ok();
}

}  // namespace warpscope::embedded
