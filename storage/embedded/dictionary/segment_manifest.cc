#include "storage/embedded/dictionary/segment_manifest.h"

namespace warpscope::dictionary {

StatusOr<std::unique_ptr<SegmentManifest>> SegmentManifest::Open(SqliteDb* db) {
  std::unique_ptr<SegmentManifest> manifest(new SegmentManifest(db));
  struct {
    SqliteStatement* stmt;
    const char* sql;
  } const statements[] = {
      {&manifest->begin_, "BEGIN IMMEDIATE"},
      {&manifest->commit_, "COMMIT"},
      {&manifest->rollback_, "ROLLBACK"},
      {&manifest->entries_, "SELECT lo, hi, min_time, max_time FROM segment_manifest ORDER BY lo, hi"},
      {&manifest->gaps_, "SELECT from_ns, to_ns, reason FROM data_gaps ORDER BY id"},
      {&manifest->insert_,
       "INSERT OR REPLACE INTO segment_manifest(lo, hi, min_time, max_time) VALUES(?, ?, ?, ?)"},
      {&manifest->delete_, "DELETE FROM segment_manifest WHERE lo = ? AND hi = ?"},
      {&manifest->insert_gap_, "INSERT INTO data_gaps(from_ns, to_ns, reason) VALUES(?, ?, ?)"},
      {&manifest->drop_gaps_, "DELETE FROM data_gaps WHERE to_ns <= ?"},
  };
  for (const auto& s : statements) {
    ASSIGN_OR_RETURN(*s.stmt, db->Prepare(s.sql));
  }
  return manifest;
}

StatusOr<std::vector<ManifestEntry>> SegmentManifest::Entries() {
  std::vector<ManifestEntry> out;
  entries_.Reset();
  while (true) {
    ASSIGN_OR_RETURN(bool row, entries_.Step());
    if (!row) break;
    out.push_back(ManifestEntry{.lo = static_cast<uint64_t>(entries_.ColumnInt(0)),
                                .hi = static_cast<uint64_t>(entries_.ColumnInt(1)),
                                .min_time = entries_.ColumnInt(2),
                                .max_time = entries_.ColumnInt(3)});
  }
  entries_.Reset();
  return out;
}

StatusOr<std::vector<RecordedGap>> SegmentManifest::Gaps() {
  std::vector<RecordedGap> out;
  gaps_.Reset();
  while (true) {
    ASSIGN_OR_RETURN(bool row, gaps_.Step());
    if (!row) break;
    out.push_back(RecordedGap{
        .from_ns = gaps_.ColumnInt(0), .to_ns = gaps_.ColumnInt(1), .reason = std::string(gaps_.ColumnBlob(2))});
  }
  gaps_.Reset();
  return out;
}

Status SegmentManifest::Apply(const ManifestChange& change) {
  if (change.empty()) return Status::Ok();
  begin_.Reset();
  RETURN_IF_ERROR(begin_.StepDone());
  auto body = [&]() -> Status {
    for (const ManifestEntry& e : change.removed) {
      delete_.Reset();
      delete_.BindInt(1, static_cast<int64_t>(e.lo));
      delete_.BindInt(2, static_cast<int64_t>(e.hi));
      RETURN_IF_ERROR(delete_.StepDone());
    }
    for (const ManifestEntry& e : change.added) {
      insert_.Reset();
      insert_.BindInt(1, static_cast<int64_t>(e.lo));
      insert_.BindInt(2, static_cast<int64_t>(e.hi));
      insert_.BindInt(3, e.min_time);
      insert_.BindInt(4, e.max_time);
      RETURN_IF_ERROR(insert_.StepDone());
    }
    if (change.drop_gaps_before) {
      drop_gaps_.Reset();
      drop_gaps_.BindInt(1, *change.drop_gaps_before);
      RETURN_IF_ERROR(drop_gaps_.StepDone());
    }
    for (const RecordedGap& g : change.gaps_added) {
      insert_gap_.Reset();
      insert_gap_.BindInt(1, g.from_ns);
      insert_gap_.BindInt(2, g.to_ns);
      insert_gap_.BindBlob(3, g.reason);
      RETURN_IF_ERROR(insert_gap_.StepDone());
    }
    commit_.Reset();
    return commit_.StepDone();
  };
  Status status = body();
  if (!status.ok()) {
    rollback_.Reset();
    (void)rollback_.StepDone();
    return status.WithContext("updating the segment manifest");
  }
  return Status::Ok();
}

}  // namespace warpscope::dictionary
