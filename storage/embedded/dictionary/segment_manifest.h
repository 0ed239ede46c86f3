// SegmentManifest: the embedded store's record of the segments it has
// published and of the time ranges it knows to be lost, in dictionary.sqlite
// (schema version 3: tables segment_manifest and data_gaps).
//
// Segment file names alone say which files are live (segment_catalog.h), but
// not which ones should be there: a deleted segment would go unnoticed. The
// manifest lists every published segment's WAL range and time range. It is
// written after the file is in place and before a file is deleted, so it
// never claims less than what must exist:
//   flush       segment renamed into place -> entry added
//   compaction  output renamed into place -> inputs' entries replaced by the
//               output's (one transaction) -> input files deleted
//   retention   entries removed -> files deleted
// A crash between the two steps leaves a live file the manifest does not list
// (added back at the next open) or an entry whose range a live file covers
// (a compaction output; dropped at the next open), never an entry without
// its rows. At open, an entry no live file covers is a missing segment.
//
// Gaps: time ranges the store serves without (a missing segment, unreadable
// write-ahead log records), recorded when the store is started past them
// with `repair`, so every later answer overlapping them says so.
//
// Threading: uses the writer's connection; DictionaryStore serializes calls
// with its write mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "storage/embedded/dictionary/sqlite_handle.h"

namespace warpscope::dictionary {

// One published segment.
struct ManifestEntry {
  uint64_t lo = 0;  // WAL seq range, inclusive (the file's name)
  uint64_t hi = 0;
  int64_t min_time = 0;  // of everything in the file, inclusive
  int64_t max_time = 0;
  friend bool operator==(const ManifestEntry&, const ManifestEntry&) = default;
};

// A time range [from_ns, to_ns) answers are known to miss, and why.
struct RecordedGap {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  std::string reason;
  friend bool operator==(const RecordedGap&, const RecordedGap&) = default;
};

// What one step changes, applied in one transaction.
struct ManifestChange {
  std::vector<ManifestEntry> removed;  // matched by (lo, hi)
  std::vector<ManifestEntry> added;
  std::vector<RecordedGap> gaps_added;
  // Gaps ending at or before this time are forgotten (retention).
  std::optional<int64_t> drop_gaps_before;
  bool empty() const { return removed.empty() && added.empty() && gaps_added.empty() && !drop_gaps_before; }
};

class SegmentManifest {
 public:
  // `db` (the writer's connection, schema version 3) outlives this.
  static StatusOr<std::unique_ptr<SegmentManifest>> Open(SqliteDb* db);

  // Ascending (lo, hi).
  StatusOr<std::vector<ManifestEntry>> Entries();
  // In the order they were recorded.
  StatusOr<std::vector<RecordedGap>> Gaps();
  Status Apply(const ManifestChange& change);

 private:
  explicit SegmentManifest(SqliteDb* db) : db_(db) {}

  SqliteDb* const db_;
  SqliteStatement begin_, commit_, rollback_, entries_, gaps_, insert_, delete_, insert_gap_, drop_gaps_;
};

}  // namespace warpscope::dictionary
