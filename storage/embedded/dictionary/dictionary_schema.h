// The SQLite schema of the embedded store's dictionaries and its version check.
//
// Format identity: PRAGMA application_id = kDictionaryApplicationId (the magic)
// and meta.schema_version = kDictionarySchemaVersion. A database written by a
// newer version is refused (FailedPrecondition), never half-read; a later
// version that changes tables or content_key.h encodings bumps the version and
// migrates older files forward, with a test that opens the old form.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "storage/embedded/dictionary/sqlite_handle.h"

namespace warpscope::dictionary {

// Versions:
//   1  the tables of dictionary_schema.cc
//   2  the same tables; profile_types may also hold metric types (period_nanos
//      kMetricTypePeriodNanos, dictionary_types.h), which a version-1 server
//      would take for profile types. A version-1 file is migrated by raising
//      its version (it holds no metric types).
//   3  meta.store_id, the dictionary's random identity (dictionary_marks.h),
//      and the embedded store's segment_manifest and data_gaps tables
//      (segment_manifest.h). Older files are migrated by adding them (an
//      empty manifest: the store lists its segments at the next open). A
//      version-2 server must not open a version-3 file: it would change
//      segments without updating the manifest.
inline constexpr int64_t kDictionarySchemaVersion = 3;
inline constexpr int32_t kDictionaryApplicationId = 0x57534443;  // "WSDC"

// Sets WAL journaling and synchronous=FULL on `db` (per-connection settings):
// a COMMIT returns only after the WAL is fsync'ed, so a committed batch
// survives kill -9 and power loss.
Status ConfigureDurability(SqliteDb& db);

// Creates the schema in an empty database (unless `create` is false:
// FailedPrecondition "holds no dictionary" then, and nothing is written), or
// checks the version of an existing one and migrates an older one forward.
// Run once, on the writer connection, before anything else.
Status CreateOrCheckSchema(SqliteDb& db, bool create = true);

// meta.store_id (schema version 3).
StatusOr<uint64_t> ReadStoreId(SqliteDb& db);

}  // namespace warpscope::dictionary
