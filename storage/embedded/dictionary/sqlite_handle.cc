#include "storage/embedded/dictionary/sqlite_handle.h"

#include <cerrno>
#include <cstring>

namespace warpscope::dictionary {
namespace {

Status FromSqlite(sqlite3* db, int rc, const std::string& what) {
  const char* msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string text = what + ": " + msg + " (sqlite " + std::to_string(rc) + ")";
  // A full disk or a file size limit often surfaces as a plain I/O error.
  if ((rc & 0xff) == SQLITE_IOERR && db != nullptr) {
    const int err = sqlite3_system_errno(db);
    if (err != 0) text += " (" + std::string(strerror(err)) + ")";
    if (err == ENOSPC || err == EFBIG || err == EDQUOT) return ResourceExhaustedError(text);
  }
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return UnavailableError(text);
    case SQLITE_FULL:
    case SQLITE_NOMEM:
    case SQLITE_TOOBIG:
      return ResourceExhaustedError(text);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return DataLossError(text);
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
      return PermissionDeniedError(text);
    default:
      return InternalError(text);
  }
}

}  // namespace

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

SqliteStatement& SqliteStatement::operator=(SqliteStatement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = other.stmt_;
    bind_rc_ = other.bind_rc_;
    other.stmt_ = nullptr;
  }
  return *this;
}

void SqliteStatement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_rc_ = SQLITE_OK;
}

void SqliteStatement::BindInt(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

void SqliteStatement::BindBlob(int index, std::string_view value) {
  // A null pointer would bind NULL; an empty string must stay a zero-length blob.
  const char* data = value.data() != nullptr ? value.data() : "";
  int rc = sqlite3_bind_blob64(stmt_, index, data, value.size(), SQLITE_TRANSIENT);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

Status SqliteStatement::Error(int rc, const char* what) const {
  std::string sql = sqlite3_sql(stmt_) != nullptr ? sqlite3_sql(stmt_) : "";
  return FromSqlite(sqlite3_db_handle(stmt_), rc, std::string(what) + " [" + sql + "]");
}

StatusOr<bool> SqliteStatement::Step() {
  if (bind_rc_ != SQLITE_OK) return Error(bind_rc_, "bind");
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Status status = Error(rc, "step");
  sqlite3_reset(stmt_);
  return status;
}

Status SqliteStatement::StepDone() {
  ASSIGN_OR_RETURN(bool row, Step());
  if (row) return InternalError("statement returned a row where none was expected");
  return Status::Ok();
}

std::string_view SqliteStatement::ColumnBlob(int index) const {
  const void* data = sqlite3_column_blob(stmt_, index);
  int size = sqlite3_column_bytes(stmt_, index);
  if (data == nullptr) return {};
  return {static_cast<const char*>(data), static_cast<size_t>(size)};
}

StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status status = FromSqlite(db, rc, "opening " + path);
    sqlite3_close_v2(db);
    return status;
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<SqliteDb>(new SqliteDb(db));
}

SqliteDb::~SqliteDb() { sqlite3_close_v2(db_); }

Status SqliteDb::Error(int rc, const std::string& what) const { return FromSqlite(db_, rc, what); }

Status SqliteDb::Exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) return Error(rc, "exec [" + sql + "]");
  return Status::Ok();
}

StatusOr<std::string> SqliteDb::QueryText(const std::string& sql) {
  ASSIGN_OR_RETURN(SqliteStatement stmt, Prepare(sql));
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return InternalError("no row from [" + sql + "]");
  std::string_view text = stmt.ColumnBlob(0);
  return std::string(text);
}

StatusOr<SqliteStatement> SqliteDb::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return Error(rc, "prepare [" + std::string(sql) + "]");
  return SqliteStatement(stmt);
}

}  // namespace warpscope::dictionary
