// ClickHouseClient: ClickHouse's HTTP interface over libcurl, one statement
// per request (docs/design/clickhouse.md §2).
//
// * SELECTs and DDL go as the POST body; INSERT data (RowBinary) goes as the
//   body with the statement in the URL; id lists go as external tables
//   (multipart form, RowBinary), never as SQL literals (max_query_size).
// * Credentials travel in X-ClickHouse-User / X-ClickHouse-Key headers, never
//   in URLs (which end up in logs).
// * Errors: ClickHouse's "Code: N" (body, or X-ClickHouse-Exception-Code on
//   newer servers) and the HTTP status map to a Status (StatusForClickHouseError);
//   anything that means "ClickHouse cannot take this now" - refused, reset,
//   timeout, memory / too many parts / too many queries - is Unavailable, which
//   the server answers with 503 and agents retry.
// * Execute retries Unavailable with exponential backoff. Only idempotent
//   statements may go through it: SELECTs, DDL, dictionary inserts (replacing
//   tables) and agent_sequences; fact inserts check before each retry
//   (ingest_writer.h).
//
// Threading: every method may be called from any thread. Easy handles (each
// keeping its keep-alive connection) live in a small pool: a call takes one,
// or makes one, and gives it back.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "storage/clickhouse/clickhouse_url.h"

namespace warpscope::clickhouse {

// A table sent along with a query (`WHERE id IN <name>`), in RowBinary.
struct ExternalTable {
  std::string name;       // [a-z_]+
  std::string structure;  // "id UInt64"
  std::string data;       // RowBinary rows
};

struct ClickHouseRequest {
  std::string sql;   // one statement, FORMAT included
  std::string data;  // INSERT ... FORMAT RowBinary: the rows; empty otherwise
  std::vector<ExternalTable> tables;
  std::vector<std::pair<std::string, std::string>> settings;  // URL parameters
  bool in_database = true;  // ?database=<the endpoint's database>; off for CREATE DATABASE
  // A SELECT: sent with wait_end_of_query=1 (the HTTP status is final) and
  // max_execution_time from the client's timeout (or the deadline).
  bool read = false;
  // The caller's deadline: no attempt starts after it (DeadlineExceeded),
  // and each attempt's timeout ends at it.
  std::optional<std::chrono::steady_clock::time_point> deadline;

  static ClickHouseRequest Read(std::string sql) {
    ClickHouseRequest r;
    r.sql = std::move(sql);
    r.read = true;
    return r;
  }
  static ClickHouseRequest Statement(std::string sql) {
    ClickHouseRequest r;
    r.sql = std::move(sql);
    return r;
  }
  static ClickHouseRequest Insert(std::string sql, std::string data) {
    ClickHouseRequest r;
    r.sql = std::move(sql);
    r.data = std::move(data);
    return r;
  }
  ClickHouseRequest&& With(ExternalTable table) && {
    tables.push_back(std::move(table));
    return std::move(*this);
  }
  ClickHouseRequest&& Until(std::optional<std::chrono::steady_clock::time_point> d) && {
    deadline = d;
    return std::move(*this);
  }
  ClickHouseRequest&& OutsideDatabase() && {
    in_database = false;
    return std::move(*this);
  }
};

struct RetryPolicy {
  int attempts = 3;
  int first_backoff_ms = 100;  // then x4 per attempt
};

struct ClickHouseClientOptions {
  std::string user;  // "" -> "default"
  std::string password;
  // PEM file of the CA(s) to verify an https server against; "" uses the
  // system's CA store (/etc/ssl/certs).
  std::string ca_file;
  int timeout_ms = 30'000;
  size_t max_idle_handles = 16;
};

// The Status of a failed request: `http_status` 0 when no answer came
// (then `transport_error` says why), `code` ClickHouse's error code (0 when
// none was found), `message` its text.
Status StatusForClickHouseError(long http_status, int code, const std::string& message,
                                const std::string& transport_error, const std::string& where);
// The N of "Code: N" in an error body, 0 when there is none.
int ParseClickHouseErrorCode(const std::string& body);

class ClickHouseClient {
 public:
  ClickHouseClient(ClickHouseEndpoint endpoint, ClickHouseClientOptions options);
  ~ClickHouseClient();
  ClickHouseClient(const ClickHouseClient&) = delete;
  ClickHouseClient& operator=(const ClickHouseClient&) = delete;

  // One attempt. On failure *clickhouse_code (if given) is ClickHouse's error
  // code, 0 when the failure carried none.
  StatusOr<std::string> Send(const ClickHouseRequest& request, int* clickhouse_code = nullptr);
  // Send, retrying Unavailable answers per `retry`.
  StatusOr<std::string> Execute(const ClickHouseRequest& request, const RetryPolicy& retry = {});

  const ClickHouseEndpoint& endpoint() const { return endpoint_; }

 private:
  void* TakeHandle();  // a CURL*
  void ReturnHandle(void* handle);

  const ClickHouseEndpoint endpoint_;
  const ClickHouseClientOptions options_;
  std::mutex pool_mu_;
  std::vector<void*> idle_;  // CURL* handles, each with its live connection
};

}  // namespace warpscope::clickhouse
