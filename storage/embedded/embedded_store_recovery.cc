// EmbeddedProfileStore: what Open does before the store serves, on the
// opening thread: open the dictionary, load the segments, check that the two
// belong together (store_consistency.h), replay the WAL into the head.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "base/logging.h"
#include "storage/embedded/embedded_store.h"
#include "storage/embedded/head_record.h"
#include "storage/embedded/store_consistency.h"

namespace warpscope::embedded {
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

Status EmbeddedProfileStore::Recover() {
  RETURN_IF_ERROR(OpenDictionary());
  series_ = std::make_unique<SeriesCatalog>(dictionary_.get());
  stacks_ = std::make_unique<ResolvedStackCache>(dictionary_.get(), options_.stack_cache_bytes);
  const DictionaryMarks marks = dictionary_->Marks();

  ASSIGN_OR_RETURN(LoadedSegments loaded, LoadSegments(segments_dir()));
  for (const auto& s : loaded.segments) {
    RETURN_IF_ERROR(CheckSegmentMarks("segments/" + SegmentFileName(s->lo, s->hi), s->reader->dictionary_marks(), marks));
    covered_seq_ = std::max(covered_seq_, s->hi);
  }
  segments_ = std::make_shared<SegmentList>(std::move(loaded.segments));

  // WAL records carry their rows' ids: each must be in the dictionary.
  ASSIGN_OR_RETURN(std::vector<TypeEntry> types, series_->Types("", TypeKind::kAny));
  std::vector<uint8_t> is_metric_type(marks.max_type_id + 1, 0);
  for (const TypeEntry& t : types) {
    if (t.id < is_metric_type.size()) is_metric_type[t.id] = t.is_metric();
  }

  for (auto& [agent, sequence] : dictionary_->AgentSequences()) agents_.Stored(agent, sequence);
  // Every record still in the WAL feeds the duplicate check; those past what
  // segments hold also go back into the head.
  const std::string wal_dir = options_.data_dir + "/wal";
  wal::ReplayStats replay;
  RETURN_IF_ERROR(wal::ReplayWal(
      wal_dir, 0, {},
      [&](uint64_t seq, std::string_view payload) -> Status {
        const std::string what = "WAL record seq " + std::to_string(seq);
        ASSIGN_OR_RETURN(HeadRecord record, DecodeHeadRecord(payload, what));
        RETURN_IF_ERROR(CheckRecordIds(what, record, marks, is_metric_type));
        agents_.Stored(record.agent_id, record.sequence);
        if (seq > covered_seq_) {
          active_.insert(active_.end(), record.rows.begin(), record.rows.end());
          active_gpu_.Append(record.gpu);
        }
        return Status::Ok();
      },
      &replay));
  ASSIGN_OR_RETURN(wal_, wal::WalWriter::Open(wal_dir, options_.wal));
  if (wal_->next_seq() <= covered_seq_) {
    // New records would get seqs that segments already claim, and a later
    // replay would skip them: refuse rather than lose data.
    return FailedPreconditionError("the WAL in " + wal_dir + " continues at seq " + std::to_string(wal_->next_seq()) +
                                   " but segments hold records up to " + std::to_string(covered_seq_) +
                                   "; was wal/ deleted?");
  }
  LOG_INFO() << "embedded store " << options_.data_dir << ": " << segments_->size() << " segments, "
             << replay.records << " WAL records replayed, " << active_.size() << " rows and "
             << active_gpu_.activities.size() << " GPU activities in the head";
  return Status::Ok();
}

}  // namespace warpscope::embedded
