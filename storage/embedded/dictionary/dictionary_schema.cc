#include "storage/embedded/dictionary/dictionary_schema.h"

#include <random>
#include <string>

namespace warpscope::dictionary {
namespace {

// Ids are dense from 1 (0 means "none", e.g. a location without mapping) and
// never reused: rows are written once and never deleted. Each content table
// has a UNIQUE constraint over its whole content, so SQLite itself refuses a
// duplicate even if the in-memory cache were wrong; see dictionary_store.h
// for why content and not a hash. Unsigned 64-bit values (addresses,
// sequences) are stored bit-cast to SQLite's signed INTEGER.
constexpr const char* kCreateSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE strings(id INTEGER PRIMARY KEY, value BLOB NOT NULL UNIQUE);
CREATE TABLE mappings(id INTEGER PRIMARY KEY, filename_id INTEGER NOT NULL,
  build_id_id INTEGER NOT NULL, UNIQUE(filename_id, build_id_id));
CREATE TABLE functions(id INTEGER PRIMARY KEY, name_id INTEGER NOT NULL,
  system_name_id INTEGER NOT NULL, filename_id INTEGER NOT NULL,
  UNIQUE(name_id, system_name_id, filename_id));
-- lines: varints (function_id, zigzag(line)) per line, innermost first.
CREATE TABLE locations(id INTEGER PRIMARY KEY, mapping_id INTEGER NOT NULL,
  address INTEGER NOT NULL, kind INTEGER NOT NULL, lines BLOB NOT NULL,
  UNIQUE(mapping_id, address, kind, lines));
-- location_ids: varint location ids, leaf first.
CREATE TABLE stacks(id INTEGER PRIMARY KEY, location_ids BLOB NOT NULL UNIQUE);
-- labels: varint (key_id, value_id) pairs sorted by key string.
CREATE TABLE label_sets(id INTEGER PRIMARY KEY, labels BLOB NOT NULL UNIQUE);
-- The inverted index behind SeriesMatching, LabelNames and LabelValues.
CREATE TABLE label_index(key_id INTEGER NOT NULL, value_id INTEGER NOT NULL,
  label_set_id INTEGER NOT NULL, PRIMARY KEY(key_id, value_id, label_set_id)) WITHOUT ROWID;
-- Also metric types: period_nanos -1, sample_unit_id the metric's unit (schema version 2).
CREATE TABLE profile_types(id INTEGER PRIMARY KEY, name_id INTEGER NOT NULL,
  sample_unit_id INTEGER NOT NULL, period_nanos INTEGER NOT NULL,
  UNIQUE(name_id, sample_unit_id, period_nanos));
CREATE TABLE agent_sequences(agent_id BLOB PRIMARY KEY, last_sequence INTEGER NOT NULL) WITHOUT ROWID;
)sql";

// Schema version 3's additions (dictionary_schema.h), also run to migrate an
// older file. The embedded store's segments as published (WAL seq range,
// inclusive, and time range of their rows, inclusive), and the time ranges
// it serves without ([from_ns, to_ns)).
constexpr const char* kCreateVersion3 = R"sql(
CREATE TABLE IF NOT EXISTS segment_manifest(lo INTEGER NOT NULL, hi INTEGER NOT NULL, min_time INTEGER NOT NULL,
  max_time INTEGER NOT NULL, PRIMARY KEY(lo, hi)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS data_gaps(id INTEGER PRIMARY KEY, from_ns INTEGER NOT NULL, to_ns INTEGER NOT NULL,
  reason TEXT NOT NULL);
)sql";

// A new dictionary's identity: random, never 0 (0 means "unknown" in a
// segment footer), positive so it reads the same through SQLite's INTEGER.
uint64_t NewStoreId() {
  std::random_device random;
  uint64_t id = 0;
  while (id == 0) id = ((static_cast<uint64_t>(random()) << 32) ^ random()) & INT64_MAX;
  return id;
}

Status InsertStoreId(SqliteDb& db) {
  return db.Exec("INSERT OR IGNORE INTO meta(key, value) VALUES('store_id', " + std::to_string(NewStoreId()) + ")");
}

}  // namespace

Status ConfigureDurability(SqliteDb& db) {
  ASSIGN_OR_RETURN(std::string mode, db.QueryText("PRAGMA journal_mode=WAL"));
  if (mode != "wal") return FailedPreconditionError("SQLite refused WAL journal mode (got " + mode + ")");
  RETURN_IF_ERROR(db.Exec("PRAGMA synchronous=FULL"));
  // The reader connection may meet a checkpoint in progress; wait rather than fail.
  RETURN_IF_ERROR(db.Exec("PRAGMA busy_timeout=5000"));
  return Status::Ok();
}

Status CreateOrCheckSchema(SqliteDb& db, bool create) {
  RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  auto check = [&]() -> Status {
    ASSIGN_OR_RETURN(std::string app_id_text, db.QueryText("PRAGMA application_id"));
    int64_t app_id = std::stoll(app_id_text);
    ASSIGN_OR_RETURN(SqliteStatement has_meta,
                     db.Prepare("SELECT count(*) FROM sqlite_schema WHERE name='meta' AND type='table'"));
    ASSIGN_OR_RETURN(bool row, has_meta.Step());
    bool meta_exists = row && has_meta.ColumnInt(0) > 0;
    if (!meta_exists) {
      ASSIGN_OR_RETURN(SqliteStatement any, db.Prepare("SELECT count(*) FROM sqlite_schema"));
      ASSIGN_OR_RETURN(bool any_row, any.Step());
      if ((any_row && any.ColumnInt(0) > 0) || app_id != 0) {
        return FailedPreconditionError("not a warpscope dictionary database (tables present, no meta)");
      }
      if (!create) return FailedPreconditionError("the database holds no dictionary (it is empty)");
      RETURN_IF_ERROR(db.Exec(kCreateSchema));
      RETURN_IF_ERROR(db.Exec(kCreateVersion3));
      RETURN_IF_ERROR(InsertStoreId(db));
      RETURN_IF_ERROR(db.Exec("PRAGMA application_id=" + std::to_string(kDictionaryApplicationId)));
      RETURN_IF_ERROR(db.Exec("INSERT INTO meta(key, value) VALUES('schema_version', " +
                              std::to_string(kDictionarySchemaVersion) + ")"));
      return Status::Ok();
    }
    if (app_id != kDictionaryApplicationId) {
      return FailedPreconditionError("not a warpscope dictionary database (application_id " + std::to_string(app_id) +
                                     ")");
    }
    ASSIGN_OR_RETURN(SqliteStatement version, db.Prepare("SELECT value FROM meta WHERE key='schema_version'"));
    ASSIGN_OR_RETURN(bool has_version, version.Step());
    if (!has_version) return DataLossError("dictionary database has no schema_version in meta");
    int64_t found = version.ColumnInt(0);
    if (found > kDictionarySchemaVersion) {
      return FailedPreconditionError("dictionary schema_version " + std::to_string(found) +
                                     " is newer than this server's " + std::to_string(kDictionarySchemaVersion) +
                                     "; upgrade the server");
    }
    if (found < 1) return DataLossError("dictionary schema_version " + std::to_string(found) + " is invalid");
    if (found < kDictionarySchemaVersion) {
      // 1 -> 2 changes no table; 2 -> 3 adds (see dictionary_schema.h).
      if (found < 3) {
        RETURN_IF_ERROR(db.Exec(kCreateVersion3));
        RETURN_IF_ERROR(InsertStoreId(db));
      }
      RETURN_IF_ERROR(db.Exec("UPDATE meta SET value = " + std::to_string(kDictionarySchemaVersion) +
                              " WHERE key = 'schema_version'"));
    }
    return Status::Ok();
  };
  Status status = check();
  if (!status.ok()) {
    (void)db.Exec("ROLLBACK");
    return status;
  }
  return db.Exec("COMMIT");
}

StatusOr<uint64_t> ReadStoreId(SqliteDb& db) {
  ASSIGN_OR_RETURN(SqliteStatement stmt, db.Prepare("SELECT value FROM meta WHERE key = 'store_id'"));
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row || stmt.ColumnInt(0) <= 0) return DataLossError("dictionary database has no store_id in meta");
  return static_cast<uint64_t>(stmt.ColumnInt(0));
}

}  // namespace warpscope::dictionary
