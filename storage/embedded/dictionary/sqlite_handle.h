// Thin RAII wrappers over the SQLite C API, returning Status instead of codes.
// A SqliteDb and its statements belong to one thread at a time: the owner
// (DictionaryStore) serializes use with its own mutex.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope::dictionary {

class SqliteStatement {
 public:
  SqliteStatement() = default;
  explicit SqliteStatement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~SqliteStatement();
  SqliteStatement(SqliteStatement&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }
  SqliteStatement& operator=(SqliteStatement&& other) noexcept;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  // Readies the statement for new bindings; call before every use.
  void Reset();
  // Parameters are 1-based, as in SQLite. Bind failures are reported by the next Step.
  void BindInt(int index, int64_t value);
  // Always binds a BLOB (never NULL, also for an empty view), so byte strings
  // compare equal to what was stored whatever their encoding.
  void BindBlob(int index, std::string_view value);
  // true: a row is ready; false: done.
  StatusOr<bool> Step();
  // Runs a statement that returns no rows.
  Status StepDone();
  int64_t ColumnInt(int index) const { return sqlite3_column_int64(stmt_, index); }
  std::string_view ColumnBlob(int index) const;

 private:
  Status Error(int rc, const char* what) const;

  sqlite3_stmt* stmt_ = nullptr;
  int bind_rc_ = SQLITE_OK;
};

class SqliteDb {
 public:
  // Opens (creating if absent) the database file at `path` in serialized-free
  // (NOMUTEX) mode: callers serialize.
  static StatusOr<std::unique_ptr<SqliteDb>> Open(const std::string& path);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  Status Exec(const std::string& sql);
  // Runs a single-row, single-column query ("PRAGMA journal_mode=WAL") and returns the text.
  StatusOr<std::string> QueryText(const std::string& sql);
  StatusOr<SqliteStatement> Prepare(std::string_view sql);
  sqlite3* raw() const { return db_; }

 private:
  explicit SqliteDb(sqlite3* db) : db_(db) {}
  Status Error(int rc, const std::string& what) const;

  sqlite3* db_;
};

}  // namespace warpscope::dictionary
